// EnumNames: an enum's values and their spellings in one table, read both ways, so a
// name and its parser cannot drift apart (a switch to print and an if-chain to parse
// did, twice).
//
//   constexpr EnumName<Color> kColors[] = {{Color::kRed, "red"}, {Color::kBlue, "blue"}};
//   NameIn(kColors, Color::kRed)    -> "red"
//   ValueIn(kColors, "blue")        -> Color::kBlue;  ValueIn(kColors, "pink") -> nullopt
//   NamesIn(kColors)                -> {"red", "blue"}, for "expected one of …" messages
//
// Thread-safety: pure functions over constant tables.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tpufleet {

template <typename E>
struct EnumName {
  E value;
  std::string_view name;
};

/// The spelling of `value`, or `otherwise` when the table lacks it.
template <typename E, size_t N>
constexpr std::string_view NameIn(const EnumName<E> (&table)[N], E value,
                                  std::string_view otherwise = "?") {
  for (const EnumName<E>& row : table) {
    if (row.value == value) {
      return row.name;
    }
  }
  return otherwise;
}

/// The value spelled `name` (exactly), or nullopt.
template <typename E, size_t N>
constexpr std::optional<E> ValueIn(const EnumName<E> (&table)[N], std::string_view name) {
  for (const EnumName<E>& row : table) {
    if (row.name == name) {
      return row.value;
    }
  }
  return std::nullopt;
}

/// Every spelling, in the table's order.
template <typename E, size_t N>
std::vector<std::string> NamesIn(const EnumName<E> (&table)[N]) {
  std::vector<std::string> names;
  for (const EnumName<E>& row : table) {
    names.emplace_back(row.name);
  }
  return names;
}

}  // namespace tpufleet
