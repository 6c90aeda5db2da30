// The fixture of NamespaceHosts' system tests (namespace_hosts_*test.cc): a private state
// dir and bucket dir, users' keys, real ssh and curl into the workers, and helpers to
// find processes, links and mounts. Include in those tests only.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <future>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "emulator/hosts/host_network.h"
#include "emulator/hosts/namespace_hosts.h"
#include "emulator/hosts/system_programs.h"
#include "util/clock.h"
#include "util/file.h"
#include "util/strings.h"

namespace tpufleet::emulator::hosts_test {

namespace fs = std::filesystem;
using hosts::FindProgram;
using hosts::RunCommand;
using std::chrono::milliseconds;
using std::chrono::seconds;

inline constexpr const char* kNode = "projects/p/locations/us-central2-b/nodes/t1";
// How long a check that something is gone may take: process and netns teardown is
// asynchronous in the kernel, but takes milliseconds.
inline constexpr milliseconds kGoneTimeout{10'000};
// ssh commands: generous, the machine may be busy with other tests.
inline constexpr milliseconds kSshTimeout{30'000};

inline std::string Must(Result<std::string> r) {
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : "";
}

// Polls `done` until it holds or kGoneTimeout passes.
template <typename F>
inline bool Eventually(F done) {
  auto deadline = std::chrono::steady_clock::now() + kGoneTimeout;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) {
      return false;
    }
    std::this_thread::sleep_for(milliseconds(20));
  }
  return true;
}

inline bool Alive(pid_t pid) {
  Result<std::string> stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
  if (!stat.ok()) {
    return false;
  }
  size_t paren = stat->rfind(')');
  return !(paren != std::string::npos && paren + 2 < stat->size() && (*stat)[paren + 2] == 'Z');
}

inline std::string PidNamespace(pid_t pid) {
  std::error_code ec;
  return fs::read_symlink("/proc/" + std::to_string(pid) + "/ns/pid", ec).string();
}

// Every process of the machine (but this one) for which `keep(pid, "/proc/PID")` holds.
template <typename Keep>
std::vector<pid_t> ProcessesWhere(Keep keep) {
  std::vector<pid_t> out;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator("/proc", ec)) {
    long long pid = 0;
    if (ParseInt(e.path().filename().string(), &pid) && pid != ::getpid() &&
        keep(static_cast<pid_t>(pid), e.path().string())) {
      out.push_back(static_cast<pid_t>(pid));
    }
  }
  return out;
}

// Every process of the machine whose PID namespace is that of one of `inits`.
inline std::set<pid_t> ProcessesOn(const std::vector<pid_t>& inits) {
  std::set<std::string> spaces;
  for (pid_t p : inits) {
    if (p > 0) {
      spaces.insert(PidNamespace(p));
    }
  }
  std::vector<pid_t> pids = ProcessesWhere(
      [&](pid_t pid, const std::string&) { return spaces.count(PidNamespace(pid)) != 0; });
  return std::set<pid_t>(pids.begin(), pids.end());
}

inline bool NoneAlive(const std::set<pid_t>& pids) {
  return std::none_of(pids.begin(), pids.end(), [](pid_t p) { return Alive(p); });
}

// Every live process whose /proc/PID/`file` holds `needle` (all of it, for "comm").
inline std::vector<pid_t> ProcessesWhose(const std::string& file, const std::string& needle,
                                         bool whole) {
  return ProcessesWhere([&](pid_t pid, const std::string& dir) {
    Result<std::string> text = ReadFile(dir + "/" + file);
    return text.ok() && (whole ? Trim(*text) == needle : text->find(needle) != std::string::npos) &&
           Alive(pid);
  });
}

inline std::vector<pid_t> ProcessesNamed(const std::string& comm) {
  return ProcessesWhose("comm", comm, /*whole=*/true);
}

inline std::vector<pid_t> ProcessesWithArg(const std::string& needle) {
  return ProcessesWhose("cmdline", needle, /*whole=*/false);
}

inline std::vector<std::string> LinksWithPrefix(const std::string& prefix) {
  std::vector<std::string> out;
  for (const std::string& l : hosts::HostNetwork::ListLinks()) {
    if (StartsWith(l, prefix)) {
      out.push_back(l);
    }
  }
  return out;
}

inline bool MountsMention(const std::string& path) {
  Result<std::string> m = ReadFile("/proc/self/mountinfo");
  return m.ok() && m->find(path) != std::string::npos;
}

// Runs `body` in a forked child (to change its credentials or namespaces without
// touching this process) and returns what it returned.
template <typename F>
inline std::string InChild(F body) {
  int report[2];
  if (::pipe(report) != 0) {
    return "pipe failed";
  }
  pid_t child = ::fork();
  if (child < 0) {
    return "fork failed";
  }
  if (child == 0) {
    ::close(report[0]);
    std::string out = body();
    [[maybe_unused]] ssize_t n = ::write(report[1], out.data(), out.size());
    ::_exit(0);
  }
  ::close(report[1]);
  std::string out = ReadToEof(report[0]);
  ::close(report[0]);
  ::waitpid(child, nullptr, 0);
  return out;
}

class NamespaceHostsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) {
      GTEST_SKIP() << "needs root: worker hosts make network namespaces, veths and mounts "
                      "(CI runs the tests as root)";
    }
    Status support = NamespaceHosts::CheckSupport();
    ASSERT_TRUE(support.ok()) << support.ToString() << " (run scripts/setup-deps.sh)";
    // Under /tmp, which every worker mounts over, so /var is overlaid as in production.
    char tmpl[] = "/tmp/tpufleet-hosts-test-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    state_ = root_ + "/state";
    bucket_ = root_ + "/gcs";  // beside the hosts' state, as the emulator has it
    ssh_ = Must(FindProgram("ssh", "openssh-client"));
    nsenter_ = Must(FindProgram("nsenter", "util-linux"));
    curl_ = Must(FindProgram("curl", "curl"));
    std::string keygen = Must(FindProgram("ssh-keygen", "openssh-client"));
    for (const char* user : {"alice", "bob"}) {
      std::string key = root_ + "/" + user;
      ASSERT_TRUE(
          hosts::RunChecked({keygen, "-q", "-t", "ed25519", "-N", "", "-C", user, "-f", key}).ok());
      pub_[user] = std::string(Trim(Must(ReadFile(key + ".pub"))));
    }
    host_passwd_ = Must(ReadFile("/etc/passwd"));
    MakeHosts();
  }

  void TearDown() override {
    hosts_.reset();
    if (!root_.empty()) {
      Status s = NamespaceHosts::CleanStale(state_);
      EXPECT_TRUE(s.ok()) << s.ToString();
      std::error_code ec;
      fs::remove_all(root_, ec);
    }
  }

  void MakeHosts(const std::string& standin = TPUFLEET_TPU_STANDIN) {
    NamespaceHostsOptions o;
    o.state_dir = state_;
    o.worker_binary = TPUFLEET_EMULATOR_WORKER;
    o.standin_binary = standin;
    o.bucket_dir = bucket_;
    Result<std::unique_ptr<NamespaceHosts>> h = NamespaceHosts::Create(o, clock_);
    ASSERT_TRUE(h.ok()) << h.status().ToString();
    hosts_ = std::move(*h);
  }

  NodeHostSpec Spec(const std::string& keys, int workers = 4) {
    NodeHostSpec s;
    s.name = kNode;
    s.id = "1001";
    s.accelerator_type = "v4-32";
    s.workers = workers;
    s.metadata = {{"ssh-keys", keys}};
    return s;
  }

  std::string KeyLine(const std::string& user) { return user + ":" + pub_[user]; }

  // One worker of `type` showing `chips` chips of `family`, alice's key on it.
  WorkerInfo BootOne(const std::string& type, const std::string& family, int chips) {
    NodeHostSpec s = Spec(KeyLine("alice"), 1);
    s.accelerator_type = type;
    s.family = family;
    s.chips_per_worker = chips;
    std::vector<WorkerInfo> w = BootOrDie(s);
    return w.empty() ? WorkerInfo{} : w[0];
  }

  std::vector<WorkerInfo> BootOrDie(const NodeHostSpec& spec, bool new_addresses = false) {
    Result<std::vector<WorkerInfo>> r = hosts_->Boot(spec, new_addresses);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    if (!r.ok()) {
      return {};
    }
    std::string kh;
    for (const WorkerInfo& w : *r) {
      kh += w.address + " " + w.host_key + "\n";
    }
    EXPECT_TRUE(WriteFileAtomic(root_ + "/known_hosts", kh).ok());
    return *r;
  }

  // Real OpenSSH, host keys pinned from Boot's answer.
  ProgramResult Ssh(const std::string& user, const std::string& address, const std::string& cmd,
                    int connect_timeout_s = 10) {
    Result<ProgramResult> r = RunCommand({ssh_,
                                          "-F",
                                          "/dev/null",
                                          "-i",
                                          root_ + "/" + user,
                                          "-o",
                                          "IdentitiesOnly=yes",
                                          "-o",
                                          "BatchMode=yes",
                                          "-o",
                                          "StrictHostKeyChecking=yes",
                                          "-o",
                                          "UserKnownHostsFile=" + root_ + "/known_hosts",
                                          "-o",
                                          "GlobalKnownHostsFile=/dev/null",
                                          "-o",
                                          "ConnectTimeout=" + std::to_string(connect_timeout_s),
                                          "-o",
                                          "LogLevel=ERROR",
                                          user + "@" + address,
                                          "--",
                                          cmd},
                                         "", kSshTimeout);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : ProgramResult{};
  }

  // curl inside a worker's network namespace (the metadata server is only there).
  ProgramResult Curl(pid_t init, const std::string& path, bool flavor = true,
                     int max_seconds = 10) {
    std::vector<std::string> argv = {
        nsenter_, "--target", std::to_string(init),       "--net", "--", curl_, "-s",
        "-i",     "-m",       std::to_string(max_seconds)};
    if (flavor) {
      argv.push_back("-H");
      argv.push_back("Metadata-Flavor: Google");
    }
    argv.push_back("http://169.254.169.254/computeMetadata/v1/" + path);
    Result<ProgramResult> r = RunCommand(argv, "", milliseconds((max_seconds + 5) * 1000));
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : ProgramResult{};
  }

  static std::string Body(const ProgramResult& r) {
    size_t end = r.output.find("\r\n\r\n");
    return end == std::string::npos ? "" : r.output.substr(end + 4);
  }

  RealClock clock_;
  std::string root_;
  std::string state_;
  std::string bucket_;
  std::string ssh_, nsenter_, curl_;
  std::map<std::string, std::string> pub_;
  std::string host_passwd_;
  std::unique_ptr<NamespaceHosts> hosts_;
};

}  // namespace tpufleet::emulator::hosts_test
