#include "emulator/hosts/worker_init.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "emulator/hosts/ssh_keys.h"
#include "emulator/hosts/system_programs.h"
#include "emulator/hosts/worker_init_internal.h"
#include "emulator/hosts/worker_setup.h"
#include "util/file.h"
#include "util/secret.h"
#include "util/strings.h"

namespace tpufleet::emulator::hosts::init {
namespace {

using std::chrono::milliseconds;

// How often boot checks whether sshd listens yet: it takes a few milliseconds.
constexpr milliseconds kSshdPollInterval{5};
// The longest the loop sleeps with nothing due: bounds how late a timer fires.
constexpr milliseconds kMaxLoopSleep{1000};
// Pending connections on the metadata port; clients are a handful of local processes.
constexpr int kListenBacklog = 128;

int g_status_fd = kStatusFd;

// Reports a failed boot to the machine and powers off.
[[noreturn]] void FailBoot(const std::string& m) {
  std::string one_line = m;
  for (char& c : one_line) {
    if (c == '\n' || c == '\r') {
      c = ' ';
    }
  }
  Say("boot failed: " + one_line);
  if (g_status_fd >= 0) {
    std::string line = "ERROR " + one_line + "\n";
    [[maybe_unused]] ssize_t n = ::write(g_status_fd, line.data(), line.size());
  }
  ::_exit(1);
}

// The seed of the metadata server's tokens: a boot without one must not go on.
std::string TokenSeed() {
  Result<std::string> seed = RandomHex(8);
  if (!seed.ok()) {
    FailBoot(seed.status().ToString());
  }
  return std::move(seed).value();
}

void CheckBoot(const Status& s) {
  if (!s.ok()) {
    FailBoot(s.message());
  }
}

bool LifelineGone() {
  pollfd p{kLifelineFd, POLLIN, 0};
  return ::poll(&p, 1, 0) > 0 && (p.revents & (POLLHUP | POLLERR | POLLNVAL)) != 0;
}


}  // namespace

Worker::Worker(WorkerPaths paths) : paths_(std::move(paths)), server_(TokenSeed()) {}

Result<std::string> Worker::ReadDocument(WorkerDocument* doc) {
  TPUFLEET_ASSIGN_OR_RETURN(std::string text,
                            ReadFile(std::string(kMetaDir) + "/" + kDocumentName));
  TPUFLEET_ASSIGN_OR_RETURN(*doc, ParseWorkerDocument(text));
  return text;
}

void Worker::ApplyDocument(const std::string& text, const WorkerDocument& doc) {
  if (Status s = server_.SetDocument(text); !s.ok()) {
    Say(s.ToString());
  }
  if (Status s = WriteHostsFiles(doc); !s.ok()) {
    Say(s.ToString());
  }
  if (Status s = accelerators_.Apply(doc.accelerators.removed); !s.ok()) {
    Say(s.ToString());
  }
  if (Status s = disks_.Apply(doc.disks); !s.ok()) {
    Say("data disks: " + s.ToString());
  }
  std::vector<std::string> skipped;
  std::vector<SshKeyEntry> keys = ParseSshKeys(doc.ssh_keys, &skipped);
  for (const std::string& why : skipped) {
    Say("ssh-keys: skipped " + why);
  }
  if (Status s = agent_.Sync(keys); !s.ok()) {
    Say(s.ToString());
  }
  doc_ = doc;
}

void Worker::WriteApplied() {
  Status s = WriteFileAtomic(std::string(kMetaDir) + "/applied",
                             std::to_string(doc_.version) + "\n", 0644);
  if (!s.ok()) {
    Say(s.ToString());
  }
}

void Worker::Boot() {
  if (LifelineGone()) {
    FailBoot("the emulator is gone");
  }
  WorkerDocument doc;
  Result<std::string> text = InternalError("no worker document");
  CheckBoot(SetUpMounts(paths_, [&]() -> Status {
    text = ReadDocument(&doc);
    TPUFLEET_TRY(text.status());
    TPUFLEET_TRY(disks_.SetUp());
    return accelerators_.SetUp(doc.accelerators);
  }));
  if (::sethostname(doc.hostname.data(), doc.hostname.size()) != 0) {
    FailBoot(Errno("sethostname"));
  }

  // Wait for the machine to put eth0 into this namespace.
  auto go_deadline = Mono::now() + kGoTimeout;
  while (true) {
    auto left = std::chrono::duration_cast<milliseconds>(go_deadline - Mono::now());
    if (left.count() <= 0) {
      FailBoot("the machine did not set up the network in time");
    }
    pollfd p[2] = {{kGoFd, POLLIN, 0}, {kLifelineFd, POLLIN, 0}};
    if (::poll(p, 2, static_cast<int>(left.count())) < 0 && errno != EINTR) {
      FailBoot(Errno("poll"));
    }
    if ((p[1].revents & (POLLHUP | POLLERR | POLLNVAL)) != 0) {
      FailBoot("the emulator is gone");
    }
    if (p[0].revents != 0) {
      char c;
      if (::read(kGoFd, &c, 1) != 1) {
        FailBoot("the machine gave up on this worker");
      }
      break;
    }
  }
  ::close(kGoFd);
  CheckBoot(SetUpNetwork(doc));

  Result<std::string> host_key = EnsureHostKey(doc.hostname);
  CheckBoot(host_key.status());
  CheckBoot(WriteSshdConfig());
  ApplyDocument(*text, doc);

  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  int one = 1;
  ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(kMetadataPort);
  ::inet_pton(AF_INET, kMetadataAddress, &addr.sin_addr);
  if (listen_fd_ < 0 || ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(listen_fd_, kListenBacklog) != 0) {
    FailBoot(Errno("metadata server on 169.254.169.254:80"));
  }

  // Everything that needs more than a worker's root may have is done: mounts, network,
  // hostname, port 80.
  CheckBoot(DropCapabilities());

  Result<std::string> sshd = FindProgram("sshd", "openssh-server");
  CheckBoot(sshd.status());
  sshd_path_ = *sshd;
  Result<pid_t> pid = StartSshd(sshd_path_);
  CheckBoot(pid.status());
  sshd_pid_ = *pid;
  auto sshd_deadline = Mono::now() + kSshdStartTimeout;
  while (!Port22Listening()) {
    int status = 0;
    if (::waitpid(sshd_pid_, &status, WNOHANG) == sshd_pid_) {
      FailBoot("sshd exited at start (its messages are in worker.log)");
    }
    if (Mono::now() > sshd_deadline || LifelineGone()) {
      FailBoot("sshd did not listen on port 22 in time");
    }
    ::usleep(static_cast<useconds_t>(
        std::chrono::duration_cast<std::chrono::microseconds>(kSshdPollInterval).count()));
  }
  StartUnits();
  WriteApplied();
  std::string ready = "READY " + *host_key + "\n";
  if (::write(g_status_fd, ready.data(), ready.size()) != static_cast<ssize_t>(ready.size())) {
    FailBoot(Errno("status pipe"));
  }
  ::close(g_status_fd);
  g_status_fd = -1;
  Say("up: " + doc.hostname + " " + doc.address);
}

void Worker::Reload() {
  WorkerDocument doc;
  Result<std::string> text = ReadDocument(&doc);
  if (!text.ok()) {
    Say("metadata reload: " + text.status().ToString());
    return;
  }
  if (doc.version == doc_.version) {
    return;
  }
  ApplyDocument(*text, doc);
  // Long-polls whose value changed get their answer now.
  auto now = Mono::now();
  for (auto& c : conns_) {
    if (!c->parked) {
      continue;
    }
    HttpResponse r = server_.Render(c->request, now);
    if (r.etag != c->wait_etag) {
      c->parked = false;
      Send(*c, r, c->request.method == "HEAD");
    }
  }
  WriteApplied();
}

void Worker::Reap() {
  while (true) {
    int status = 0;
    pid_t pid = ::waitpid(-1, &status, WNOHANG);
    if (pid <= 0) {
      return;
    }
    if (units_.Exited(pid, status, Mono::now())) {
      continue;
    }
    if (pid == sshd_pid_) {
      sshd_pid_ = -1;
      if (!shutting_down_) {
        Say("sshd exited; restarting it");
        sshd_restart_at_ = Mono::now() + kSshdRestartDelay;
      }
    }
  }
}

namespace {

// The wants directory as the worker itself wrote it: in the /etc overlay's upper layer,
// or /etc's where /etc is the worker's copy (worker_setup.cc: no overlayfs).
std::string EnabledHere() {
  struct stat st;
  bool copy = ::stat((std::string(kDiskMount) + "/etc-copy").c_str(), &st) == 0;
  return copy ? kWantsDir : std::string(kDiskMount) + "/upper" + kWantsDir;
}

}  // namespace

void Worker::StartUnits() {
  std::vector<std::string> skipped;
  std::vector<BootUnit> units = FindBootUnits(kWantsDir, EnabledHere(), &skipped);
  for (const std::string& why : skipped) {
    Say("unit " + why + ": not started");
  }
  units_.Start(std::move(units), Mono::now());
}

void Worker::BeginShutdown() {
  if (shutting_down_) {
    return;
  }
  shutting_down_ = true;
  units_.Stop();
  shutdown_deadline_ = Mono::now() + kInitStopGrace;
  // As PID 1 of the worker, kill(-1) reaches every other process on it.
  ::kill(-1, SIGTERM);
}

void Worker::Run() {
  Boot();
  sigset_t mask;
  sigemptyset(&mask);
  for (int s : {SIGCHLD, SIGTERM, SIGINT, SIGHUP}) {
    sigaddset(&mask, s);
  }
  signal_fd_ = ::signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
  if (signal_fd_ < 0) {
    Say(Errno("signalfd"));
    ::_exit(1);
  }
  Reload();  // a change that raced with boot (its SIGHUP is still pending too)
  Reap();
  while (true) {
    auto now = Mono::now();
    if (shutting_down_) {
      Reap();
      errno = 0;
      bool none_left = ::waitpid(-1, nullptr, WNOHANG) < 0 && errno == ECHILD;
      if (none_left || now >= shutdown_deadline_) {
        ::_exit(0);  // the kernel ends whatever is left on the worker
      }
    }
    if (sshd_pid_ < 0 && !shutting_down_ && now >= sshd_restart_at_) {
      Result<pid_t> pid = StartSshd(sshd_path_);
      if (pid.ok()) {
        sshd_pid_ = *pid;
      } else {
        Say(pid.status().ToString());
        sshd_restart_at_ = now + kSshdRestartDelay;
      }
    }
    std::optional<Mono::time_point> unit_due = units_.Tick(now);
    ExpireWaits(now);
    // Drop finished or idle connections.
    for (size_t i = 0; i < conns_.size();) {
      Conn& c = *conns_[i];
      bool idle = !c.parked && now - c.last_active > kIdleTimeout;
      if ((c.close_after_write && c.out.empty()) || idle) {
        ::close(c.fd);
        conns_.erase(conns_.begin() + static_cast<long>(i));
      } else {
        ++i;
      }
    }

    auto next = now + kMaxLoopSleep;
    if (shutting_down_) {
      next = std::min(next, shutdown_deadline_);
    }
    if (sshd_pid_ < 0 && !shutting_down_) {
      next = std::min(next, sshd_restart_at_);
    }
    if (unit_due) {
      next = std::min(next, *unit_due);
    }
    for (auto& c : conns_) {
      if (c->parked) {
        next = std::min(next, c->wait_deadline);
      }
    }
    std::vector<pollfd> fds = {
        {kLifelineFd, POLLIN, 0}, {signal_fd_, POLLIN, 0}, {listen_fd_, POLLIN, 0}};
    for (auto& c : conns_) {
      // A client whose unserved input already exceeds a request head (pipelined behind
      // a parked long-poll or an unread answer) is not read: the kernel's buffers push
      // back on it, instead of this process (PID 1, root, on the machine's memory)
      // keeping all it sends (issue 10). POLLRDHUP still says when it gives up.
      short events = c->in.size() > kMaxRequestHead ? POLLRDHUP : POLLIN;
      if (!c->out.empty()) {
        events |= POLLOUT;
      }
      fds.push_back({c->fd, events, 0});
    }
    const size_t first_disk_fd = fds.size();
    for (int fd : disks_.PollFds()) {
      fds.push_back({fd, POLLIN, 0});
    }
    int timeout = static_cast<int>(
        std::max<int64_t>(0, std::chrono::duration_cast<milliseconds>(next - now).count()) + 1);
    if (::poll(fds.data(), fds.size(), timeout) < 0) {
      if (errno == EINTR) {
        continue;
      }
      Say(Errno("poll"));
      ::_exit(1);
    }
    if ((fds[0].revents & (POLLHUP | POLLERR | POLLNVAL)) != 0) {
      ::_exit(0);  // the emulator died: power off at once
    }
    if (fds[1].revents != 0) {
      signalfd_siginfo si;
      bool reload = false;
      while (::read(signal_fd_, &si, sizeof si) == static_cast<ssize_t>(sizeof si)) {
        if (si.ssi_signo == SIGCHLD) {
          Reap();
        } else if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT) {
          BeginShutdown();
        } else if (si.ssi_signo == SIGHUP) {
          reload = true;
        }
      }
      if (reload) {
        Reload();
      }
    }
    if (fds[2].revents != 0) {
      Accept();
    }
    for (size_t i = first_disk_fd; i < fds.size(); ++i) {
      if (fds[i].revents != 0) {
        disks_.Serve(fds[i].fd);  // may close it: the others are still valid
      }
    }
    constexpr size_t kFixedFds = 3;
    size_t polled = first_disk_fd - kFixedFds;
    for (size_t i = 0; i < polled && i < conns_.size(); ++i) {
      Conn& c = *conns_[i];
      short rev = fds[kFixedFds + i].revents;
      if (rev == 0) {
        continue;
      }
      c.last_active = Mono::now();
      if ((rev & POLLOUT) != 0) {
        Flush(c);
      }
      if ((rev & (POLLRDHUP | POLLHUP | POLLERR)) != 0 && c.in.size() > kMaxRequestHead) {
        // Not read (see the poll events): the client hung up, or failed, while behind.
        c.parked = false;
        c.out.clear();
        c.close_after_write = true;
        continue;
      }
      if ((rev & (POLLIN | POLLHUP | POLLERR)) != 0) {
        char buf[4096];
        ssize_t r = ::recv(c.fd, buf, sizeof buf, 0);
        if (r <= 0) {
          if (r < 0 && (errno == EAGAIN || errno == EINTR)) {
            continue;
          }
          // The client went away (a long-poll given up, or keep-alive closed).
          c.parked = false;
          c.out.clear();
          c.close_after_write = true;
          continue;
        }
        c.in.append(buf, static_cast<size_t>(r));
        ServeInput(c);
      }
      if (c.out.empty() && !c.parked && !c.close_after_write) {
        ServeInput(c);  // a pipelined request behind the one just written
      }
    }
  }
}

}  // namespace tpufleet::emulator::hosts::init

namespace tpufleet::emulator::hosts {

int WorkerInitMain(int argc, char** argv) {
  if (argc > 0 && IsMountHelper(argv[0])) {
    return MountHelperMain(argc, argv);  // run by mount(8) on a worker (worker_disks.h)
  }
  WorkerPaths paths;
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    if (StartsWith(a, "--disk=")) {
      paths.disk = std::string(a.substr(7));
    } else if (StartsWith(a, "--state=")) {
      paths.state = std::string(a.substr(8));
    } else if (StartsWith(a, "--standin=")) {
      paths.standin = std::string(a.substr(10));
    } else if (StartsWith(a, "--bucket=")) {
      paths.bucket = std::string(a.substr(9));
    } else if (StartsWith(a, "--hide=")) {
      paths.hide = std::string(a.substr(7));
    } else {
      Say("unknown argument " + std::string(a));
      return 2;
    }
  }
  if (paths.disk.empty() || paths.disk[0] != '/' || paths.state.empty() || paths.state[0] != '/' ||
      (!paths.bucket.empty() && paths.bucket[0] != '/') ||
      (!paths.hide.empty() && paths.hide[0] != '/')) {
    Say("usage: tpufleet-emulator-worker --disk=DIR --state=DIR [--standin=PATH] [--bucket=DIR] "
        "[--hide=DIR] (started by the emulator)");
    return 2;
  }
  if (::getpid() != 1) {
    Say("must run as PID 1 of a new PID namespace (the emulator starts it)");
    return 2;
  }
  // Signals are read from a signalfd; block them before any child exists.
  sigset_t mask;
  sigemptyset(&mask);
  for (int s : {SIGCHLD, SIGTERM, SIGINT, SIGHUP}) {
    sigaddset(&mask, s);
  }
  ::sigprocmask(SIG_SETMASK, &mask, nullptr);
  ::umask(022);
  init::Worker worker(std::move(paths));
  worker.Run();
}

}  // namespace tpufleet::emulator::hosts
