#include "util/secret.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <regex>
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

TEST(SecretTest, UuidsAreVersion4) {
  std::regex uuid("[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}");
  std::set<std::string> seen;
  for (int i = 0; i < 100; ++i) {
    Result<std::string> id = RandomUuid();
    ASSERT_TRUE(id.ok()) << id.status().ToString();
    EXPECT_TRUE(std::regex_match(*id, uuid)) << *id;
    EXPECT_TRUE(seen.insert(*id).second);
  }
  EXPECT_EQ(FormatUuidV4(0, 0), "00000000-0000-4000-8000-000000000000");
  EXPECT_EQ(FormatUuidV4(~0ULL, ~0ULL), "ffffffff-ffff-4fff-bfff-ffffffffffff");
}

// up's request ids came from a generator seeded once per process: a forked copy of the
// process drew the same ids as its parent. The kernel's CSPRNG has no state to copy.
TEST(Issue11, RequestIdsDifferAfterAFork) {
  ASSERT_TRUE(RandomUuid().ok());  // whatever state there is, made before the fork
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    Result<std::string> id = RandomUuid();
    std::string out = id.ok() ? *id : "";
    ssize_t n = ::write(fds[1], out.data(), out.size());
    ::_exit(n == static_cast<ssize_t>(out.size()) ? 0 : 1);
  }
  ::close(fds[1]);
  char buf[64] = {};
  ssize_t n = ::read(fds[0], buf, sizeof buf - 1);
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_GT(n, 0);
  Result<std::string> mine = RandomUuid();
  ASSERT_TRUE(mine.ok());
  EXPECT_NE(std::string(buf, static_cast<size_t>(n)), *mine);
}

}  // namespace
}  // namespace tpufleet
