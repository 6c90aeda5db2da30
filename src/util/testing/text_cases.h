// Table-driven checks of a function of one text, each row named on failure:
// ExpectEachGives (Trim, ShellQuote, Base64Encode, RegionOfZone, …: {input, output}
// rows) and ExpectAcceptsOnly (CheckHostAddress, ParseDuration, …: the texts it takes
// and the texts it refuses).
//
// Include in tests only.
#pragma once

#include <gtest/gtest.h>

#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>

namespace tpufleet::testing {

/// One row: what goes in, and what must come out.
using TextCase = std::pair<std::string_view, std::string_view>;

/// Expects `f(input) == output` for every row of `cases`; `f` returns text of any kind
/// (std::string, std::string_view).
template <typename F>
void ExpectEachGives(const F& f, std::initializer_list<TextCase> cases) {
  for (const auto& [input, output] : cases) {
    SCOPED_TRACE("input \"" + std::string(input) + "\"");
    EXPECT_EQ(std::string(f(input)), output);
  }
}

/// Expects `f(text)` (a Status or a Result) to be OK for every text of `good` and not OK
/// for every text of `bad`.
template <typename F>
void ExpectAcceptsOnly(const F& f, std::initializer_list<std::string_view> good,
                       std::initializer_list<std::string_view> bad) {
  for (std::string_view text : good) {
    EXPECT_TRUE(f(text).ok()) << "refused \"" << text << "\"";
  }
  for (std::string_view text : bad) {
    EXPECT_FALSE(f(text).ok()) << "accepted \"" << text << "\"";
  }
}

}  // namespace tpufleet::testing
