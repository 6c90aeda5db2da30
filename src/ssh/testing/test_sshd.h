// TestSshd: a real OpenSSH server on 127.0.0.1 for tests. It has a host key of its own,
// trusts one client key (a fleet key made with EnsureFleetKey), and lets this process's
// user log in with it (root too: PermitRootLogin prohibit-password). Everything lives
// in one temporary directory; destroying the TestSshd kills and reaps sshd and removes
// the directory, also when the test fails half-way.
//
//   class MyTest : public TestSshdFixture {};   // sshd_ started (or the test skipped)
//   TEST_F(MyTest, X) {
//     std::string config = sshd_->WriteConfig({sshd_->Entry("w0")}).value();
//     OpenSshRunner runner(config);   // runner.Run("w0", "echo hi", 5s)
//   }
//
// Sessions sshd forked for connections outlive it until their client goes; a test that
// leaves a remote command running must end it itself (by pid).
//
// Thread-safety: one owner; port(), Entry() and the like may be read from any thread.
#pragma once

#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <pwd.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "ssh/fleet_key.h"
#include "ssh/runner.h"
#include "ssh/ssh_files.h"
#include "ssh/testing/loopback.h"
#include "ssh/testing/temp_dir.h"
#include "util/file.h"
#include "util/status.h"
#include "util/strings.h"
#include "util/subprocess.h"

namespace tpufleet {

class TestSshd {
 public:
  static constexpr const char* kSshdPath = "/usr/sbin/sshd";
  static constexpr const char* kSkipReason =
      "/usr/sbin/sshd is not installed (Debian: openssh-server)";
  /// sshd listens within a few tens of milliseconds; this is for a loaded CI machine.
  static constexpr std::chrono::milliseconds kStartTimeout{10'000};

  static bool Installed() { return ::access(kSshdPath, X_OK) == 0; }

  /// A running server, or the reason it would not start (with sshd's log).
  /// `extra_config`: sshd_config lines added to the test's own.
  static Result<std::unique_ptr<TestSshd>> Start(const std::string& extra_config = "") {
    std::unique_ptr<TestSshd> s(new TestSshd());
    s->extra_config_ = extra_config;
    TPUFLEET_TRY(s->Prepare());
    Status last;
    for (int attempt = 0; attempt < 5; ++attempt) {  // a free port may be taken meanwhile
      last = s->Launch();
      if (last.ok()) {
        return s;
      }
    }
    return last;
  }

  ~TestSshd() { Stop(); }
  TestSshd(const TestSshd&) = delete;
  TestSshd& operator=(const TestSshd&) = delete;

  int port() const { return port_; }
  /// Its temporary directory, removed with it; tests may put their own files there.
  const std::string& dir() const { return dir_.path(); }
  /// The server's host key, "ssh-ed25519 AAAA…" (no comment).
  const std::string& host_key() const { return host_key_; }
  /// The client key sshd trusts; private_key_path is the IdentityFile.
  const FleetKey& client_key() const { return client_key_; }
  /// The account to log in as: this process's own.
  const std::string& user() const { return user_; }
  /// sshd's log so far (-e: everything it would send to syslog).
  std::string Log() const {
    Result<std::string> log = ReadFile(dir() + "/sshd.log");
    return log.ok() ? *log : log.status().ToString();
  }

  /// A Host entry named `alias` for this server: 127.0.0.1, its port, the client key and
  /// its host key pinned.
  SshHostEntry Entry(const std::string& alias) const {
    SshHostEntry e;
    e.alias = alias;
    e.address = "127.0.0.1";
    e.port = port_;
    e.user = user_;
    e.identity_file = client_key_.private_key_path;
    e.host_key = host_key_;
    return e;
  }

  /// Writes ssh config and known_hosts for `entries` (WriteSshFiles) into dir()/ssh and
  /// returns the config's path.
  Result<std::string> WriteConfig(const std::vector<SshHostEntry>& entries) const {
    TPUFLEET_TRY(WriteSshFiles(dir() + "/ssh", entries));
    return dir() + "/ssh/config";
  }

  /// Kills sshd (SIGTERM, then SIGKILL after a second) and reaps it. Idempotent. Its
  /// sessions get a second to end first, so sshd reaps them rather than leaving them to
  /// init.
  void Stop() {
    if (pid_ <= 0) {
      return;
    }
    for (int i = 0; i < 100 && HasChildren(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ::kill(pid_, SIGTERM);
    for (int i = 0; i < 100 && !Reaped(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      int status = 0;
      ::waitpid(pid_, &status, 0);
      pid_ = -1;
    }
  }

 private:
  TestSshd() = default;

  Status Prepare() {
    if (dir().empty()) {
      return InternalError("cannot make a temporary directory");
    }
    const std::string host_key = dir() + "/host_ed25519";
    TPUFLEET_ASSIGN_OR_RETURN(ProgramResult r, RunUserCommand({"ssh-keygen", "-q", "-t", "ed25519",
                                                               "-N", "", "-f", host_key},
                                                              "", std::chrono::seconds(30)));
    if (r.exit_code != 0) {
      return InternalError("ssh-keygen: " + r.output);
    }
    TPUFLEET_ASSIGN_OR_RETURN(std::string pub, ReadFile(host_key + ".pub"));
    std::vector<std::string> words = Split(std::string(Trim(pub)), ' ');
    host_key_ = words.size() >= 2 ? words[0] + " " + words[1] : "";
    TPUFLEET_ASSIGN_OR_RETURN(client_key_, EnsureFleetKey(dir() + "/client"));
    TPUFLEET_TRY(WriteFileAtomic(dir() + "/authorized_keys", client_key_.public_key + "\n", 0600));
    passwd* pw = ::getpwuid(::geteuid());
    user_ = pw != nullptr ? pw->pw_name : "root";
    // sshd running as root insists on its privilege-separation directory, which the
    // service unit (not the package) normally creates.
    if (::geteuid() == 0) {
      ::mkdir("/run/sshd", 0755);
    }
    return Status::Ok();
  }

  Status Launch() {
    port_ = ClosedLoopbackPort();
    std::string config = dir() + "/sshd_config";
    std::string text = "Port " + std::to_string(port_) + "\n";
    text += "ListenAddress 127.0.0.1\n";
    text += "HostKey " + dir() + "/host_ed25519\n";
    text += "AuthorizedKeysFile " + dir() + "/authorized_keys\n";
    text += "PidFile none\n";
    text += "StrictModes no\n";
    text += "UsePAM no\n";
    text += "PermitRootLogin prohibit-password\n";
    text += "PasswordAuthentication no\n";
    text += "KbdInteractiveAuthentication no\n";
    text += "PubkeyAuthentication yes\n";
    text += "MaxStartups 100\n";
    // Debian's bash reads ~/.bashrc for a command sshd starts, unless it is a nested shell
    // (SHLVL); this machine's user's rc file is not the test's (pyenv's shims there wait
    // on a lock another session may hold, and hung CI's sessions).
    text += "SetEnv SHLVL=1\n";
    text += "LogLevel VERBOSE\n";
    text += extra_config_;
    TPUFLEET_TRY(WriteFileAtomic(config, text, 0600));
    int log =
        ::open((dir() + "/sshd.log").c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, log, 1);
    posix_spawn_file_actions_adddup2(&actions, log, 2);
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    sigset_t none;
    sigemptyset(&none);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
    std::vector<std::string> argv = {kSshdPath, "-D", "-e", "-f", config};
    std::vector<char*> args;
    for (std::string& a : argv) {
      args.push_back(a.data());
    }
    args.push_back(nullptr);
    char* env[] = {nullptr};
    int err = ::posix_spawn(&pid_, kSshdPath, &actions, &attr, args.data(), env);
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
    ::close(log);
    if (err != 0) {
      pid_ = -1;
      return InternalError(std::string("cannot start sshd: ") + std::strerror(err));
    }
    auto deadline = std::chrono::steady_clock::now() + kStartTimeout;
    while (std::chrono::steady_clock::now() < deadline) {
      if (Reaped()) {
        return UnavailableError("sshd exited at start: " + Log());
      }
      if (ProbeSsh("127.0.0.1", port_, std::chrono::milliseconds(500)).ok()) {
        return Status::Ok();
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    Stop();
    return TimeoutError("sshd did not listen within 10 s: " + Log());
  }

  // Whether sshd has a process of its own still (a session, alive or not yet reaped).
  bool HasChildren() const {
    const std::string parent = std::to_string(pid_);
    DIR* d = ::opendir("/proc");
    bool found = false;
    while (dirent* e = (d != nullptr && !found) ? ::readdir(d) : nullptr) {
      Result<std::string> stat = ReadFile("/proc/" + std::string(e->d_name) + "/stat");
      // "pid (comm) S ppid …": comm may hold spaces, so read after the last ')'.
      if (stat.ok() && stat->rfind(')') != std::string::npos) {
        std::vector<std::string> f = Split(stat->substr(stat->rfind(')') + 2), ' ');
        found = f.size() > 1 && f[1] == parent;
      }
    }
    if (d != nullptr) {
      ::closedir(d);
    }
    return found;
  }

  // True (and pid_ cleared) once sshd has exited and been reaped.
  bool Reaped() {
    int status = 0;
    if (pid_ > 0 && ::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
    }
    return pid_ <= 0;
  }

  TempDir dir_;
  pid_t pid_ = -1;
  int port_ = 0;
  std::string host_key_;
  FleetKey client_key_;
  std::string user_;
  std::string extra_config_;
};

/// A GoogleTest fixture with a TestSshd of its own for every test; the test is skipped
/// when sshd is not installed. A subclass puts its own set-up in SetUpWithSshd, which
/// runs only once the server is up (not when the test is skipped or sshd failed).
class TestSshdFixture : public ::testing::Test {
 protected:
  void SetUp() final {
    if (!TestSshd::Installed()) {
      GTEST_SKIP() << TestSshd::kSkipReason;
    }
    Result<std::unique_ptr<TestSshd>> s = TestSshd::Start(ExtraConfig());
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    sshd_ = std::move(*s);
    SetUpWithSshd();
  }
  /// sshd_config lines of the fixture's server beyond the test's own.
  virtual std::string ExtraConfig() const { return ""; }
  /// What a fixture does once its sshd runs (not called when the test was skipped or
  /// the sshd did not start).
  virtual void SetUpWithSshd() {}

  std::unique_ptr<TestSshd> sshd_;
};

}  // namespace tpufleet
