#include "emulator/hosts/ssh_keys.h"

#include <gtest/gtest.h>

namespace tpufleet::emulator::hosts {
namespace {

constexpr const char* kBlob = "AAAAC3NzaC1lZDI1NTE5AAAAIGb2c3Rmb29iYXJiYXpxdXV4cXV1eHF1dXhxdXV4";

TEST(SshKeys, ParsesGcloudStyleLines) {
  std::string text =
      std::string("alice:ssh-ed25519 ") + kBlob + " alice\n" + "bob:ssh-rsa " + kBlob + "\n";
  std::vector<SshKeyEntry> e = ParseSshKeys(text);
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(e[0].user, "alice");
  EXPECT_EQ(e[0].key, std::string("ssh-ed25519 ") + kBlob + " alice");
  EXPECT_EQ(e[1].user, "bob");
  EXPECT_EQ(e[1].key, std::string("ssh-rsa ") + kBlob);
}

TEST(SshKeys, SkipsBadUserNamesAndSaysWhy) {
  std::string text = std::string("Bob:ssh-ed25519 ") + kBlob + "\n" + "../etc:ssh-ed25519 " +
                     kBlob + "\n" + "-rf:ssh-ed25519 " + kBlob + "\n" + "a$(reboot):ssh-ed25519 " +
                     kBlob + "\n" + "averyveryveryveryveryverylongname1:ssh-ed25519 " + kBlob +
                     "\n";
  std::vector<std::string> skipped;
  EXPECT_TRUE(ParseSshKeys(text, &skipped).empty());
  ASSERT_EQ(skipped.size(), 5u);
  EXPECT_EQ(skipped[0], "line 1: bad user name \"Bob\"");
}

TEST(SshKeys, RejectsOptionsAndJunkKeys) {
  std::vector<std::string> skipped;
  std::string text = std::string("alice:command=\"rm -rf /\" ssh-ed25519 ") + kBlob + "\n" +
                     "alice:ssh-ed25519 not*base64*at*all\n" + "alice:ssh-ed25519\n" +
                     "alice ssh-ed25519 " + kBlob + "\n" + "alice:ssh-ed25519 AAAA\n";
  EXPECT_TRUE(ParseSshKeys(text, &skipped).empty());
  EXPECT_EQ(skipped.size(), 5u);
}

TEST(SshKeys, IgnoresBlankAndCommentLinesAndCleansComments) {
  std::string text = std::string("\n# a comment\n  \r\n") + "_svc-1:ssh-ed25519   " + kBlob +
                     "   a\tcomment\x01 here  \r\n";
  std::vector<SshKeyEntry> e = ParseSshKeys(text);
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].user, "_svc-1");
  EXPECT_EQ(e[0].key, std::string("ssh-ed25519 ") + kBlob + " a comment here");
}

TEST(SshKeys, UserNameRule) {
  EXPECT_TRUE(IsValidUserName("a"));
  EXPECT_TRUE(IsValidUserName("_x9-y"));
  EXPECT_TRUE(IsValidUserName(std::string(32, 'a')));
  EXPECT_FALSE(IsValidUserName(std::string(33, 'a')));
  EXPECT_FALSE(IsValidUserName(""));
  EXPECT_FALSE(IsValidUserName("9lives"));
  EXPECT_FALSE(IsValidUserName("-x"));
  EXPECT_FALSE(IsValidUserName("a.b"));
  EXPECT_FALSE(IsValidUserName("A"));
}

}  // namespace
}  // namespace tpufleet::emulator::hosts
