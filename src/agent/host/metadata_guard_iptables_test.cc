#include "agent/host/metadata_guard_iptables.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "agent/host/metadata_guard.h"
#include "agent/host/plain_http.h"
#include "agent/host/system_programs.h"
#include "util/subprocess.h"
#include "util/testing/temp_dir.h"

namespace tpufleet::agent::host {
namespace {

TEST(MetadataGuardIptables, TheRulesAreTheNftTablesPerUidAndAddress) {
  IptablesRules r =
      GuardIptablesRules({{"milo", 1001}, {"old", 1003}}, MetadataAddressesIn(""), 4321);
  EXPECT_EQ(r.nat4, (std::vector<std::string>{
                        "-d 169.254.169.254/32 -p tcp -m tcp --dport 80 -m owner --uid-owner "
                        "1001 -j REDIRECT --to-ports 4321",
                        "-d 169.254.169.254/32 -p tcp -m tcp --dport 80 -m owner --uid-owner "
                        "1003 -j REDIRECT --to-ports 4321"}));
  EXPECT_EQ(r.filter4.at(0),
            "-d 169.254.169.254/32 -p tcp -m tcp ! --dport 53 -m owner --uid-owner 1001 -j "
            "REJECT --reject-with tcp-reset");
  EXPECT_EQ(r.filter6.at(1),
            "-d fd20:ce::254/128 -p tcp -m tcp ! --dport 53 -m owner --uid-owner 1003 -j "
            "REJECT --reject-with tcp-reset");
  EXPECT_EQ(GuardIptablesRules({}, MetadataAddressesIn(""), 4321).nat4.size(), 0u);
}

TEST(MetadataGuardIptables, TheChainIsReplacedWholeAndJumpedToOnce) {
  EXPECT_EQ(IptablesScript("nat", {"-d 1.2.3.4/32 -j X"}, false, false),
            "*nat\n:TPUFLEET_METADATA - [0:0]\n-A TPUFLEET_METADATA -d 1.2.3.4/32 -j X\n"
            "-I OUTPUT 1 -j TPUFLEET_METADATA\nCOMMIT\n");
  // Already there: emptied and filled, the jump kept as it is.
  EXPECT_EQ(IptablesScript("nat", {"-d 1.2.3.4/32 -j X"}, true, true),
            "*nat\n:TPUFLEET_METADATA - [0:0]\n-A TPUFLEET_METADATA -d 1.2.3.4/32 -j X\n"
            "COMMIT\n");
  EXPECT_EQ(IptablesScript("filter", {}, true, true),
            "*filter\n-D OUTPUT -j TPUFLEET_METADATA\n-F TPUFLEET_METADATA\n"
            "-X TPUFLEET_METADATA\nCOMMIT\n");
  EXPECT_EQ(IptablesScript("filter", {}, false, false), "");
}

TEST(MetadataGuardIptables, OnlyAWholeVariantIsFound) {
  TempDir dir;
  for (const char* name : {"iptables-legacy", "iptables-legacy-restore", "ip6tables-legacy",
                           "ip6tables-legacy-restore", "iptables-nft", "iptables-nft-restore"}) {
    ASSERT_EQ(::chmod(dir.Write(name, "#!/bin/sh\n").c_str(), 0755), 0);
  }
  EXPECT_EQ(FindIptables(dir.Path("iptables-legacy")).ip6tables_restore,
            dir.Path("ip6tables-legacy-restore"));
  EXPECT_EQ(FindIptables(dir.Path("iptables-nft")).iptables, "") << "no ip6tables-nft";
  EXPECT_EQ(FindIptables(dir.Path("nft")).iptables, "");
}

// The test process in network and mount namespaces of its own, where the machine's nft
// is hidden (/dev/null, not executable, bound over it) and lo carries the metadata
// server's address: the guard, given no programs, falls back to the real iptables.
class GuardWithoutNft : public ::testing::Test {
 protected:
  void SetUp() override {
    iptables_ = FindIptables("");
    if (::geteuid() != 0 || iptables_.iptables.empty()) {
      GTEST_SKIP() << "needs root and iptables (iptables-nft or iptables-legacy)";
    }
    ASSERT_EQ(::unshare(CLONE_NEWNET | CLONE_NEWNS), 0) << std::strerror(errno);
    ASSERT_EQ(::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr), 0);
    if (std::string nft = FindSystemProgram("nft"); !nft.empty()) {
      ASSERT_EQ(::mount("/dev/null", nft.c_str(), nullptr, MS_BIND, nullptr), 0)
          << std::strerror(errno);
    }
    ASSERT_EQ(FindSystemProgram("nft"), "");
    ASSERT_EQ(Run({"ip", "link", "set", "lo", "up"}), 0);
    ASSERT_EQ(Run({"ip", "addr", "add", std::string(kMetadataIpv4) + "/32", "dev", "lo"}), 0);
    host_.state = dir_.path();
    host_.etc = dir_.Path("etc");
  }
  static int Run(const std::vector<std::string>& argv, std::string* output = nullptr) {
    Result<ProgramResult> r = RunUserCommand(argv, "", std::chrono::seconds(30));
    if (output != nullptr && r.ok()) {
      *output = r->output;
    }
    return r.ok() ? r->exit_code : -1;
  }
  // What connecting to address:port as uid gives: 0, or the errno.
  static int ConnectAs(uid_t uid, const char* address, int port) {
    pid_t pid = ::fork();
    if (pid == 0) {
      if (::setresgid(uid, uid, uid) != 0 || ::setresuid(uid, uid, uid) != 0) {
        ::_exit(200);
      }
      int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_port = htons(static_cast<uint16_t>(port));
      ::inet_pton(AF_INET, address, &a.sin_addr);
      ::_exit(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 ? 0 : errno);
    }
    int ws = 0;
    ::waitpid(pid, &ws, 0);
    return WIFEXITED(ws) ? WEXITSTATUS(ws) : -1;
  }
  // A listener on address (port 0: any); its port.
  int Listen(const char* address, int port) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    ::inet_pton(AF_INET, address, &a.sin_addr);
    socklen_t n = sizeof(a);
    if (::bind(fd, reinterpret_cast<sockaddr*>(&a), n) != 0 || ::listen(fd, 8) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &n) != 0) {
      return -1;
    }
    fds_.push_back(fd);
    return ntohs(a.sin_port);
  }
  void TearDown() override {
    for (int fd : fds_) {
      ::close(fd);
    }
  }
  IptablesPrograms iptables_;
  TempDir dir_;
  HostPaths host_;
  PlainHttpClient http_;
  std::vector<int> fds_;
};

TEST_F(GuardWithoutNft, IptablesRedirectsAndRefusesTheGuardedUidsOnly) {
  int proxy = Listen("127.0.0.1", 0);
  ASSERT_GT(proxy, 0);
  ASSERT_EQ(Listen(kMetadataIpv4, 80), 80);  // the metadata server, as root reaches it
  ASSERT_EQ(Listen(kMetadataIpv4, 8080), 8080);
  MetadataGuard guard(host_, GuardPrograms{}, "http://127.0.0.1:1", http_);
  guard.set_proxy_port(proxy);
  const GuardState& s = guard.Apply({{"milo", 1001}});
  ASSERT_EQ(s.error, "");
  EXPECT_TRUE(s.active);
  EXPECT_EQ(s.detail, "the metadata server's token is kept from milo (iptables chains "
                      "TPUFLEET_METADATA, proxy 127.0.0.1:" + std::to_string(proxy) + ")");

  // milo reaches port 80 (at the proxy: nothing listens on it at 169.254.169.254 for
  // him once the proxy's listener is closed, below) and is reset on 8080; root and
  // another uid reach both.
  EXPECT_EQ(ConnectAs(1001, kMetadataIpv4, 80), 0);
  EXPECT_EQ(ConnectAs(1001, kMetadataIpv4, 8080), ECONNREFUSED);
  EXPECT_EQ(ConnectAs(1002, kMetadataIpv4, 8080), 0);
  EXPECT_EQ(ConnectAs(0, kMetadataIpv4, 8080), 0);
  ::close(fds_[0]);  // the proxy gone: milo's port 80 is refused, so it went there
  fds_.erase(fds_.begin());
  EXPECT_EQ(ConnectAs(1001, kMetadataIpv4, 80), ECONNREFUSED);
  EXPECT_EQ(ConnectAs(1002, kMetadataIpv4, 80), 0);

  // Applied again (the next serve): the chains are replaced, not doubled.
  ASSERT_EQ(guard.Apply({{"milo", 1001}}).error, "");
  std::string saved;
  ASSERT_EQ(Run({iptables_.iptables, "-t", "nat", "-S"}, &saved), 0);
  EXPECT_EQ(saved.find("-A OUTPUT -j TPUFLEET_METADATA"),
            saved.rfind("-A OUTPUT -j TPUFLEET_METADATA"))
      << saved;
  EXPECT_EQ(saved.find("--uid-owner 1001"), saved.rfind("--uid-owner 1001")) << saved;
  ASSERT_EQ(Run({iptables_.ip6tables, "-S"}, &saved), 0);
  EXPECT_NE(saved.find("-A TPUFLEET_METADATA -d fd20:ce::254/128"), std::string::npos) << saved;

  // Nobody left: the chains and their jumps go, and milo reaches 8080 again.
  EXPECT_FALSE(guard.Apply({}).active);
  for (const auto& [program, table] :
       std::vector<std::pair<std::string, std::string>>{{iptables_.iptables, "nat"},
                                                        {iptables_.iptables, "filter"},
                                                        {iptables_.ip6tables, "filter"}}) {
    ASSERT_EQ(Run({program, "-t", table, "-S"}, &saved), 0);
    EXPECT_EQ(saved.find("TPUFLEET"), std::string::npos) << program << " " << table << saved;
  }
  EXPECT_EQ(ConnectAs(1001, kMetadataIpv4, 8080), 0);
}

}  // namespace
}  // namespace tpufleet::agent::host
