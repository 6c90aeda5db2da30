#include "ssh/ssh_files.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ssh/testing/temp_dir.h"
#include "util/file.h"
#include "util/strings.h"
#include "util/testing/status_printer.h"

namespace tpufleet {
namespace {

// A well-formed ed25519 key (ssh-keygen output) with a comment.
constexpr const char* kKey =
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGw6SazH8E4wAHaauG7OB3VjXkbuu9GiwOP564ZWS2Ju "
    "someone@somewhere";
constexpr const char* kKeyNoComment =
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGw6SazH8E4wAHaauG7OB3VjXkbuu9GiwOP564ZWS2Ju";

SshHostEntry Worker(std::string alias, std::string address, int port = 0) {
  SshHostEntry e;
  e.alias = std::move(alias);
  e.address = std::move(address);
  e.port = port;
  e.user = "alice";
  e.identity_file = "/home/alice/.tpufleet/ssh/id_ed25519";
  e.host_key = kKey;
  return e;
}

unsigned ModeOf(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 ? st.st_mode & 07777 : 0xffff;
}

TEST(RenderSshConfig, WritesOneBlockPerEntry) {
  SshHostEntry plain;
  plain.alias = "box";
  plain.address = "box.example.com";
  plain.known_hosts_file = "~/.ssh/known_hosts";
  Result<std::string> text =
      RenderSshConfig({Worker("trainer", "10.0.0.2", 2222), plain}, "/s/ssh/known_hosts");
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  EXPECT_EQ(*text,
            "# Written by tpufleet from its state; edits here are lost at the next change.\n"
            "\n"
            "Host trainer\n"
            "  HostName 10.0.0.2\n"
            "  Port 2222\n"
            "  User alice\n"
            "  IdentityFile /home/alice/.tpufleet/ssh/id_ed25519\n"
            "  IdentitiesOnly yes\n"
            "  UserKnownHostsFile /s/ssh/known_hosts\n"
            "  StrictHostKeyChecking yes\n"
            "  ServerAliveInterval 15\n"
            "\n"
            "Host box\n"
            "  HostName box.example.com\n"
            "  UserKnownHostsFile ~/.ssh/known_hosts\n"
            "  StrictHostKeyChecking yes\n"
            "  ServerAliveInterval 15\n");
}

TEST(RenderSshConfig, QuotesSpacesAndEscapesPercent) {
  SshHostEntry e = Worker("w0", "fd00::1");
  e.identity_file = "/Users/Jo Smith/100%/key";
  Result<std::string> text = RenderSshConfig({e}, "/state dir/known_hosts");
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  EXPECT_NE(text->find("\n  HostName fd00::1\n"), std::string::npos) << *text;
  EXPECT_NE(text->find("\n  IdentityFile \"/Users/Jo Smith/100%%/key\"\n"), std::string::npos)
      << *text;
  EXPECT_NE(text->find("\n  UserKnownHostsFile \"/state dir/known_hosts\"\n"), std::string::npos)
      << *text;
}

TEST(RenderSshConfig, RefusesHostileValues) {
  struct Case {
    const char* what;
    void (*spoil)(SshHostEntry&);
  };
  const Case cases[] = {
      {"newline in alias", [](SshHostEntry& e) { e.alias = "x\n  ProxyCommand evil"; }},
      {"space in alias", [](SshHostEntry& e) { e.alias = "x ProxyCommand"; }},
      {"option as alias", [](SshHostEntry& e) { e.alias = "-oProxyCommand=evil"; }},
      {"pattern alias", [](SshHostEntry& e) { e.alias = "*"; }},
      {"comment alias", [](SshHostEntry& e) { e.alias = "#x"; }},
      {"quote in alias", [](SshHostEntry& e) { e.alias = "a\"b"; }},
      {"empty alias", [](SshHostEntry& e) { e.alias = ""; }},
      {"address with option", [](SshHostEntry& e) { e.address = "1.2.3.4 -oProxyCommand=x"; }},
      {"address with newline", [](SshHostEntry& e) { e.address = "h\nProxyCommand x"; }},
      {"option as address", [](SshHostEntry& e) { e.address = "-oProxyCommand=x"; }},
      {"user with space", [](SshHostEntry& e) { e.user = "a b"; }},
      {"quoted user", [](SshHostEntry& e) { e.user = "\"root\""; }},
      {"user with tab", [](SshHostEntry& e) { e.user = "root\tx"; }},
      {"user with hash", [](SshHostEntry& e) { e.user = "root#"; }},
      {"identity with quote", [](SshHostEntry& e) { e.identity_file = "/a\"b"; }},
      {"identity with newline", [](SshHostEntry& e) { e.identity_file = "/a\nProxyCommand x"; }},
      {"known_hosts with backslash", [](SshHostEntry& e) { e.known_hosts_file = "/a\\b"; }},
      {"host key with newline",
       [](SshHostEntry& e) { e.host_key = std::string(kKeyNoComment) + "\n* " + kKeyNoComment; }},
      {"port out of range", [](SshHostEntry& e) { e.port = 70000; }},
  };
  for (const Case& c : cases) {
    SshHostEntry e = Worker("w0", "10.0.0.2");
    c.spoil(e);
    Result<std::string> text = RenderSshConfig({e}, "/s/known_hosts");
    EXPECT_EQ(text.status().code(), StatusCode::kInvalidArgument) << c.what;
    // Nor may the value sneak into known_hosts.
    std::string known = RenderKnownHosts({e});
    EXPECT_EQ(known.find("ProxyCommand"), std::string::npos) << c.what;
    EXPECT_EQ(known.find("\n*"), std::string::npos) << c.what;
  }
}

TEST(RenderSshConfig, RefusesADuplicateAlias) {
  Result<std::string> text =
      RenderSshConfig({Worker("w0", "10.0.0.2"), Worker("W0", "10.0.0.3")}, "/s/known_hosts");
  EXPECT_EQ(text.status().code(), StatusCode::kInvalidArgument);
}

TEST(RenderKnownHosts, OneLinePerAddressWithPortWhenNot22) {
  SshHostEntry no_key = Worker("w2", "10.0.0.9");
  no_key.host_key = "";
  std::string text =
      RenderKnownHosts({Worker("trainer", "10.0.0.2"), Worker("trainer-w0", "10.0.0.2"),
                        Worker("w1", "10.0.0.3", 22), Worker("w3", "fd00::1", 2222), no_key});
  EXPECT_EQ(text,
            "# Written by tpufleet from its state; edits here are lost at the next change.\n"
            "10.0.0.2 " +
                std::string(kKeyNoComment) +
                "\n"
                "10.0.0.3 " +
                std::string(kKeyNoComment) +
                "\n"
                "[fd00::1]:2222 " +
                std::string(kKeyNoComment) + "\n");
}

TEST(WriteSshFiles, WritesBothFilesPrivately) {
  TempDir tmp;
  std::string dir = tmp.path() + "/state/ssh";
  ASSERT_EQ(WriteSshFiles(dir, {Worker("w0", "10.0.0.2")}), Status::Ok());
  EXPECT_EQ(ModeOf(dir), 0700u);
  EXPECT_EQ(ModeOf(dir + "/config"), 0600u);
  EXPECT_EQ(ModeOf(dir + "/known_hosts"), 0600u);
  Result<std::string> config = ReadFile(dir + "/config");
  ASSERT_TRUE(config.ok());
  EXPECT_NE(config->find("  UserKnownHostsFile " + dir + "/known_hosts\n"), std::string::npos);
  Result<std::string> known = ReadFile(dir + "/known_hosts");
  ASSERT_TRUE(known.ok());
  EXPECT_NE(known->find("10.0.0.2 ssh-ed25519 "), std::string::npos);

  // A refused entry leaves the old files as they were.
  EXPECT_EQ(WriteSshFiles(dir, {Worker("bad alias", "10.0.0.5")}).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(*ReadFile(dir + "/config"), *config);
}

TEST(EnsureSshInclude, CreatesAMissingConfig) {
  TempDir tmp;
  std::string config = tmp.path() + "/home/.ssh/config";
  ASSERT_EQ(EnsureSshInclude(config, "/state/ssh/config"), Status::Ok());
  EXPECT_EQ(*ReadFile(config), "Include /state/ssh/config\n");
  EXPECT_EQ(ModeOf(config), 0600u);
  EXPECT_EQ(ModeOf(tmp.path() + "/home/.ssh"), 0700u);
}

TEST(EnsureSshInclude, PrependsOnceAndKeepsTheRest) {
  TempDir tmp;
  std::string config = tmp.path() + "/config";
  // CRLF, tabs, comments and no final newline: all kept byte for byte.
  const std::string original = "# mine\r\nHost *\n\tForwardAgent no\n\nHost dev\n  User me";
  ASSERT_EQ(WriteFileAtomic(config, original, 0644), Status::Ok());
  ASSERT_EQ(EnsureSshInclude(config, "/my state/ssh/config"), Status::Ok());
  const std::string once = "Include \"/my state/ssh/config\"\n" + original;
  EXPECT_EQ(*ReadFile(config), once);
  EXPECT_EQ(ModeOf(config), 0644u);
  ASSERT_EQ(EnsureSshInclude(config, "/my state/ssh/config"), Status::Ok());
  EXPECT_EQ(*ReadFile(config), once);
}

TEST(EnsureSshInclude, AnIncludeInsideAHostBlockDoesNotCount) {
  TempDir tmp;
  std::string config = tmp.path() + "/config";
  const std::string original = "Host dev\n  User me\nInclude /state/ssh/config\n";
  ASSERT_EQ(WriteFileAtomic(config, original, 0600), Status::Ok());
  ASSERT_EQ(EnsureSshInclude(config, "/state/ssh/config"), Status::Ok());
  EXPECT_EQ(*ReadFile(config), "Include /state/ssh/config\n" + original);
}

TEST(EnsureSshInclude, WritesThroughASymlink) {
  TempDir tmp;
  std::string target = tmp.path() + "/dotfiles-ssh-config";
  std::string link = tmp.path() + "/config";
  ASSERT_EQ(WriteFileAtomic(target, "Host a\n", 0600), Status::Ok());
  ASSERT_EQ(::symlink(target.c_str(), link.c_str()), 0);
  ASSERT_EQ(EnsureSshInclude(link, "/state/ssh/config"), Status::Ok());
  struct stat st;
  ASSERT_EQ(::lstat(link.c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
  EXPECT_EQ(*ReadFile(target), "Include /state/ssh/config\nHost a\n");
}

TEST(EnsureSshInclude, RefusesPathsSshWouldMisread) {
  TempDir tmp;
  std::string config = tmp.path() + "/config";
  EXPECT_EQ(EnsureSshInclude(config, "/state/*/config").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(EnsureSshInclude(config, "/state\n/config").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(EnsureSshInclude(config, "/sta\"te/config").code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(ReadFile(config).ok());  // nothing written
}

}  // namespace
}  // namespace tpufleet
