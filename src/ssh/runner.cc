#include "ssh/runner.h"

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <pwd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "core/fleet_spec.h"
#include "ssh/openssh.h"
#include "ssh/ssh_files.h"
#include "util/file.h"
#include "util/strings.h"
#include "util/unique_fd.h"

namespace tpufleet {
namespace {

using Mono = std::chrono::steady_clock;

/// ssh-keygen -F reads one file; anything longer is a stalled disk.
constexpr std::chrono::milliseconds kKeygenLookupTimeout{10'000};
/// What ssh says when the server's key is not the pinned one (or none is pinned).
constexpr char kHostKeyFailed[] = "Host key verification failed";
/// ssh-keyscan's own wait for a host, in whole seconds (its -T).
constexpr std::chrono::seconds kKeyscanTimeout{5};
/// How much of a greeting is read looking for "SSH-": RFC 4253 §4.2 lets a server send
/// other lines first, each at most 255 bytes; a few of them is plenty.
constexpr size_t kMaxGreetingBytes = 2048;

// "host:port", "[v6]:port": for messages.
std::string HostPort(const std::string& address, int port) {
  if (address.find(':') != std::string::npos) {
    return "[" + address + "]:" + std::to_string(port);
  }
  return address + ":" + std::to_string(port);
}

int RemainingMs(Mono::time_point deadline) {
  auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Mono::now()).count();
  return static_cast<int>(std::max<decltype(left)>(left, 0));
}

// Polls `fd` for `events` until `deadline`. False on the deadline.
bool WaitFor(int fd, short events, Mono::time_point deadline) {
  while (true) {
    int ms = RemainingMs(deadline);
    if (ms == 0) {
      return false;
    }
    pollfd p{fd, events, 0};
    int n = ::poll(&p, 1, ms);
    if (n > 0) {
      return true;
    }
    if (n < 0 && errno != EINTR) {
      return true;  // let the following call report the error
    }
  }
}

// One connect to one resolved address, by `deadline`; the socket is non-blocking.
Result<UniqueFd> ConnectAddress(const addrinfo& ai, const std::string& where,
                                Mono::time_point deadline, std::chrono::milliseconds timeout) {
  UniqueFd fd(
      ::socket(ai.ai_family, ai.ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai.ai_protocol));
  if (fd.get() < 0) {
    return UnavailableError(where + ": socket: " + std::strerror(errno));
  }
  if (::connect(fd.get(), ai.ai_addr, ai.ai_addrlen) != 0) {
    if (errno != EINPROGRESS) {
      return UnavailableError(where + ": " + std::strerror(errno));
    }
    if (!WaitFor(fd.get(), POLLOUT, deadline)) {
      return TimeoutError(where + ": no answer within " + std::to_string(timeout.count()) +
                          " ms");
    }
    int err = 0;
    socklen_t len = sizeof err;
    ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) {
      return UnavailableError(where + ": " + std::strerror(err));
    }
  }
  return fd;
}

// Connects to address:port (each of its addresses in turn) by `deadline`.
Result<UniqueFd> Connect(const std::string& address, int port, Mono::time_point deadline,
                         std::chrono::milliseconds timeout) {
  std::string where = HostPort(address, port == 0 ? 22 : port);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* list = nullptr;
  // getaddrinfo cannot be given a deadline; a resolver that hangs holds this thread.
  int err = ::getaddrinfo(address.c_str(), std::to_string(port == 0 ? 22 : port).c_str(), &hints,
                          &list);
  if (err != 0) {
    return UnavailableError(where + ": cannot resolve " + address + ": " + ::gai_strerror(err));
  }
  Result<UniqueFd> last = UnavailableError(where + ": no address");
  for (addrinfo* ai = list; ai != nullptr; ai = ai->ai_next) {
    last = ConnectAddress(*ai, where, deadline, timeout);
    if (last.ok() || Mono::now() >= deadline) {
      break;
    }
  }
  ::freeaddrinfo(list);
  return last;
}

// Reads the server's greeting on connected `fd` until an "SSH-" line, by `deadline`.
Status ReadGreeting(int fd, const std::string& where, Mono::time_point deadline,
                    std::chrono::milliseconds timeout) {
  std::string greeting;
  while (greeting.size() < kMaxGreetingBytes) {
    if (StartsWith(greeting, "SSH-") || greeting.find("\nSSH-") != std::string::npos) {
      return Status::Ok();
    }
    if (!WaitFor(fd, POLLIN, deadline)) {
      return TimeoutError("ssh on " + where + ": no answer within " +
                          std::to_string(timeout.count()) + " ms");
    }
    char buf[512];
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) {
      continue;
    }
    if (n < 0) {
      return UnavailableError("ssh on " + where + ": " + std::strerror(errno));
    }
    if (n == 0) {
      return UnavailableError("ssh on " + where +
                              ": the connection closed before an SSH "
                              "greeting");
    }
    greeting.append(buf, static_cast<size_t>(n));
  }
  return UnavailableError("ssh on " + where + ": the server there does not speak SSH");
}

// The "TYPE BASE64" keys of lines "HOSTS TYPE BASE64 [COMMENT]", as ssh-keygen -F and
// ssh-keyscan print them; "#" lines are their notes, and "@revoked"/"@cert-authority"
// lines are not host keys.
std::vector<std::string> HostKeysOf(const std::string& output) {
  std::vector<std::string> keys;
  for (const std::string& line : Split(output, '\n')) {
    std::vector<std::string> words;
    for (std::string& w : Split(Trim(line), ' ')) {
      if (!w.empty()) {
        words.push_back(std::move(w));
      }
    }
    if (words.size() < 3 || words[0][0] == '#' || words[0][0] == '@') {
      continue;
    }
    std::string key = words[1] + " " + words[2];
    if (CheckSshPublicKey(key).ok()) {
      keys.push_back(key);
    }
  }
  return keys;
}

std::string HomeDir() {
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
    return home;
  }
  passwd pw;
  passwd* found = nullptr;
  char buf[4096];
  if (::getpwuid_r(::geteuid(), &pw, buf, sizeof buf, &found) == 0 && found != nullptr) {
    return found->pw_dir;
  }
  return "/";
}

// What ssh's run says, as SshRunner::Run returns it.
Result<ProgramResult> SshOutcome(std::string_view alias, std::chrono::milliseconds timeout,
                             Result<ProgramResult> r) {
  if (!r.ok()) {
    if (r.status().code() == StatusCode::kTimeout) {
      return TimeoutError("ssh " + std::string(alias) + ": the script did not finish within " +
                          std::to_string(timeout.count()) + " ms; ssh was killed");
    }
    return r.status();
  }
  if (r->exit_code == 255) {
    if (r->output.find(kHostKeyFailed) != std::string::npos) {
      // ssh's warning names the offered key ("…sent by the remote host is\nSHA256:…").
      size_t at = r->output.find("SHA256:");
      std::string offered =
          at == std::string::npos
              ? ""
              : r->output.substr(at, r->output.find_first_of(" .\r\n", at) - at);
      return FailedPreconditionError(
          "ssh " + std::string(alias) + ": " + kHostKeyFailed +
          (offered.empty() ? "" : " (the server offered " + offered + ")"));
    }
    return UnavailableError("ssh " + std::string(alias) + ": " +
                            LastSshLine(r->output, "no message"));
  }
  return r;
}

// One program run by OpenSshRunner::Start: its stdin fed and its output read as the loop
// says they are ready, its process group killed at the timeout, reaped once its output
// ends. Owned by the loop's callbacks (shared), so it lives until it has reported.
class SshChild : public std::enable_shared_from_this<SshChild> {
 public:
  using Report = std::function<void(Result<ProgramResult>)>;

  static Result<std::shared_ptr<SshChild>> Spawn(EventLoop& loop,
                                                 const std::vector<std::string>& argv,
                                                 std::string_view input) {
    // Its stdin is a socket: send's MSG_NOSIGNAL makes a child that stopped reading an
    // EPIPE, where a pipe's write would raise SIGPIPE and kill this process.
    int in[2], out[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, in) != 0) {
      return ErrnoStatus("socketpair", errno);
    }
    UniqueFd in_read(in[0]), in_write(in[1]);
    if (::pipe2(out, O_CLOEXEC) != 0) {
      return ErrnoStatus("pipe", errno);
    }
    UniqueFd out_read(out[0]), out_write(out[1]);
    SpawnOptions options;  // as RunUserCommand runs it: the user's ssh, in a group of its own
    options.search_path = options.inherit_env = options.own_process_group = true;
    Result<pid_t> pid = SpawnSubprocess(argv, options, {in_read.get(), out_write.get()});
    if (!pid.ok()) {
      return WithOpenSshHint(pid.status());
    }
    for (int fd : {in_write.get(), out_read.get()}) {
      ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
    }
    auto child = std::shared_ptr<SshChild>(new SshChild(loop, *pid));
    child->in_ = std::move(in_write);
    child->out_ = std::move(out_read);
    child->input_ = std::string(input);
    return child;
  }

  // Starts watching; `report` gets the result once the output ended and it was reaped.
  void Watch(std::chrono::milliseconds timeout, Report report) {
    report_ = std::move(report);
    std::shared_ptr<SshChild> self = shared_from_this();
    out_watch_ = loop_.Watch(out_.get(), POLLIN, [self](short, Clock::MonoTime) { self->Read(); });
    in_watch_ = loop_.Watch(in_.get(), POLLOUT, [self](short, Clock::MonoTime) { self->Feed(); });
    deadline_ = loop_.After(timeout, [self](Clock::MonoTime) {
      self->timed_out_ = true;
      ::kill(-self->pid_, SIGKILL);  // its output ends with it: Read then reaps it
    });
  }

 private:
  SshChild(EventLoop& loop, pid_t pid) : loop_(loop), pid_(pid) {}

  void Feed() {
    while (written_ < input_.size()) {
      ssize_t n =
          ::send(in_.get(), input_.data() + written_, input_.size() - written_, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) {
        continue;
      }
      if (n < 0 && errno == EAGAIN) {
        return;  // the pipe is full: the loop says when it takes more
      }
      if (n < 0) {
        break;  // it stopped reading (EPIPE): no error, as with RunSubprocess
      }
      written_ += static_cast<size_t>(n);
    }
    loop_.Remove(in_watch_);
    in_.Reset();  // EOF for the script's bash
  }

  void Read() {
    char buf[16 * 1024];
    while (true) {
      ssize_t n = ::read(out_.get(), buf, sizeof buf);
      if (n < 0 && errno == EINTR) {
        continue;
      }
      if (n < 0 && errno == EAGAIN) {
        return;
      }
      if (n <= 0) {
        break;  // the end of its output (or a broken pipe): it is exiting
      }
      output_.append(buf, static_cast<size_t>(n));
      if (output_.size() > 2 * kMaxProgramOutput) {  // the last kMaxProgramOutput kept
        output_.erase(0, output_.size() - kMaxProgramOutput);
      }
    }
    for (EventLoop::Id id : {out_watch_, in_watch_, deadline_}) {
      loop_.Remove(id);
    }
    in_.Reset();
    out_.Reset();
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    if (output_.size() > kMaxProgramOutput) {
      output_.erase(0, output_.size() - kMaxProgramOutput);
    }
    Report report = std::move(report_);
    if (timed_out_) {
      report(TimeoutError("killed after its timeout"));
      return;
    }
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    report(ProgramResult{code, std::move(output_)});
  }

  EventLoop& loop_;
  const pid_t pid_;
  UniqueFd in_, out_;
  std::string input_;
  size_t written_ = 0;
  std::string output_;
  bool timed_out_ = false;
  EventLoop::Id out_watch_ = 0, in_watch_ = 0, deadline_ = 0;
  Report report_;
};

}  // namespace

OpenSshRunner::OpenSshRunner(std::string config_path, std::string ssh_binary)
    : config_path_(std::move(config_path)), ssh_binary_(std::move(ssh_binary)) {}

std::vector<std::string> OpenSshRunner::Argv(std::string_view alias,
                                             std::chrono::milliseconds timeout) const {
  auto connect_s = std::chrono::ceil<std::chrono::seconds>(
      std::clamp<std::chrono::milliseconds>(timeout, std::chrono::seconds(1), kSshConnectTimeout));
  // "--" ends ssh's options; CheckSshAlias already keeps a '-' from starting the alias.
  return {ssh_binary_,  "-F",
          config_path_, "-T",
          "-o",         "BatchMode=yes",
          "-o",         "ConnectTimeout=" + std::to_string(connect_s.count()),
          "--",         std::string(alias),
          "bash",       "-s"};
}

Result<ProgramResult> OpenSshRunner::Run(std::string_view alias, std::string_view script,
                                     std::chrono::milliseconds timeout) {
  TPUFLEET_TRY(CheckSshAlias(alias));
  return SshOutcome(alias, timeout, RunOpenSsh(Argv(alias, timeout), script, timeout));
}

void SshRunner::Start(EventLoop& loop, std::string_view alias, std::string_view script,
                      std::chrono::milliseconds timeout, Done done) {
  loop.After(std::chrono::nanoseconds(0),
             [this, a = std::string(alias), s = std::string(script), timeout,
              done = std::move(done)](Clock::MonoTime) { done(Run(a, s, timeout)); });
}

void OpenSshRunner::Start(EventLoop& loop, std::string_view alias, std::string_view script,
                          std::chrono::milliseconds timeout, Done done) {
  Status checked = CheckSshAlias(alias);
  Result<std::shared_ptr<SshChild>> child =
      checked.ok() ? SshChild::Spawn(loop, Argv(alias, timeout), script)
                   : Result<std::shared_ptr<SshChild>>(checked);
  if (!child.ok()) {
    loop.After(std::chrono::nanoseconds(0),
               [st = child.status(), done = std::move(done)](Clock::MonoTime) { done(st); });
    return;
  }
  (*child)->Watch(timeout, [a = std::string(alias), timeout,
                            done = std::move(done)](Result<ProgramResult> r) {
    done(SshOutcome(a, timeout, std::move(r)));
  });
}

Status ProbeSsh(const std::string& address, int port, std::chrono::milliseconds timeout) {
  auto deadline = Mono::now() + timeout;
  Result<UniqueFd> fd = Connect(address, port, deadline, timeout);
  if (!fd.ok()) {
    return Status(fd.status().code(), "ssh on " + fd.status().message());
  }
  return ReadGreeting(fd->get(), HostPort(address, port == 0 ? 22 : port), deadline, timeout);
}

Result<UniqueFd> ConnectTcp(const std::string& address, int port,
                            std::chrono::milliseconds timeout) {
  TPUFLEET_ASSIGN_OR_RETURN(UniqueFd fd, Connect(address, port, Mono::now() + timeout, timeout));
  int flags = ::fcntl(fd.get(), F_GETFL);
  if (flags < 0 || ::fcntl(fd.get(), F_SETFL, flags & ~O_NONBLOCK) != 0) {
    return ErrnoStatus("fcntl", errno);
  }
  return fd;
}

Result<std::vector<std::string>> KnownHostKeys(const std::string& host, int port,
                                               const std::string& known_hosts) {
  TPUFLEET_TRY(CheckHostAddress(host));
  std::string path = known_hosts.empty() ? HomeDir() + "/.ssh/known_hosts" : known_hosts;
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    return ErrnoStatus(path, errno);
  }
  std::string name = (port == 0 || port == 22) ? host : "[" + host + "]:" + std::to_string(port);
  TPUFLEET_ASSIGN_OR_RETURN(ProgramResult r, RunOpenSsh({"ssh-keygen", "-F", name, "-f", path}, "",
                                                        kKeygenLookupTimeout));
  if (r.exit_code != 0 && r.exit_code != 1) {
    return InternalError("ssh-keygen -F " + name + " -f " + path + " failed (exit " +
                         std::to_string(r.exit_code) +
                         "): " + LastSshLine(r.output, "no message"));
  }
  std::vector<std::string> keys = HostKeysOf(r.output);  // HOSTS hashed or not
  if (keys.empty()) {
    return NotFoundError("no host key for " + name + " in " + path);
  }
  return keys;
}

Result<std::vector<std::string>> ScanHostKeys(const std::string& host, int port) {
  TPUFLEET_TRY(CheckHostAddress(host));
  std::string name = HostPort(host, port == 0 ? 22 : port);
  TPUFLEET_ASSIGN_OR_RETURN(
      ProgramResult r, RunOpenSsh({"ssh-keyscan", "-T", std::to_string(kKeyscanTimeout.count()),
                                   "-p", std::to_string(port == 0 ? 22 : port), "--", host},
                                  "", kKeyscanTimeout * 2));
  std::vector<std::string> keys = HostKeysOf(r.output);
  if (keys.empty()) {
    return UnavailableError("ssh on " + name + " offered no host key (ssh-keyscan: " +
                            LastSshLine(r.output, "no message") + ")");
  }
  return keys;
}

std::string PreferredHostKey(const std::vector<std::string>& keys) {
  auto ed25519 = std::find_if(keys.begin(), keys.end(), [](const std::string& k) {
    return StartsWith(k, "ssh-ed25519 ");
  });
  return ed25519 != keys.end() ? *ed25519 : keys.empty() ? "" : keys.front();
}

}  // namespace tpufleet
