#include "control/port_forward.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ostream>
#include <thread>

#include "util/file.h"
#include "util/strings.h"
#include "util/subprocess.h"

namespace tpufleet {
namespace {

// How often the destructor looks whether ssh has exited after SIGTERM.
constexpr std::chrono::milliseconds kStopPoll{10};

sockaddr_in Loopback(int port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(port));
  return a;
}

// Binds a socket to 127.0.0.1:`port` as ssh's listener would (SO_REUSEADDR) and lets it
// go: 0 when that worked (the port is free for ssh), else the errno.
int TryBind(int port) {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (fd.get() < 0) {
    return errno;
  }
  int one = 1;
  ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a = Loopback(port);
  return ::bind(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 ? 0 : errno;
}

// A port on 127.0.0.1 the kernel says is free.
Result<int> KernelPickedPort() {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in a = Loopback(0);
  socklen_t len = sizeof a;
  if (fd.get() < 0 || ::bind(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    return ErrnoStatus("a free port on 127.0.0.1", errno);
  }
  return static_cast<int>(ntohs(a.sin_port));
}

}  // namespace

std::chrono::seconds ForwardRetryDelay(int attempt) {
  std::chrono::seconds d = kForwardRetryFirst;
  for (int i = 0; i < attempt && d < kForwardRetryMax; ++i) {
    d *= 2;
  }
  return std::min(d, kForwardRetryMax);
}

bool PermanentForwardFailure(std::string_view ssh_said) {
  // ssh's own words (OpenSSH's sshconnect.c, channels.c), and ssh-proxy's for a node
  // that is not running (control/resolve.cc).
  for (std::string_view permanent :
       {"Host key verification failed", "REMOTE HOST IDENTIFICATION HAS CHANGED",
        "Permission denied", "Address already in use", "cannot listen to port",
        "none of its workers can be reached", "no node named"}) {
    if (ssh_said.find(permanent) != std::string_view::npos) {
      return true;
    }
  }
  return false;
}

Result<int> ChooseLocalPort(int remote_port, std::optional<int> wanted) {
  if (!wanted) {
    return TryBind(remote_port) == 0 ? remote_port : KernelPickedPort();
  }
  int err = TryBind(*wanted);
  std::string where = "127.0.0.1:" + std::to_string(*wanted);
  if (err == EADDRINUSE) {
    return FailedPreconditionError(where +
                                   " is in use; pick another local port (PORT:LOCAL), "
                                   "or leave LOCAL out for a free one");
  }
  if (err == EACCES) {
    return PermissionDeniedError("this user may not listen on " + where +
                                 "; pick a local port above 1023");
  }
  return err == 0 ? Result<int>(*wanted) : Result<int>(ErrnoStatus(where, err));
}

Result<std::unique_ptr<PortForward>> PortForward::Spawn(const std::vector<std::string>& argv,
                                                        int local_port) {
  TPUFLEET_ASSIGN_OR_RETURN(Pipe pipe, MakePipe());
  SpawnOptions options;
  options.search_path = true;
  options.inherit_env = true;
  TPUFLEET_ASSIGN_OR_RETURN(pid_t pid, SpawnSubprocess(argv, options, {-1, pipe.write.get()}));
  ::fcntl(pipe.read.get(), F_SETFL, O_NONBLOCK);
  return std::unique_ptr<PortForward>(new PortForward(pid, std::move(pipe.read), local_port));
}

PortForward::~PortForward() {
  if (pid_ <= 0) {
    return;
  }
  ::kill(pid_, SIGTERM);
  for (auto waited = std::chrono::milliseconds(0); waited < kSshStopGrace; waited += kStopPoll) {
    if (Reaped()) {
      return;
    }
    std::this_thread::sleep_for(kStopPoll);
  }
  ::kill(pid_, SIGKILL);
  while (::waitpid(pid_, &wait_status_, 0) < 0 && errno == EINTR) {
  }
}

bool PortForward::Reaped() {
  if (pid_ > 0 && ::waitpid(pid_, &wait_status_, WNOHANG) == pid_) {
    pid_ = -1;
  }
  return pid_ <= 0;
}

void PortForward::ReadOutput(std::ostream& log) {
  char buf[4096];
  while (output_.get() >= 0) {
    ssize_t n = ::read(output_.get(), buf, sizeof buf);
    if (n > 0) {
      if (listening_) {
        log.write(buf, n) << std::flush;
      } else {
        early_output_.append(buf, static_cast<size_t>(n));
        if (early_output_.size() > kMaxProgramOutput) {
          early_output_.erase(0, early_output_.size() - kMaxProgramOutput);
        }
      }
      continue;
    }
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n < 0 && errno == EAGAIN) {
      return;
    }
    output_.Reset();  // its end (ssh exited), or an error reading it
  }
}

PortForward::Event PortForward::Wait(int stop_fd, std::ostream& log) {
  while (true) {
    pollfd fds[2] = {{stop_fd, POLLIN, 0}, {output_.get(), POLLIN, 0}};
    // While ssh runs with its output open, only the two descriptors can bring news;
    // before it listens, or once its output closed, look again every kListenPoll.
    bool quiet = listening_ && output_.get() >= 0;
    int n =
        ::poll(fds, output_.get() >= 0 ? 2 : 1, quiet ? -1 : static_cast<int>(kListenPoll.count()));
    if (n > 0 && fds[0].revents != 0) {
      return Event::kStopped;
    }
    ReadOutput(log);
    if (Reaped()) {
      ReadOutput(log);  // what it wrote just before it exited
      // Ctrl-C reaches ssh too: its exit may be seen before the stop is.
      pollfd stop{stop_fd, POLLIN, 0};
      return ::poll(&stop, 1, 0) > 0 ? Event::kStopped : Event::kExited;
    }
    if (!listening_ && TryBind(local_port_) == EADDRINUSE) {
      listening_ = true;
      log << early_output_ << std::flush;
      early_output_.clear();
      return Event::kListening;
    }
  }
}

std::string PortForward::ExitMessage() const {
  std::string how = WIFSIGNALED(wait_status_)
                        ? "ssh was killed by signal " + std::to_string(WTERMSIG(wait_status_))
                        : "ssh exited with status " + std::to_string(WEXITSTATUS(wait_status_));
  std::string_view said = Trim(early_output_);
  return said.empty() ? how : how + ": " + std::string(said);
}

Result<std::unique_ptr<Forward>> SshForwarder::Start(const std::vector<std::string>& argv,
                                                     int local_port) {
  TPUFLEET_ASSIGN_OR_RETURN(std::unique_ptr<PortForward> forward,
                            PortForward::Spawn(argv, local_port));
  return std::unique_ptr<Forward>(std::move(forward));
}

}  // namespace tpufleet
