#include "emulator/hosts/init_spawner.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <future>

#include "emulator/hosts/system_programs.h"
#include "emulator/hosts/worker_init.h"

namespace tpufleet::emulator::hosts {
namespace {

constexpr unsigned long kNamespaces =
    CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC;

// Descriptors are first moved at or above this, clear of the numbers they go to.
constexpr int kHighFd = 16;

// Everything the child needs, prepared before clone: after it, in a copy of a threaded
// process, only async-signal-safe system calls are allowed.
struct Prepared {
  const char* binary;
  std::vector<char*> argv;
  char* const* envp;
  int log_fd;
  int status_fd;
  int go_fd;
  int lifeline_fd;
};

[[noreturn]] void ChildExec(const Prepared& p) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  // The emulator may have died between clone and prctl: then no signal will come.
  pollfd life{p.lifeline_fd, POLLIN, 0};
  if (::poll(&life, 1, 0) > 0 && (life.revents & (POLLHUP | POLLERR)) != 0) {
    ::_exit(1);
  }
  ::setsid();  // its own session: a terminal's ^C reaches the emulator, not the workers
  int src[4] = {p.log_fd, p.status_fd, p.go_fd, p.lifeline_fd};
  for (int& fd : src) {
    fd = ::fcntl(fd, F_DUPFD, kHighFd);
    if (fd < 0) {
      ::_exit(126);
    }
  }
  int devnull = ::open("/dev/null", O_RDONLY);
  if (devnull < 0 || ::dup2(devnull, 0) < 0 || ::dup2(src[0], 1) < 0 || ::dup2(src[0], 2) < 0 ||
      ::dup2(src[1], kStatusFd) < 0 || ::dup2(src[2], kGoFd) < 0 ||
      ::dup2(src[3], kLifelineFd) < 0) {
    ::_exit(126);
  }
  ::syscall(SYS_close_range, kLifelineFd + 1, ~0U, 0);
  struct sigaction dfl;
  std::memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  for (int s = 1; s < NSIG; ++s) {
    ::sigaction(s, &dfl, nullptr);  // fails harmlessly for SIGKILL, SIGSTOP, glibc's own
  }
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  ::execve(p.binary, p.argv.data(), p.envp);
  ::_exit(127);
}

std::vector<InitSpawner::Started> AllFailed(size_t n, const Status& why) {
  std::vector<InitSpawner::Started> out(n);
  for (InitSpawner::Started& s : out) {
    s.error = why;
  }
  return out;
}

}  // namespace

InitSpawner::InitSpawner() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    status_ = InternalError(std::string("lifeline pipe: ") + std::strerror(errno));
    return;
  }
  lifeline_read_ = fds[0];
  lifeline_write_ = fds[1];
  thread_ = std::thread([this] { Loop(); });
}

InitSpawner::~InitSpawner() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) {
    thread_.join();
  }
  if (lifeline_read_ >= 0) {
    ::close(lifeline_read_);
    ::close(lifeline_write_);
  }
}

void InitSpawner::Loop() {
  while (true) {
    std::function<void()> job;
    {
      std::unique_lock<std::mutex> l(mu_);
      cv_.wait(l, [this] { return stop_ || !jobs_.empty(); });
      if (jobs_.empty()) {
        return;
      }
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    job();
  }
}

std::vector<InitSpawner::Started> InitSpawner::Spawn(const std::vector<Request>& requests) {
  if (!status_.ok()) {
    return AllFailed(requests.size(), status_);
  }
  std::string path_env = std::string("PATH=") + kSystemPath;
  char home_env[] = "HOME=/root";
  char* envp[] = {path_env.data(), home_env, nullptr};
  std::vector<std::vector<std::string>> argv_copies;
  std::vector<Prepared> prepared;
  for (const Request& r : requests) {
    argv_copies.push_back(r.argv);
  }
  for (size_t i = 0; i < requests.size(); ++i) {
    Prepared p{requests[i].binary.c_str(),
               {},
               envp,
               requests[i].log_fd,
               requests[i].status_fd,
               requests[i].go_fd,
               lifeline_read_};
    for (std::string& a : argv_copies[i]) {
      p.argv.push_back(a.data());
    }
    p.argv.push_back(nullptr);
    prepared.push_back(std::move(p));
  }

  std::promise<std::vector<Started>> done;
  auto job = [&prepared, &done] {
    std::vector<Started> out(prepared.size());
    for (size_t i = 0; i < prepared.size(); ++i) {
      const Prepared& p = prepared[i];
      // A raw clone: fork semantics (copy of this thread), with new namespaces.
      long pid = ::syscall(SYS_clone, kNamespaces | SIGCHLD, nullptr, nullptr, nullptr, nullptr);
      if (pid == 0) {
        ChildExec(p);
      }
      if (pid < 0) {
        int err = errno;
        std::string why = std::strerror(err);
        if (err == EPERM) {
          out[i].error = FailedPreconditionError(
              "cannot create namespaces (" + why +
              "): the emulator's worker hosts need root (or CAP_SYS_ADMIN + CAP_NET_ADMIN)");
        } else {
          out[i].error = InternalError("clone: " + why);
        }
        continue;
      }
      out[i].pid = static_cast<pid_t>(pid);
    }
    done.set_value(std::move(out));
  };
  std::future<std::vector<Started>> result = done.get_future();
  {
    std::lock_guard<std::mutex> l(mu_);
    if (stop_) {
      return AllFailed(requests.size(), InternalError("spawner stopped"));
    }
    jobs_.push_back(job);
  }
  cv_.notify_all();
  return result.get();
}

}  // namespace tpufleet::emulator::hosts
