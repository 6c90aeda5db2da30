#include "util/secret.h"

#include <gtest/gtest.h>

#include <set>

namespace tpufleet {
namespace {

TEST(SecretTest, TokensAreFreshAndHeaderSafe) {
  std::set<std::string> seen;
  for (int i = 0; i < 100; ++i) {
    Result<std::string> t = NewSecretToken("emu-");
    ASSERT_TRUE(t.ok());
    EXPECT_EQ(t->size(), 4u + 43u);
    EXPECT_EQ(t->rfind("emu-", 0), 0u);
    EXPECT_EQ(t->find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"),
              std::string::npos);
    EXPECT_TRUE(seen.insert(*t).second);
  }
  EXPECT_EQ(RandomBytes(0)->size(), 0u);
  EXPECT_EQ(RandomBytes(1000)->size(), 1000u);
}

TEST(SecretTest, ConstantTimeEquals) {
  EXPECT_TRUE(ConstantTimeEquals("", ""));
  EXPECT_TRUE(ConstantTimeEquals("abc", "abc"));
  EXPECT_FALSE(ConstantTimeEquals("abc", "abd"));
  EXPECT_FALSE(ConstantTimeEquals("abc", "ab"));
  EXPECT_FALSE(ConstantTimeEquals("", "a"));
  EXPECT_FALSE(ConstantTimeEquals(std::string_view("a\0b", 3), std::string_view("a\0c", 3)));
}

}  // namespace
}  // namespace tpufleet
