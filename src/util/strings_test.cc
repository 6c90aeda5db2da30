#include "util/strings.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cmath>
#include <limits>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "util/testing/text_cases.h"

namespace tpufleet {
namespace {

using std::chrono::seconds;
using Names = std::vector<std::string>;

TEST(Split, KeepsEmptyPartsAndEnds) {
  EXPECT_EQ(Split("a,b,c", ','), (Names{"a", "b", "c"}));
  EXPECT_EQ(Split("a,,b", ','), (Names{"a", "", "b"}));
  EXPECT_EQ(Split(",a,", ','), (Names{"", "a", ""}));
  EXPECT_EQ(Split("", ','), (Names{""}));
  EXPECT_EQ(Split("no separator", ','), (Names{"no separator"}));
}

TEST(Trim, RemovesSpacesTabsAndNewlinesAtBothEnds) {
  testing::ExpectEachGives(Trim,
                           {{"  v4-32 \t\r\n", "v4-32"}, {"a b", "a b"}, {" \t\n ", ""}, {"", ""}});
}

TEST(Join, PutsTheSeparatorOnlyBetween) {
  EXPECT_EQ(Join({"a", "b", "c"}, ", "), "a, b, c");
  EXPECT_EQ(Join({"one"}, ", "), "one");
  EXPECT_EQ(Join({}, ", "), "");
}

TEST(StartsWith, ComparesThePrefix) {
  EXPECT_TRUE(StartsWith("v5litepod-8", "v5"));
  EXPECT_TRUE(StartsWith("v5", ""));
  EXPECT_FALSE(StartsWith("v5", "v5litepod"));
  EXPECT_FALSE(StartsWith("v4-8", "v5"));
}

TEST(AsciiLower, LowersOnlyAsciiLetters) {
  EXPECT_EQ(AsciiLower("WAITING_FOR_RESOURCES"), "waiting_for_resources");
  EXPECT_EQ(AsciiLower("Content-Type"), "content-type");
  EXPECT_EQ(AsciiLower("\xC3\x89t\xC3\xA9"), "\xC3\x89t\xC3\xA9");  // UTF-8 bytes kept
}

TEST(EditDistance, IsLevenshtein) {
  EXPECT_EQ(EditDistance("", ""), 0u);
  EXPECT_EQ(EditDistance("abc", ""), 3u);
  EXPECT_EQ(EditDistance("", "abc"), 3u);
  EXPECT_EQ(EditDistance("kitten", "sitting"), 3u);  // k->s, e->i, +g
  EXPECT_EQ(EditDistance("v4-33", "v4-32"), 1u);
  EXPECT_EQ(EditDistance("catlog", "catalog"), 1u);
  EXPECT_EQ(EditDistance("us-central-2b", "us-central2-b"), 2u);
  EXPECT_EQ(EditDistance("flaw", "lawn"), 2u);
}

TEST(NearestNames, NearestFirstTiesInCandidateOrder) {
  Names types = {"v2-8", "v3-8", "v4-8", "v4-32", "v5p-8"};
  // v2-8, v3-8 and v4-8 are all one edit from v7-8; max 3 keeps the first three.
  EXPECT_EQ(NearestNames("v7-8", types), (Names{"v2-8", "v3-8", "v4-8"}));
  // v4-32 is one edit away, v4-8 two (3->8, drop a 3): nearest first.
  EXPECT_EQ(NearestNames("v4-33", types), (Names{"v4-32", "v4-8"}));
  EXPECT_EQ(NearestNames("v7-8", types, 1), (Names{"v2-8"}));
}

TEST(NearestNames, IgnoresFarOffGuessesAndDeduplicates) {
  EXPECT_TRUE(NearestNames("v4", {"v6e-256", "v5litepod-16"}).empty());
  EXPECT_TRUE(NearestNames("zzzzzz", {"catalog", "estimate", "plan"}).empty());
  // A replacement of every character is never a suggestion, however short the names.
  EXPECT_TRUE(NearestNames("ab", {"cd"}).empty());
  EXPECT_EQ(NearestNames("plam", {"plan", "plan"}), (Names{"plan"}));
}

TEST(DidYouMean, FormatsOneTwoOrThreeNames) {
  EXPECT_EQ(DidYouMean("catlog", {"catalog", "estimate", "plan"}), " (did you mean catalog?)");
  EXPECT_EQ(DidYouMean("v4-9", {"v4-8", "v3-8"}), " (did you mean v4-8 or v3-8?)");
  EXPECT_EQ(DidYouMean("v7-8", {"v2-8", "v3-8", "v4-8"}), " (did you mean v2-8, v3-8 or v4-8?)");
  EXPECT_EQ(DidYouMean("xyzzy", {"catalog"}), "");
}

TEST(ParseDuration, ReadsEveryUnitAndCombinations) {
  EXPECT_EQ(ParseDuration("90s").value(), seconds(90));
  EXPECT_EQ(ParseDuration("30m").value(), seconds(30 * 60));
  EXPECT_EQ(ParseDuration("6h").value(), seconds(6 * 3600));
  EXPECT_EQ(ParseDuration("2d").value(), seconds(2 * 86400));
  EXPECT_EQ(ParseDuration("1h30m").value(), seconds(5400));
  EXPECT_EQ(ParseDuration("1d2h3m4s").value(), seconds(86400 + 7200 + 180 + 4));
  EXPECT_EQ(ParseDuration("3600").value(), seconds(3600));
  EXPECT_EQ(ParseDuration("0").value(), seconds(0));
  EXPECT_EQ(ParseDuration("0s").value(), seconds(0));
}

TEST(ParseDuration, RejectsWhatIsNotADuration) {
  for (const char* bad :
       {"", "h", "5x", "-1h", "1.5h", "1h30", " 6h", "6h ", "6 h", "6H", "+6h", "h6", "1h-30m"}) {
    Result<seconds> d = ParseDuration(bad);
    ASSERT_FALSE(d.ok()) << "'" << bad << "' parsed as " << d.value().count() << "s";
    EXPECT_EQ(d.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(d.status().message(),
              "'" + std::string(bad) +
                  "' is not a duration; expected a number with a unit, like 90s, 30m, 6h, 2d "
                  "or 1h30m");
  }
}

TEST(ParseDuration, RejectsOverflow) {
  // The limit is 2^40 seconds (about 34,800 years) in every spelling.
  testing::ExpectAcceptsOnly(ParseDuration, {"1099511627776s"},
                             {"99999999999999999999h",  // does not fit in 64 bits
                              "9999999999999999d",      // fits, but x 86400 does not
                              "99999999999999999999",   // bare, beyond 64 bits
                              "1099511627777s"});
}

// A bare negative number and a bare number beyond the limit used to parse (ParseInt
// accepted a sign; the limit was only checked with a unit).
TEST(ParseDurationRegression, BareNumbersFollowTheSameRulesAsUnits) {
  testing::ExpectAcceptsOnly(ParseDuration, {"1099511627776"},
                             {"-1", "-3600", "1099511627777",
                              // Several parts within the limit whose sum is not.
                              "1099511627776s1s"});
}

TEST(FormatDuration, ShortestExactForm) {
  EXPECT_EQ(FormatDuration(seconds(0)), "0s");
  EXPECT_EQ(FormatDuration(seconds(45)), "45s");
  EXPECT_EQ(FormatDuration(seconds(90)), "1m30s");
  EXPECT_EQ(FormatDuration(seconds(5400)), "1h30m");
  EXPECT_EQ(FormatDuration(seconds(2 * 86400)), "2d");
  EXPECT_EQ(FormatDuration(seconds(86400 + 1)), "1d1s");
}

TEST(FormatDuration, RoundTripsThroughParseDuration) {
  for (long long s : {0LL, 1LL, 59LL, 60LL, 61LL, 3599LL, 3600LL, 5400LL, 86399LL, 86400LL, 90061LL,
                      1000000LL, 1LL << 40}) {
    std::string text = FormatDuration(seconds(s));
    Result<seconds> back = ParseDuration(text);
    ASSERT_TRUE(back.ok()) << text << ": " << back.status().ToString();
    EXPECT_EQ(back->count(), s) << text;
  }
}

// `parse` (ParseInt or ParseDouble) takes each text of `good` to its value and refuses
// each of `bad`.
template <typename T>
void ExpectParses(bool (*parse)(std::string_view, T*),
                  std::initializer_list<std::pair<const char*, T>> good,
                  std::initializer_list<const char*> bad) {
  for (const auto& [text, want] : good) {
    T v{};
    EXPECT_TRUE(parse(text, &v)) << "'" << text << "'";
    EXPECT_EQ(v, want) << "'" << text << "'";
  }
  for (const char* text : bad) {
    T v{};
    EXPECT_FALSE(parse(text, &v)) << "'" << text << "' parsed as " << v;
  }
}

TEST(ParseInt, AcceptsOnlyPlainDigits) {
  ExpectParses<long long>(
      ParseInt,
      {{"0", 0}, {"42", 42}, {"007", 7},
       {"9223372036854775807", std::numeric_limits<long long>::max()}},
      {"", " 1", "1 ", "+1", "1.0", "1e3", "0x10", "12a", "a12", "9223372036854775808"});
}

// The header promised "false on a sign" but from_chars accepts a leading '-'.
TEST(ParseIntRegression, RejectsASign) {
  long long v = 5;
  EXPECT_FALSE(ParseInt("-1", &v));
  EXPECT_FALSE(ParseInt("-0", &v));
  EXPECT_EQ(v, 5);
}

TEST(ParseDouble, AcceptsFiniteDecimals) {
  ExpectParses<double>(ParseDouble,
                       {{"12", 12.0},
                        {"0.5", 0.5},
                        {"1e3", 1000.0},
                        {"2.5E-1", 0.25},
                        {"-1.5", -1.5}},  // callers check their own minimum
                       {});
}

TEST(ParseDouble, RejectsEverythingElse) {
  ExpectParses<double>(ParseDouble, {},
                       {"", " 1", "1 ", "1,5", "1.5h", "inf", "-inf", "nan", "NaN", "infinity",
                        "1e400", "0x10", "+1", "abc", "1..2"});
}

TEST(Fnv1a64, IsStable) {
  // Project numbers, instance ids and ETags are made from it: these must never change.
  EXPECT_EQ(Fnv1a64(""), 1469598103934665603ULL);
  EXPECT_EQ(Fnv1a64("a"), 4953267810257967366ULL);
  EXPECT_EQ(Fnv1a64("foobar"), 9870438755804841970ULL);
}

TEST(FormatBytes, UnitsForPeople) {
  EXPECT_EQ(FormatBytes(0), "0 bytes");
  EXPECT_EQ(FormatBytes(1023), "1023 bytes");
  EXPECT_EQ(FormatBytes(1024), "1 KiB");
  EXPECT_EQ(FormatBytes(1536), "1.5 KiB");
  EXPECT_EQ(FormatBytes(1 << 20), "1 MiB");
  EXPECT_EQ(FormatBytes(uint64_t{64} << 30), "64 GiB");
}

TEST(FormatUsd, TwoDecimalsAndThousandsSeparators) {
  EXPECT_EQ(FormatUsd(0), "$0.00");
  EXPECT_EQ(FormatUsd(0.5), "$0.50");
  EXPECT_EQ(FormatUsd(999.999), "$1,000.00");
  EXPECT_EQ(FormatUsd(1234.56), "$1,234.56");
  EXPECT_EQ(FormatUsd(515.2), "$515.20");
  EXPECT_EQ(FormatUsd(100), "$100.00");
  EXPECT_EQ(FormatUsd(123456), "$123,456.00");
  EXPECT_EQ(FormatUsd(1234567.891), "$1,234,567.89");
  EXPECT_EQ(FormatUsd(-1234.5), "-$1,234.50");
  EXPECT_EQ(FormatUsd(-0.25), "-$0.25");
}

// `estimate v4-8 --hours 1e300` aborted: "%.2f" of a large value overflowed the 64-byte
// buffer, the truncated text had no '.', and substr(npos) threw.
TEST(FormatUsdRegression, LargeAndNonFiniteValuesDoNotThrow) {
  EXPECT_EQ(FormatUsd(1e21), "$1,000,000,000,000,000,000,000.00");
  std::string huge = FormatUsd(std::numeric_limits<double>::max());
  EXPECT_EQ(huge.substr(0, 5), "$179,");
  EXPECT_EQ(huge.substr(huge.size() - 3), ".00");
  EXPECT_EQ(FormatUsd(std::numeric_limits<double>::infinity()), "$inf");
  EXPECT_EQ(FormatUsd(-std::numeric_limits<double>::infinity()), "-$inf");
  EXPECT_EQ(FormatUsd(std::nan("")), "$nan");
}

// A negative amount that rounds to zero printed as "-$0.00".
TEST(FormatUsdRegression, NoMinusOnZero) {
  EXPECT_EQ(FormatUsd(-0.001), "$0.00");
  EXPECT_EQ(FormatUsd(-0.0), "$0.00");
}

TEST(ShellQuote, PlainWordsStayBareOthersAreSingleQuoted) {
  testing::ExpectEachGives(ShellQuote, {{"hostname", "hostname"},
                                        {"/tmp/a-b_c.txt", "/tmp/a-b_c.txt"},
                                        {"", "''"}, {"FOO=1", "'FOO=1'"}, {"a b", "'a b'"},
                                        {"it's", "'it'\\''s'"}});
  EXPECT_EQ(ShellJoin({"echo", "$HOME", "a;b"}), "echo '$HOME' 'a;b'");
}

// What a real shell makes of the quoted words: each comes back byte for byte.
TEST(ShellQuote, ShellReadsTheWordsBack) {
  const std::vector<std::string> words = {"a b", "it's", "$HOME", "`id`", "x;y", "l1\nl2",
                                          "\"q\"", "\\", "*", "~", "-n", "FOO=1"};
  std::string cmd = "printf '%s\\n' " + ShellJoin(words);
  FILE* p = ::popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[256];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) {
    out.append(buf, n);
  }
  ASSERT_EQ(::pclose(p), 0);
  std::string want;
  for (const auto& w : words) {
    want += w + "\n";
  }
  EXPECT_EQ(out, want);
}

}  // namespace
}  // namespace tpufleet
