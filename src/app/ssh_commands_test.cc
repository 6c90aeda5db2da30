// `tpufleet ssh` and `tpufleet forward` end to end: the real binary, run with a state dir
// whose store and SSH files name a real sshd on 127.0.0.1 (ssh/testing/test_sshd.h) as
// the workers of node "pod", and a real TCP service behind that sshd.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "control/ssh_sync.h"
#include "ssh/fleet_key.h"
#include "ssh/ssh_files.h"
#include "ssh/testing/loopback.h"
#include "ssh/testing/test_sshd.h"
#include "store/sqlite_store.h"
#include "util/file.h"
#include "util/subprocess.h"
#include "util/testing/status_printer.h"
#include "util/unique_fd.h"

namespace tpufleet {
namespace {

using std::chrono::seconds;
using Mono = std::chrono::steady_clock;

// How long a forward may take to say it works: an ssh login on a loaded machine.
constexpr seconds kForwardStartTimeout{30};
// How long tpufleet forward may take to end ssh and exit after a signal.
constexpr seconds kForwardStopTimeout{10};

class SshCommandsTest : public TestSshdFixture {
 protected:
  void SetUpWithSshd() override {
    state_ = sshd_->dir() + "/state";
    // tpufleet's own fleet key, which sshd trusts besides its test client key.
    Result<FleetKey> key = EnsureFleetKey(state_ + "/ssh");
    ASSERT_TRUE(key.ok()) << key.status().ToString();
    std::string trusted = ReadFile(sshd_->dir() + "/authorized_keys").value();
    ASSERT_EQ(
        WriteFileAtomic(sshd_->dir() + "/authorized_keys", trusted + key->public_key + "\n", 0600),
        Status::Ok());
    // pod: two workers, both this sshd. dead: a worker whose SSH port nothing listens on.
    std::vector<NodeRecord> nodes = {Node("pod", sshd_->port(), 2),
                                     Node("dead", ClosedLoopbackPort(), 1)};
    std::unique_ptr<SqliteStore> store = SqliteStore::Open(state_ + "/state.db").value();
    for (const NodeRecord& n : nodes) {
      ASSERT_EQ(store->PutNode(n), Status::Ok());
    }
    ASSERT_EQ(WriteSshFiles(state_ + "/ssh", SshEntriesFor(nodes, key->private_key_path)),
              Status::Ok());
  }

  NodeRecord Node(const std::string& name, int port, int workers) const {
    NodeRecord n;
    n.fleet = "lab";
    n.name = name;
    n.provider = "gcp-tpu";
    n.state = NodeState::kReady;
    n.login = sshd_->user();
    n.port = port;
    for (int i = 0; i < workers; ++i) {
      n.workers.push_back({i, "127.0.0.1", "", sshd_->host_key(), true, ""});
    }
    return n;
  }

  // How a user's shell would run tpufleet: their PATH, this state dir.
  SpawnOptions Options() const {
    SpawnOptions o;
    const char* path = std::getenv("PATH");
    o.env = {"PATH=" + std::string(path ? path : "/usr/bin:/bin"), "HOME=" + sshd_->dir(),
             "TPUFLEET_STATE_DIR=" + state_};
    return o;
  }

  Result<ProgramResult> Run(std::vector<std::string> args) const {
    args.insert(args.begin(), TPUFLEET_BINARY);
    return RunSubprocess(args, "", seconds(60), Options());
  }

  std::string state_;
};

// A running `tpufleet forward`, its output on a pipe. The destructor kills and reaps it
// if a test left it running.
class ForwardProcess {
 public:
  ForwardProcess(const std::vector<std::string>& args, const SpawnOptions& options) {
    int fds[2];
    EXPECT_EQ(::pipe2(fds, O_CLOEXEC), 0);
    output_ = UniqueFd(fds[0]);
    UniqueFd write_end(fds[1]);
    std::vector<std::string> argv = {TPUFLEET_BINARY, "forward"};
    argv.insert(argv.end(), args.begin(), args.end());
    Result<pid_t> pid = SpawnSubprocess(argv, options, {-1, write_end.get()});
    EXPECT_TRUE(pid.ok()) << pid.status().ToString();
    pid_ = pid.ok() ? *pid : -1;
  }
  ~ForwardProcess() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  ForwardProcess(const ForwardProcess&) = delete;
  ForwardProcess& operator=(const ForwardProcess&) = delete;

  /// The first line it prints (stdout and stderr), or everything it printed when it
  /// ended or the timeout passed first.
  std::string FirstLine() {
    auto deadline = Mono::now() + kForwardStartTimeout;
    while (output_text_.find('\n') == std::string::npos && Mono::now() < deadline) {
      pollfd p{output_.get(), POLLIN, 0};
      if (::poll(&p, 1, 100) > 0) {
        char buf[1024];
        ssize_t n = ::read(output_.get(), buf, sizeof buf);
        if (n <= 0) {
          break;
        }
        output_text_.append(buf, static_cast<size_t>(n));
      }
    }
    return output_text_.substr(0, output_text_.find('\n'));
  }

  /// Sends `signal` and returns the exit code (-1 when it did not exit in time).
  int Stop(int signal) {
    ::kill(pid_, signal);
    auto deadline = Mono::now() + kForwardStopTimeout;
    int status = 0;
    while (Mono::now() < deadline) {
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return -1;
  }

 private:
  pid_t pid_ = -1;
  UniqueFd output_;
  std::string output_text_;
};

TEST_F(SshCommandsTest, SshRunsTheCommandExactlyAsTypedOnTheNamedWorker) {
  Result<ProgramResult> r =
      Run({"ssh", "pod:1", "--", "printf", "%s|", "a b", "$HOME", "it's", "*", "x;y", "-n"});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->exit_code, 0) << r->output << sshd_->Log();
  EXPECT_EQ(r->output, "a b|$HOME|it's|*|x;y|-n|");

  Result<ProgramResult> code = Run({"ssh", "pod", "--", "sh", "-c", "exit 7"});
  ASSERT_TRUE(code.ok()) << code.status().ToString();
  EXPECT_EQ(code->exit_code, 7) << "the remote command's exit status is tpufleet's: "
                                << code->output;
}

TEST_F(SshCommandsTest, ForwardCarriesConnectionsUntilCtrlCAndLeavesNothing) {
  EchoService service;
  ASSERT_GT(service.port(), 0);
  // The service holds its own port here, so tpufleet picks another local one.
  ForwardProcess forward({"pod:1", std::to_string(service.port()), "--json"}, Options());
  std::string line = forward.FirstLine();
  nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  ASSERT_TRUE(j.is_object()) << line << "\n" << sshd_->Log();
  int local = j.value("local_port", 0);
  EXPECT_NE(local, service.port());
  EXPECT_EQ(j.value("url", ""), "http://127.0.0.1:" + std::to_string(local) + "/");
  EXPECT_EQ(j.value("remote_port", 0), service.port());
  EXPECT_EQ(j.value("worker", ""), "pod/w1");

  EXPECT_EQ(Exchange(local, "ping\n"), "echo:ping\n");

  EXPECT_EQ(forward.Stop(SIGINT), 0);
  EXPECT_EQ(Exchange(local, "again\n").rfind("<connect or write failed", 0), 0u)
      << "ssh no longer listens: it was ended with tpufleet";
}

TEST_F(SshCommandsTest, ForwardToAChosenLocalPortStopsOnSigterm) {
  EchoService service;
  int local = ClosedLoopbackPort();
  ForwardProcess forward({"pod", std::to_string(service.port()) + ":" + std::to_string(local)},
                         Options());
  EXPECT_EQ(forward.FirstLine(), "Forwarding http://127.0.0.1:" + std::to_string(local) +
                                     "/ -> pod/w0:" + std::to_string(service.port()) +
                                     " (Ctrl-C to stop)");
  EXPECT_EQ(Exchange(local, "x"), "echo:x");
  EXPECT_EQ(forward.Stop(SIGTERM), 0);
}

TEST_F(SshCommandsTest, ForwardThatSshCannotMakeSaysWhy) {
  Result<ProgramResult> r = Run({"forward", "dead", "8888"});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->exit_code, 1);
  EXPECT_NE(r->output.find("tpufleet: error: could not forward to dead/w0:8888: ssh exited "
                           "with status 255"),
            std::string::npos)
      << r->output;
  EXPECT_NE(r->output.find("Connection refused"), std::string::npos) << r->output;
}

}  // namespace
}  // namespace tpufleet
