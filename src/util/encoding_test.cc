#include "util/encoding.h"
#include "util/fingerprint.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "util/testing/text_cases.h"

namespace tpufleet {
namespace {

using Fields = std::map<std::string, std::string>;

TEST(HexEncode, WritesADigestAsSha256sumDoes) {
  EXPECT_EQ(HexEncode(Sha256("abc")),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(HexEncode(std::string("\x00\xff\x10", 3)), "00ff10");
  EXPECT_EQ(HexEncode(""), "");
}

TEST(Sha256, MatchesTheStandardVectors) {
  // FIPS 180-2's "abc", and the empty input.
  EXPECT_EQ(Base64Encode(Sha256("abc")), "ungWv48Bz+pBQUDeXa4iI7ADYaOWF3qctBD/YfIAFa0=");
  EXPECT_EQ(Base64Encode(Sha256("")), "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=");
}

TEST(Sha256Fingerprint, IsOpenSshsFormatAndReadBack) {
  // ssh-keygen -lf writes the same digest this way: "SHA256:" and unpadded base64.
  std::string f = Sha256Fingerprint("abc");
  EXPECT_EQ(f, "SHA256:ungWv48Bz+pBQUDeXa4iI7ADYaOWF3qctBD/YfIAFa0");
  EXPECT_TRUE(IsSha256Fingerprint(f));
  EXPECT_FALSE(IsSha256Fingerprint(f + "A"));
  EXPECT_FALSE(IsSha256Fingerprint(f.substr(0, f.size() - 1)));
  EXPECT_FALSE(IsSha256Fingerprint("sha256:" + f.substr(7)));
  EXPECT_FALSE(IsSha256Fingerprint("SHA256:" + std::string(43, '!')));
  EXPECT_FALSE(IsSha256Fingerprint(""));
}

TEST(Base64, EncodesWithPadding) {
  testing::ExpectEachGives(Base64Encode, {{"", ""}, {"f", "Zg=="}, {"fo", "Zm8="}, {"foo", "Zm9v"},
                                          {"foob", "Zm9vYg=="}, {"\xfb\xff", "+/8="}});
}

TEST(Base64, DecodesWhatItEncodes) {
  for (const std::string s : {"f", "fo", "foo", "foob", "fooba", "foobar", "\xff\xfe\xfd\x00"}) {
    EXPECT_EQ(Base64Decode(Base64Encode(s)).value(), s);
  }
}

TEST(Base64, DecodeIsStrict) {
  // What OpenSSH writes and nothing else: a key pasted cut short must not pass.
  EXPECT_FALSE(Base64Decode("").ok());
  EXPECT_FALSE(Base64Decode("Zm9").ok());   // length not a multiple of four
  EXPECT_FALSE(Base64Decode("Z===").ok());  // three '='
  EXPECT_FALSE(Base64Decode("====").ok());
  EXPECT_FALSE(Base64Decode("Zg=A").ok());  // '=' before the end
  EXPECT_FALSE(Base64Decode("-_8=").ok());  // base64url digits
  EXPECT_FALSE(Base64Decode("Zm 9").ok());
  EXPECT_EQ(Base64Decode("Zm9vYg==").status().code(), StatusCode::kOk);
  EXPECT_EQ(Base64Decode("Zm 9").status().code(), StatusCode::kInvalidArgument);
}

TEST(Base64Url, RoundTripsWithoutPadding) {
  for (const std::string s : {"", "f", "fo", "foo", "foob", "\xff\xfe\xfd"}) {
    std::string encoded = Base64UrlEncode(s);
    EXPECT_EQ(encoded.find_first_of("+/="), std::string::npos) << encoded;
    EXPECT_EQ(Base64UrlDecode(encoded).value(), s);
  }
  EXPECT_EQ(Base64UrlEncode("\xfb\xff"), "-_8");
}

TEST(Base64Url, DecodeToleratesPaddingAndTheStandardAlphabet) {
  EXPECT_EQ(Base64UrlDecode("Zm9v").value(), "foo");
  EXPECT_EQ(Base64UrlDecode("Zm9vYg==").value(), "foob");
  EXPECT_EQ(Base64UrlDecode("+/8").value(), "\xfb\xff");
  EXPECT_EQ(Base64UrlDecode("Zm9v=anything").value(), "foo");  // stops at padding
  EXPECT_FALSE(Base64UrlDecode("Zm 9v").ok());
  EXPECT_EQ(Base64UrlDecode("Zm.9v").status().code(), StatusCode::kInvalidArgument);
}

TEST(UrlEscape, KeepsUnreservedAndEscapesTheRest) {
  EXPECT_EQ(UrlEscape("abcXYZ019-_.~"), "abcXYZ019-_.~");
  EXPECT_EQ(UrlEscape("a b/c?d=e&f"), "a%20b%2Fc%3Fd%3De%26f");
  EXPECT_EQ(UrlEscape("\xff"), "%FF");
}

TEST(PercentDecode, DecodesEscapesOfEitherCase) {
  EXPECT_EQ(PercentDecode("a%20b%2fc%2Fd", false), "a b/c/d");
  EXPECT_EQ(PercentDecode("%FF", false), "\xff");
  EXPECT_EQ(PercentDecode(UrlEscape("x y/z?&=\x01"), false), "x y/z?&=\x01");
}

TEST(PercentDecode, LeavesABrokenEscapeAlone) {
  EXPECT_EQ(PercentDecode("100%", false), "100%");
  EXPECT_EQ(PercentDecode("%4", false), "%4");
  EXPECT_EQ(PercentDecode("%zz%4g", false), "%zz%4g");
}

TEST(PercentDecode, PlusIsASpaceOnlyWhenAsked) {
  EXPECT_EQ(PercentDecode("a+b%2B", true), "a b+");
  EXPECT_EQ(PercentDecode("a+b%2B", false), "a+b+");
}

TEST(FormEncode, JoinsEscapedPairs) {
  // A JWT-bearer token request body, as the OAuth2 token endpoint expects it.
  EXPECT_EQ(FormEncode({{"grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer"},
                        {"assertion", "a.b.c"}}),
            "assertion=a.b.c&grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer");
  EXPECT_EQ(FormEncode({}), "");
}

TEST(ParseQueryString, DecodesFields) {
  EXPECT_EQ(ParseQueryString("a=1&b=x+y%21&c"), (Fields{{"a", "1"}, {"b", "x y!"}, {"c", ""}}));
  EXPECT_EQ(ParseQueryString("k%20ey=v=w"), (Fields{{"k ey", "v=w"}}));
  EXPECT_EQ(ParseQueryString(""), Fields{});
}

TEST(ParseQueryString, SkipsEmptyFieldsAndTheLastRepeatWins) {
  EXPECT_EQ(ParseQueryString("&a=1&&a=2&"), (Fields{{"a", "2"}}));
}

TEST(ParseQueryFields, KeepsEveryRepeatInOrder) {
  using Pairs = std::vector<std::pair<std::string, std::string>>;
  EXPECT_EQ(ParseQueryFields("&m=a&$alt=json;enum-encoding=int&&m=b%2Cc&"),
            (Pairs{{"m", "a"}, {"$alt", "json;enum-encoding=int"}, {"m", "b,c"}}));
}

TEST(ParseQueryString, ReadsWhatFormEncodeWrites) {
  Fields fields{{"grant_type", "refresh_token"}, {"scope", "a b+c/d"}, {"empty", ""}};
  EXPECT_EQ(ParseQueryString(FormEncode(fields)), fields);
}

}  // namespace
}  // namespace tpufleet
