#include "control/ssh_processes.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <memory>

#include "ssh/openssh.h"
#include "util/file.h"
#include "util/strings.h"
#include "util/subprocess.h"
#include "util/unique_fd.h"

namespace tpufleet {
namespace {

using Mono = std::chrono::steady_clock;

// What a failed ssh that said nothing is reported as.
constexpr std::string_view kNoWord = "ssh exited with status 255";

// One program that runs: its pipes until they end, then its reaping.
struct Running {
  size_t host = 0;
  pid_t pid = -1;
  UniqueFd in;
  UniqueFd out[2];  // stdout, stderr
  std::string stderr_tail;
  Mono::time_point deadline = Mono::time_point::max();
  bool timed_out = false;
  bool cancelled = false;
};

Result<std::unique_ptr<Running>> Start(const SshProcessJob& job, size_t host) {
  auto owned = std::make_unique<Running>();
  Running& r = *owned;
  r.host = host;
  UniqueFd child_in;
  if (job.hold_stdin) {
    TPUFLEET_ASSIGN_OR_RETURN(Pipe in, MakePipe());
    child_in = std::move(in.read);
    r.in = std::move(in.write);
  }
  TPUFLEET_ASSIGN_OR_RETURN(Pipe out, MakePipe());
  TPUFLEET_ASSIGN_OR_RETURN(Pipe err, MakePipe());
  SpawnOptions options;
  options.search_path = options.inherit_env = options.own_process_group = true;
  SpawnStdio stdio{child_in.get(), out.write.get(), err.write.get()};
  Result<pid_t> pid = SpawnSubprocess(job.programs[host], options, stdio);
  if (!pid.ok()) {
    return WithOpenSshHint(pid.status());
  }
  r.pid = *pid;
  r.out[0] = std::move(out.read);
  r.out[1] = std::move(err.read);
  for (const UniqueFd& fd : r.out) {
    ::fcntl(fd.get(), F_SETFL, ::fcntl(fd.get(), F_GETFL) | O_NONBLOCK);
  }
  if (job.timeout.count() > 0) {
    r.deadline = Mono::now() + job.timeout;
  }
  return owned;
}

// Reads what `fd` (stream `s` of `r`) has now into the sink; closes it at its end.
void Drain(Running& r, int s, FanoutSink& sink) {
  char buf[16 * 1024];
  while (r.out[s].get() >= 0) {
    ssize_t n = ::read(r.out[s].get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n < 0 && errno == EAGAIN) {
      return;
    }
    if (n <= 0) {
      r.out[s].Reset();
      return;
    }
    std::string_view data(buf, static_cast<size_t>(n));
    if (s == 1) {
      r.stderr_tail.append(data);
      if (r.stderr_tail.size() > kSshProcessesStderrTail) {
        r.stderr_tail.erase(0, r.stderr_tail.size() - kSshProcessesStderrTail);
      }
    }
    sink.OnOutput(r.host, s == 0 ? OutputStream::kStdout : OutputStream::kStderr, data);
  }
}

void Stop(Running& r) {
  r.cancelled = true;
  r.in.Reset();
  ::kill(-r.pid, SIGTERM);
}

HostResult Finish(Running& r) {
  int status = 0;
  while (::waitpid(r.pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (r.timed_out) {
    return {HostOutcome::kTimeout, 0, "", "its command ran past the timeout and was stopped"};
  }
  if (r.cancelled) {
    return {HostOutcome::kCancelled, 0, "", "stopped"};
  }
  return SshProcessResult(status, r.stderr_tail);
}

}  // namespace

HostResult SshProcessResult(int wait_status, std::string_view stderr_tail) {
  if (WIFSIGNALED(wait_status)) {
    const char* name = ::sigabbrev_np(WTERMSIG(wait_status));
    return {HostOutcome::kSignaled, 0, name == nullptr ? "?" : name,
            "ssh was killed by a signal"};
  }
  int code = WEXITSTATUS(wait_status);
  if (code != 255) {
    return {HostOutcome::kExited, code, "", ""};
  }
  if (stderr_tail.find("Host key verification failed") != std::string_view::npos) {
    return {HostOutcome::kHostKeyMismatch, 0, "",
            "Host key verification failed: its key is not the one pinned for it"};
  }
  if (stderr_tail.find("Permission denied (") != std::string_view::npos) {
    return {HostOutcome::kAuthFailed, 0, "", LastSshLine(stderr_tail, kNoWord)};
  }
  return {HostOutcome::kUnreachable, 0, "", LastSshLine(stderr_tail, kNoWord)};
}

Status RunSshProcesses(const SshProcessJob& job, FanoutSink& sink) {
  std::vector<std::unique_ptr<Running>> running;
  size_t next = 0;
  bool stopping = false;
  size_t parallel = std::max<size_t>(job.max_parallel, 1);
  while (next < job.programs.size() || !running.empty()) {
    if (!stopping && sink.Cancelled()) {
      stopping = true;
      for (std::unique_ptr<Running>& r : running) {
        Stop(*r);
      }
    }
    while (!stopping && next < job.programs.size() && running.size() < parallel) {
      Result<std::unique_ptr<Running>> r = Start(job, next);
      if (!r.ok() && next == 0 && running.empty()) {
        return r.status();  // none started: not a host's failure but the run's
      }
      if (!r.ok()) {
        sink.OnResult(next++, {HostOutcome::kUnreachable, 0, "", r.status().message()});
        continue;
      }
      running.push_back(std::move(*r));
      ++next;
    }
    if (stopping) {
      for (; next < job.programs.size(); ++next) {
        sink.OnResult(next, {HostOutcome::kCancelled, 0, "", "not started: stopped"});
      }
    }
    // Poll every open output until the nearest deadline (or the cancel look).
    std::vector<pollfd> fds;
    std::vector<std::pair<size_t, int>> who;
    Mono::time_point wake = Mono::now() + kSshProcessesCancelPoll;
    for (size_t i = 0; i < running.size(); ++i) {
      for (int s = 0; s < 2; ++s) {
        if (running[i]->out[s].get() >= 0) {
          fds.push_back({running[i]->out[s].get(), POLLIN, 0});
          who.emplace_back(i, s);
        }
      }
      wake = std::min(wake, running[i]->deadline);
    }
    auto ms = std::chrono::ceil<std::chrono::milliseconds>(wake - Mono::now()).count();
    int n = ::poll(fds.data(), fds.size(), static_cast<int>(std::max<decltype(ms)>(ms, 0)));
    if (n < 0 && errno != EINTR) {
      return ErrnoStatus("poll", errno);
    }
    for (size_t k = 0; n > 0 && k < fds.size(); ++k) {
      if (fds[k].revents != 0) {
        Drain(*running[who[k].first], who[k].second, sink);
      }
    }
    Mono::time_point now = Mono::now();
    for (auto it = running.begin(); it != running.end();) {
      Running& r = **it;
      if (!r.timed_out && !r.cancelled && now >= r.deadline) {
        r.timed_out = true;
        r.in.Reset();
        ::kill(-r.pid, SIGKILL);
      }
      if (r.out[0].get() >= 0 || r.out[1].get() >= 0) {
        ++it;
        continue;
      }
      HostResult result = Finish(r);
      size_t host = r.host;
      it = running.erase(it);
      sink.OnResult(host, result);
      if (job.fail_fast && !result.ok() && !stopping) {
        stopping = true;
        for (std::unique_ptr<Running>& other : running) {
          Stop(*other);
        }
      }
    }
  }
  return Status::Ok();
}

}  // namespace tpufleet
