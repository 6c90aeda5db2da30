// NamespaceHosts attacked as issue 10 did: from inside a worker (its root, or a user
// there), and as a local user on the machine. Real workers, as namespace_hosts_test.cc.
#include <arpa/inet.h>
#include <sys/socket.h>

#include "emulator/hosts/namespace_hosts.h"
#include "emulator/hosts/namespace_hosts_fixture.h"
#include "util/testing/as_nobody.h"

namespace tpufleet::emulator {
namespace {

using namespace hosts_test;  // NOLINT: the fixture's helpers

// Issue 10, the pattern of finding 7 on the worker: the metadata server (PID 1 of every
// worker, root, on the machine's memory) appended whatever a connection sent while a
// long-poll of that connection was parked, without bound. A worker user parked a
// request and sent 128 MiB behind it; the worker's init grew by as much.
TEST_F(NamespaceHostsTest, Issue10MetadataServerBoundsWhatAParkedClientSends) {
  if (auto why = NobodySkipReason()) {
    GTEST_SKIP() << *why;
  }
  std::vector<WorkerInfo> w = BootOrDie(Spec(KeyLine("alice"), 1));
  ASSERT_EQ(w.size(), 1u);
  pid_t init = hosts_->InitPids(kNode).at(0);
  auto peak_kb = [&] {
    Result<std::string> status = ReadFile("/proc/" + std::to_string(init) + "/status");
    size_t at = status.ok() ? status->find("VmHWM:") : std::string::npos;
    long long kb = 0;
    return at != std::string::npos && ParseInt(Trim(Split(status->substr(at + 6), 'k')[0]), &kb)
               ? kb
               : -1;
  };
  long long before = peak_kb();
  ASSERT_GT(before, 0);
  // How much the attacker offers; what the server may keep is far less.
  constexpr size_t kFlood = 128u << 20;
  std::string sent = InChild([&]() -> std::string {
    // Into the worker's network, then as an unprivileged user there.
    int ns = ::open(("/proc/" + std::to_string(init) + "/ns/net").c_str(), O_RDONLY);
    std::optional<NobodyIds> ids = LookUpNobody();
    if (ns < 0 || ::setns(ns, CLONE_NEWNET) != 0 || !ids || ::setgroups(0, nullptr) != 0 ||
        ::setgid(ids->gid) != 0 || ::setuid(ids->uid) != 0) {
      return "setup failed";
    }
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(80);
    ::inet_pton(AF_INET, "169.254.169.254", &a.sin_addr);
    timeval stall{5, 0};  // the server stopped reading: stop offering
    ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &stall, sizeof stall);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
      return "connect failed";
    }
    std::string park =
        "GET /computeMetadata/v1/instance/preempted?wait_for_change=true HTTP/1.1\r\n"
        "Host: metadata.google.internal\r\nMetadata-Flavor: Google\r\n\r\n";
    std::string junk(1u << 20, 'A');
    size_t total = 0;
    if (::send(fd, park.data(), park.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(park.size())) {
      return "send failed";
    }
    while (total < kFlood) {
      ssize_t n = ::send(fd, junk.data(), junk.size(), MSG_NOSIGNAL);
      if (n <= 0) {
        break;
      }
      total += static_cast<size_t>(n);
    }
    return std::to_string(total >> 20);
  });
  long long after = peak_kb();
  // Socket buffers and one request head: a few MiB at most, whatever was offered.
  constexpr long long kMaxGrowthKb = 16 * 1024;
  EXPECT_LT(after - before, kMaxGrowthKb) << "the worker's init grew from " << before
                                          << " KiB to " << after << " KiB; sent " << sent
                                          << " MiB";
  // The worker still answers others.
  EXPECT_EQ(Body(Curl(init, "instance/attributes/agent-worker-number")), "0");
}

// Issue 10, a compromised worker: the worker's disk (with its log and its meta dir) is
// bound at /run/tpufleet/disk inside it, where its root (any user with a key: sudo)
// may replace anything. The machine's root then followed those links at the next boot:
// it truncated and wrote the file worker.log pointed at, chmodded and wrote into the
// directory meta pointed at, and read `applied` wherever it pointed.
TEST_F(NamespaceHostsTest, Issue10TheMachineFollowsNoLinkAWorkerPlants) {
  std::vector<WorkerInfo> w = BootOrDie(Spec(KeyLine("alice"), 1));
  ASSERT_EQ(w.size(), 1u);
  const std::string precious = root_ + "/precious";
  ASSERT_TRUE(WriteFileAtomic(precious, "precious\n", 0644).ok());
  std::map<std::string, std::string> machine_dirs;  // what the worker links -> where
  for (const char* name : {"meta", "root", "upper", "tmp"}) {
    machine_dirs[name] = root_ + "/machine-" + name;
    ASSERT_EQ(::mkdir(machine_dirs[name].c_str(), 0755), 0);
  }
  std::string plant = "cd /run/tpufleet/disk && ln -sfn " + precious + " worker.log";
  for (const auto& [name, target] : machine_dirs) {
    plant += " && rm -rf " + name + " && ln -s " + target + " " + name;
  }
  ProgramResult planted =
      Ssh("alice", w[0].address, "sudo -n sh -c '" + plant + "' && echo planted");
  ASSERT_EQ(planted.output, "planted\n") << planted.output;
  ASSERT_TRUE(hosts_->Halt(kNode).ok());
  // The disk is repaired (a new /etc overlay: new host keys, pinned again by BootOrDie).
  std::vector<WorkerInfo> again = BootOrDie(Spec(KeyLine("alice"), 1));
  ASSERT_EQ(again.size(), 1u);
  // A worker root writing where its disk's links pointed would write the machine's files.
  EXPECT_EQ(Ssh("alice", w[0].address,
                "sudo -n touch /root/pwned /tmp/pwned /etc/pwned && sudo -n chmod 0777 /root")
                .exit_code,
            0);
  EXPECT_EQ(Must(ReadFile(precious)), "precious\n") << "the machine wrote through worker.log";
  for (const auto& [name, target] : machine_dirs) {
    std::error_code ec;
    EXPECT_TRUE(fs::is_empty(target, ec)) << "the worker's " << name << " link was followed";
    struct stat st {};
    ASSERT_EQ(::stat(target.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0755u) << "the worker's " << name << " link was followed";
  }

}

// Issue 10, the pattern of finding 6 in the worker hosts: a state dir that someone else
// made (emulator_hosts_bench used a fixed /tmp/tpufleet-hosts-bench) was adopted by
// root, which then made nodes, disks and mounts inside a directory that user controls.
TEST(Issue10, HostsRefuseAStateDirSomeoneElseMade) {
  if (auto why = NobodySkipReason()) {
    GTEST_SKIP() << *why;
  }
  if (Status s = NamespaceHosts::CheckSupport(); !s.ok()) {
    GTEST_SKIP() << s.ToString();
  }
  const std::string dir = "/tmp/tpufleet-issue10-hosts-" + std::to_string(::getpid());
  ASSERT_EQ(RunAsNobody([&] { return ::mkdir(dir.c_str(), 0777) == 0 ? 0 : 1; }), 0);
  RealClock clock;
  NamespaceHostsOptions o;
  o.state_dir = dir;
  o.worker_binary = TPUFLEET_EMULATOR_WORKER;
  Result<std::unique_ptr<NamespaceHosts>> h = NamespaceHosts::Create(o, clock);
  EXPECT_FALSE(h.ok());
  EXPECT_EQ(h.status().code(), StatusCode::kFailedPrecondition) << h.status().ToString();
  EXPECT_NE(h.status().message().find("nobody"), std::string::npos) << h.status().ToString();
  std::error_code ec;
  EXPECT_FALSE(fs::exists(dir + "/nodes", ec)) << "root made its nodes in nobody's dir";
  if (h.ok()) {
    h->reset();
  }
  fs::remove_all(dir, ec);
  // A directory of root's that others may write is no better.
  ASSERT_EQ(::mkdir(dir.c_str(), 0700), 0);
  ASSERT_EQ(::chmod(dir.c_str(), 0777), 0);
  Result<std::unique_ptr<NamespaceHosts>> open = NamespaceHosts::Create(o, clock);
  EXPECT_FALSE(open.ok());
  EXPECT_NE(open.status().message().find("0777"), std::string::npos) << open.status().ToString();
  if (open.ok()) {
    open->reset();
  }
  fs::remove_all(dir, ec);
}

// Found with issue 14: an emulator whose state dir no worker mount covers (/srv here,
// /var/lib, a data disk) showed its token to every worker's root, and whoever has it
// may patch any node's ssh-keys. The emulator's state dir is hidden like the hosts'.
TEST_F(NamespaceHostsTest, TheEmulatorsTokenIsHiddenWhereverItsStateDirIs) {
  std::error_code ec;
  if (!fs::is_directory("/srv", ec)) {
    GTEST_SKIP() << "no /srv here: every other place a worker can see is covered by its own";
  }
  hosts_.reset();
  char tmpl[] = "/srv/tpufleet-hosts-test-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string emu = tmpl;
  struct Cleanup {
    std::string dir;
    ~Cleanup() {
      EXPECT_TRUE(NamespaceHosts::CleanStale(dir + "/hosts").ok());
      std::error_code e;
      fs::remove_all(dir, e);
    }
  } cleanup{emu};
  ASSERT_TRUE(WriteFileAtomic(emu + "/token", "tpufleet-emulator-secret\n", 0600).ok());
  NamespaceHostsOptions o;
  o.state_dir = emu + "/hosts";
  o.worker_binary = TPUFLEET_EMULATOR_WORKER;
  o.bucket_dir = emu + "/gcs";
  o.hidden_dir = emu;
  Result<std::unique_ptr<NamespaceHosts>> h = NamespaceHosts::Create(o, clock_);
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  hosts_ = std::move(*h);
  WorkerInfo w = BootOne("v4-8", "v4", 4);
  ProgramResult r = Ssh("alice", w.address,
                        "sudo -n cat " + emu + "/token " + emu +
                            "/hosts/hosts.lock 2>/dev/null; "
                            "sudo -n ls " +
                            emu + " | wc -l; echo ckpt > /gcs/x && echo bucket");
  EXPECT_EQ(r.output, "0\nbucket\n") << "a worker's root sees the emulator's files";
  EXPECT_EQ(Must(ReadFile(emu + "/gcs/x")), "ckpt\n");
  hosts_.reset();
}

}  // namespace
}  // namespace tpufleet::emulator
