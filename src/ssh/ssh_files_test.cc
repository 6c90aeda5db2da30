#include "ssh/ssh_files.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

#include "ssh/testing/temp_dir.h"
#include "util/file.h"
#include "util/strings.h"
#include "util/subprocess.h"
#include "util/testing/as_nobody.h"
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

unsigned FileMode(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 ? st.st_mode & 07777 : 0xffff;
}

TEST(SshFingerprint, IsWhatSshKeygenPrints) {
  // `ssh-keygen -lf` of kKey.
  const std::string want = "SHA256:HXEt6KyTDmhlpUGpGa0CgTULFwNm5Pa9fSNicnQsXoU";
  EXPECT_EQ(SshKeyLineFingerprint(kKey), want);
  EXPECT_EQ(SshKeyLineFingerprint(kKeyNoComment), want);
  EXPECT_EQ(SshKeyLineFingerprint("ssh-ed25519 not*base64"), "");
  EXPECT_EQ(SshKeyLineFingerprint(""), "");
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
  EXPECT_EQ(FileMode(dir), 0700u);
  EXPECT_EQ(FileMode(dir + "/config"), 0600u);
  EXPECT_EQ(FileMode(dir + "/known_hosts"), 0600u);
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

TEST(SshFileDir, ConfigSaysWhoWritesAMissingOne) {
  TempDir dir;
  SshFileDir files(dir.path() + "/ssh", "");
  Result<std::string> missing = files.Config();
  EXPECT_EQ(missing.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(missing.status().message().find("`tpufleet up` writes it"), std::string::npos);
  ASSERT_EQ(MakePrivateDirs(dir.path() + "/ssh"), Status::Ok());
  ASSERT_EQ(WriteFileAtomic(dir.path() + "/ssh/config", "", 0600), Status::Ok());
  EXPECT_EQ(files.Config().value(), dir.path() + "/ssh/config");
}

TEST(SshFileDir, RewriteWritesTheFilesAndTheIncludeKeepingTheRest) {
  TempDir tmp;
  std::string dir = tmp.path() + "/state/ssh";
  std::string user = tmp.path() + "/home/.ssh/config";
  ASSERT_EQ(MakePrivateDirs(tmp.path() + "/home/.ssh"), Status::Ok());
  ASSERT_EQ(WriteFileAtomic(user, "Host old\n  User me\n", 0600), Status::Ok());
  SshFileDir files(dir, user);
  auto entries = []() -> Result<std::vector<SshHostEntry>> {
    return std::vector<SshHostEntry>{Worker("w0", "10.0.0.2")};
  };

  ASSERT_EQ(files.Rewrite(entries), Status::Ok());

  EXPECT_NE(ReadFile(dir + "/config").value().find("Host w0\n"), std::string::npos);
  EXPECT_NE(ReadFile(dir + "/known_hosts").value().find("10.0.0.2 "), std::string::npos);
  EXPECT_EQ(ReadFile(user).value(), "Include " + dir + "/config\nHost old\n  User me\n");
  EXPECT_EQ(files.Config().value(), dir + "/config");
  // The entries' error comes back as it is.
  EXPECT_EQ(
      files.Rewrite([]() -> Result<std::vector<SshHostEntry>> { return NotFoundError("no store"); })
          .code(),
      StatusCode::kNotFound);
}

TEST(SshFileDir, AnEmptyUserConfigIsLeftAlone) {
  TempDir tmp;
  SshFileDir files(tmp.path() + "/ssh", "");
  ASSERT_EQ(files.Rewrite(
                []() -> Result<std::vector<SshHostEntry>> { return std::vector<SshHostEntry>{}; }),
            Status::Ok());
  EXPECT_FALSE(ReadFile(tmp.path() + "/home/.ssh/config").ok());
}

TEST(EnsureSshInclude, CreatesAMissingConfig) {
  TempDir tmp;
  std::string config = tmp.path() + "/home/.ssh/config";
  ASSERT_EQ(EnsureSshInclude(config, "/state/ssh/config"), Status::Ok());
  EXPECT_EQ(*ReadFile(config), "Include /state/ssh/config\n");
  EXPECT_EQ(FileMode(config), 0600u);
  EXPECT_EQ(FileMode(tmp.path() + "/home/.ssh"), 0700u);
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
  EXPECT_EQ(FileMode(config), 0644u);
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

// ---- Issue 10: root with a user's HOME, and links to other users' files ----

// A HOME that belongs to nobody (the user whose HOME root runs with), in a temp dir
// nobody may enter, and a file of root's beside it.
class Issue10SshConfig : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto why = NobodySkipReason()) {
      GTEST_SKIP() << *why;
    }
    ids_ = *LookUpNobody();
    ASSERT_EQ(::chmod(tmp_.path().c_str(), 0755), 0);
    home_ = tmp_.path() + "/home";
    ASSERT_EQ(::mkdir(home_.c_str(), 0755), 0);
    ASSERT_EQ(::chown(home_.c_str(), ids_.uid, ids_.gid), 0);
    config_ = home_ + "/.ssh/config";
    roots_ = tmp_.path() + "/roots-file";
    ASSERT_EQ(WriteFileAtomic(roots_, "# root's\n", 0644), Status::Ok());
  }
  // As nobody: ~/.ssh (0700) and, in it, `config` as a symlink to `link_to` or a file.
  void PlantAsNobody(const std::string& link_to, const char* content = nullptr) {
    std::string ssh = home_ + "/.ssh";
    std::string config = config_;
    ASSERT_EQ(RunAsNobody([&] {
                if (::mkdir(ssh.c_str(), 0700) != 0) {
                  return 1;
                }
                if (!link_to.empty()) {
                  return ::symlink(link_to.c_str(), config.c_str()) == 0 ? 0 : 2;
                }
                int fd = ::open(config.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600);
                ssize_t want = static_cast<ssize_t>(std::strlen(content));
                return fd >= 0 && ::write(fd, content, static_cast<size_t>(want)) == want ? 0 : 3;
              }),
              0);
  }
  uid_t OwnerOf(const std::string& path) {
    struct stat st {};
    return ::lstat(path.c_str(), &st) == 0 ? st.st_uid : static_cast<uid_t>(-1);
  }

  TempDir tmp_;
  NobodyIds ids_{};
  std::string home_, config_, roots_;
};

TEST_F(Issue10SshConfig, RootWithAUsersHomeIsRefusedUnlessAsked) {
  // The review's attack: the user links ~/.ssh/config to a file of root's; root runs
  // tpufleet with that HOME, and root's file got an Include of a file the user writes.
  PlantAsNobody(roots_);
  Status s = EnsureSshInclude(config_, "/home/nobody/state/ssh/config");
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.message(), "refusing to edit " + config_ + ": " + home_ +
                             "/.ssh belongs to nobody (uid " + std::to_string(ids_.uid) +
                             "), not to root (uid 0), who runs tpufleet (root with another "
                             "user's HOME?); run tpufleet as that user, or set "
                             "TPUFLEET_SSH_INCLUDE=force to edit it anyway (it stays theirs) "
                             "or =off to leave it alone");
  EXPECT_EQ(*ReadFile(roots_), "# root's\n");
}

TEST_F(Issue10SshConfig, ALinkToAFileNotTheUsersIsRefusedEvenWhenAsked) {
  PlantAsNobody(roots_);
  Status s = EnsureSshInclude(config_, "/state/ssh/config", SshConfigOwner::kAnyone);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.message(), "refusing to edit " + roots_ + " (where " + config_ +
                             " leads): it belongs to root (uid 0), not to nobody (uid " +
                             std::to_string(ids_.uid) + "), who owns " + home_ + "/.ssh");
  EXPECT_EQ(*ReadFile(roots_), "# root's\n");
}

TEST_F(Issue10SshConfig, WhenAskedTheUsersOwnConfigIsEditedAndStaysTheirs) {
  PlantAsNobody("", "Host a\n");
  ASSERT_EQ(EnsureSshInclude(config_, "/state/ssh/config").code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(*ReadFile(config_), "Host a\n");
  ASSERT_EQ(EnsureSshInclude(config_, "/state/ssh/config", SshConfigOwner::kAnyone), Status::Ok());
  EXPECT_EQ(*ReadFile(config_), "Include /state/ssh/config\nHost a\n");
  EXPECT_EQ(OwnerOf(config_), ids_.uid);
  EXPECT_EQ(FileMode(config_), 0600u);
}

TEST_F(Issue10SshConfig, WhenAskedAMissingConfigIsMadeForTheUser) {
  ASSERT_EQ(EnsureSshInclude(config_, "/state/ssh/config").code(),
            StatusCode::kFailedPrecondition);  // HOME is nobody's: refused, nothing made
  EXPECT_NE(::access((home_ + "/.ssh").c_str(), F_OK), 0);
  ASSERT_EQ(EnsureSshInclude(config_, "/state/ssh/config", SshConfigOwner::kAnyone), Status::Ok());
  EXPECT_EQ(*ReadFile(config_), "Include /state/ssh/config\n");
  EXPECT_EQ(OwnerOf(home_ + "/.ssh"), ids_.uid);
  EXPECT_EQ(FileMode(home_ + "/.ssh"), 0700u);
  EXPECT_EQ(OwnerOf(config_), ids_.uid);
}

TEST_F(Issue10SshConfig, MyConfigLinkedToAnotherUsersFileIsRefused) {
  // Root's own ~/.ssh, its config a link to a file nobody owns (and could swap).
  std::string my_ssh = tmp_.path() + "/root-home/.ssh";
  ASSERT_EQ(MakePrivateDirs(my_ssh), Status::Ok());
  std::string theirs = home_ + "/theirs";
  ASSERT_EQ(RunAsNobody([&] {
              int fd = ::open(theirs.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0644);
              return fd >= 0 ? 0 : 1;
            }),
            0);
  ASSERT_EQ(::symlink(theirs.c_str(), (my_ssh + "/config").c_str()), 0);
  Status s = EnsureSshInclude(my_ssh + "/config", "/state/ssh/config");
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("it belongs to nobody"), std::string::npos) << s.message();
  EXPECT_EQ(*ReadFile(theirs), "");
}

}  // namespace
}  // namespace tpufleet

namespace tpufleet {
namespace {

// What ssh does with a ProxyCommand value before its shell sees it: "%%" is '%' (and a
// lone '%' would be a token: ProxyCommandLine never leaves one), then "exec " in front.
Result<std::string> AsSshRunsIt(const std::string& line) {
  std::string out = "exec ";
  for (size_t i = 0; i < line.size(); ++i) {
    if (line[i] == '%') {
      if (i + 1 >= line.size() || line[i + 1] != '%') {
        return InvalidArgumentError("a lone % at " + std::to_string(i) + " in " + line);
      }
      ++i;
    }
    out += line[i];
  }
  return out;
}

TEST(Issue11, ProxyCommandWordsReachTheProgramExactlyThroughEveryShell) {
  std::vector<std::string> words = {"/usr/bin/printf",
                                    "%s|",
                                    "plain",
                                    "a b",
                                    "$HOME",
                                    "`id`",
                                    "$(id)",
                                    "x;y",
                                    "*",
                                    "~",
                                    "#c",
                                    "a&b",
                                    "(",
                                    "100%",
                                    "%h",
                                    "é",
                                    "-n",
                                    "{a,b}"};
  Result<std::string> line = ProxyCommandLine(words);
  ASSERT_TRUE(line.ok()) << line.status().ToString();
  Result<std::string> command = AsSshRunsIt(*line);
  ASSERT_TRUE(command.ok()) << command.status().ToString();
  std::string want;
  for (size_t i = 2; i < words.size(); ++i) {
    want += words[i] + "|";
  }
  for (const char* shell : {"/bin/sh", "/bin/bash", "/bin/dash", "/usr/bin/zsh", "/usr/bin/fish",
                            "/bin/csh", "/usr/bin/tcsh"}) {
    if (::access(shell, X_OK) != 0) {
      continue;  // not installed here
    }
    Result<ProgramResult> r = RunUserCommand({shell, "-c", *command}, "", std::chrono::seconds(10));
    ASSERT_TRUE(r.ok()) << shell << ": " << r.status().ToString();
    EXPECT_EQ(r->exit_code, 0) << shell;
    EXPECT_EQ(r->output, want) << shell << " ran: " << *command;
  }
}

TEST(Issue11, ProxyCommandLineLeavesPlainWordsBareAndRefusesWhatNoQuotingKeeps) {
  EXPECT_EQ(ProxyCommandLine({"/usr/bin/tpufleet", "ssh-proxy", "--state-dir",
                              "/home/a/.local/state/tpufleet", "--", "trainer", "3"})
                .value(),
            "/usr/bin/tpufleet ssh-proxy --state-dir /home/a/.local/state/tpufleet -- trainer 3");
  EXPECT_EQ(ProxyCommandLine({"/opt/my tools/tpufleet", "50%"}).value(),
            "'/opt/my tools/tpufleet' '50%%'");
  for (const char* bad : {"it's", "a\"b", "a\\b", "hi!", "a\nb", "a\rb", "a\tb", ""}) {
    EXPECT_EQ(ProxyCommandLine({"/bin/tpufleet", bad}).status().code(),
              StatusCode::kInvalidArgument)
        << bad;
  }
  EXPECT_EQ(ProxyCommandLine({}).status().code(), StatusCode::kInvalidArgument);
}

TEST(Issue11, AProxiedHostIsReachedThroughTheProxyAndKnownByItsName) {
  SshHostEntry e = Worker("trainer-w1", "10.0.0.2", 2222);
  e.proxy_command = {"/usr/bin/tpufleet", "ssh-proxy", "--", "trainer", "1"};
  SshHostEntry plain = Worker("box", "10.0.0.3");
  std::string config = RenderSshConfig({e, plain}, "/s/known_hosts").value();
  EXPECT_NE(config.find("Host trainer-w1\n  HostName 10.0.0.2\n  Port 2222\n"), std::string::npos)
      << config;
  EXPECT_NE(config.find("  ProxyCommand /usr/bin/tpufleet ssh-proxy -- trainer 1\n"
                        "  HostKeyAlias trainer-w1\n"),
            std::string::npos)
      << config;
  EXPECT_EQ(config.find("ProxyCommand", config.find("Host box")), std::string::npos);
  // The key is pinned under the name too, which stays when the address changes; an
  // entry without a proxy has its address only.
  EXPECT_EQ(RenderKnownHosts({e, plain}), RenderKnownHosts({}) + "[10.0.0.2]:2222 " +
                                              kKeyNoComment + "\ntrainer-w1 " + kKeyNoComment +
                                              "\n10.0.0.3 " + kKeyNoComment + "\n");
  e.proxy_command = {"/bin/tpufleet", "it's"};
  EXPECT_EQ(RenderSshConfig({e}, "/s/known_hosts").status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tpufleet
