#include "agent/keeper.h"

#include <fcntl.h>
#include <stdlib.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <optional>

#include "agent/attach.h"
#include "agent/become_user.h"
#include "agent/flags.h"
#include "agent/host/user_db.h"
#include "agent/job_dir.h"
#include "agent/logs.h"
#include "api/agent.h"
#include "core/job.h"
#include "util/clock.h"
#include "util/event_loop.h"
#include "util/file.h"
#include "util/strings.h"
#include "util/subprocess.h"

namespace tpufleet::agent {
namespace {

int64_t UnixMs(const Clock& clock) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             clock.Now().time_since_epoch())
      .count();
}

// The signals the keeper takes through its signalfd; blocked from its first moment, so
// a cancel that comes early waits in the signalfd instead of killing the keeper.
sigset_t KeeperSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGCHLD);
  return set;
}

// The job's standard descriptors: pipes, or one terminal for all three.
struct JobStdio {
  int out = -1;
  int err = -1;
  bool terminal = false;  // `out` is a terminal's slave side: stdin, stdout and stderr
};

// In the job's child, after fork: never returns. Failures before exec are written to
// `report` (close-on-exec: it reads end of file when exec worked).
[[noreturn]] void RunJobChild(const api::JobSpec& spec, const host::UserAccount& user,
                              const std::vector<std::string>& env, JobStdio io, int report) {
  auto fail = [&](const std::string& what) {
    (void)!write(report, what.data(), what.size());
    _exit(126);
  };
  // Its own process group (the target of a cancel); on a terminal its own session too,
  // which the terminal is the controlling one of.
  if (io.terminal) {
    setsid();
  } else {
    setpgid(0, 0);
  }
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  for (int sig : {SIGPIPE, SIGHUP, SIGTERM, SIGINT, SIGCHLD}) {
    signal(sig, SIG_DFL);
  }
  int in = io.terminal ? io.out : open("/dev/null", O_RDONLY);
  if (in < 0 || dup2(in, 0) < 0 || dup2(io.out, 1) < 0 ||
      dup2(io.terminal ? io.out : io.err, 2) < 0 ||
      (io.terminal && ioctl(0, TIOCSCTTY, 0) != 0)) {
    fail(std::string("cannot set up the job's output: ") + std::strerror(errno));
  }
  Status became = BecomeUser(user);
  if (!became.ok()) {
    fail("cannot become " + user.name + ": " + became.message());
  }
  if (chdir(spec.workdir.c_str()) != 0) {
    fail("workdir " + spec.workdir + ": " + std::strerror(errno));
  }
  std::vector<char*> argv = {const_cast<char*>("bash"), const_cast<char*>("-lc"),
                             const_cast<char*>(spec.command.c_str()), nullptr};
  std::vector<char*> envp;
  for (const std::string& e : env) {
    envp.push_back(const_cast<char*>(e.c_str()));
  }
  envp.push_back(nullptr);
  execve("/bin/bash", argv.data(), envp.data());
  fail(std::string("/bin/bash: ") + std::strerror(errno));
  _exit(126);
}

class Keeper {
 public:
  Keeper(std::string dir, std::string attach_dir, api::JobSpec spec, api::JobOnWorker state,
         size_t log_bytes)
      : dir_(std::move(dir)), attach_dir_(std::move(attach_dir)), spec_(std::move(spec)),
        state_(std::move(state)), log_bytes_(log_bytes), loop_(clock_) {}

  int Run(int signal_fd) {
    Status started = Start();
    if (!started.ok()) {
      state_.state = JobState::kFailed;
      state_.message = started.message();
      state_.ended_unix_ms = UnixMs(clock_);
      return Record();
    }
    loop_.Watch(signal_fd, POLLIN, [this, signal_fd](short, Clock::MonoTime) {
      signalfd_siginfo info{};
      while (read(signal_fd, &info, sizeof info) == sizeof info) {
        if (info.ssi_signo == SIGCHLD) {
          Reap();
        } else {
          Cancel();
        }
      }
    });
    Pump(out_.get(), *stdout_log_);
    Pump(err_.get(), *stderr_log_);
    loop_.Run();
    return Record();
  }

 private:
  Status Start() {
    TPUFLEET_ASSIGN_OR_RETURN(host::UserAccount user, host::LookUpUser("/etc", spec_.user));
    EnvList user_env(spec_.env.begin(), spec_.env.end());
    TPUFLEET_ASSIGN_OR_RETURN(
        EnvList job_env,
        JobEnvironment(spec_.topology, spec_.worker, spec_.id, spec_.name, user_env,
                       spec_.restarts));
    std::vector<std::string> env = LoginEnvironment(user);
    for (const auto& [name, value] : job_env) {
      env.push_back(name + "=" + value);
    }
    TPUFLEET_ASSIGN_OR_RETURN(LogWriter out_log, LogWriter::Open(dir_ + "/" + kStdoutLog, log_bytes_));
    TPUFLEET_ASSIGN_OR_RETURN(LogWriter err_log, LogWriter::Open(dir_ + "/" + kStderrLog, log_bytes_));
    stdout_log_.emplace(std::move(out_log));
    stderr_log_.emplace(std::move(err_log));
    Pipe out;
    Pipe err;
    JobStdio io;
    if (spec_.pty) {
      env.push_back("TERM=xterm-256color");
      TPUFLEET_ASSIGN_OR_RETURN(out, OpenTerminal(user));
      io = {out.write.get(), -1, true};
    } else {
      TPUFLEET_ASSIGN_OR_RETURN(out, MakePipe());
      TPUFLEET_ASSIGN_OR_RETURN(err, MakePipe());
      io = {out.write.get(), err.write.get(), false};
    }
    TPUFLEET_ASSIGN_OR_RETURN(Pipe report, MakePipe());
    pid_t pid = fork();
    if (pid < 0) {
      return InternalError(std::string("fork: ") + std::strerror(errno));
    }
    if (pid == 0) {
      RunJobChild(spec_, user, env, io, report.write.get());
    }
    pid_ = pid;
    out.write.Reset();
    err.write.Reset();
    report.write.Reset();
    std::string why = ReadToEof(report.read.get());
    if (!why.empty()) {
      int status = 0;
      waitpid(pid, &status, 0);
      return FailedPreconditionError(why);
    }
    out_ = std::move(out.read);
    err_ = std::move(err.read);
    if (spec_.pty && !attach_dir_.empty()) {
      Result<std::unique_ptr<AttachPoint>> point = AttachPoint::Open(
          loop_, AttachSocketPath(attach_dir_, spec_.id), out_.get(), user.uid, user.gid);
      if (point.ok()) {
        attach_ = std::move(*point);
      } else {
        Complain(kExitFailed, point.status().ToString());  // the job runs, unattachable
      }
    }
    state_.pid = pid;
    state_.state = JobState::kRunning;
    state_.started_unix_ms = UnixMs(clock_);
    Status written = WriteJobState(dir_, state_);
    if (!written.ok()) {
      Complain(kExitFailed, written.ToString());
    }
    return Status::Ok();
  }

  // A pseudo-terminal: `read` is its master side (the keeper's), `write` its slave side
  // (the job's), given to `user`.
  static Result<Pipe> OpenTerminal(const host::UserAccount& user) {
    UniqueFd master(posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC));
    char name[128];
    if (master.get() < 0 || grantpt(master.get()) != 0 || unlockpt(master.get()) != 0 ||
        ptsname_r(master.get(), name, sizeof name) != 0) {
      return InternalError(std::string("a terminal for the job: ") + std::strerror(errno));
    }
    UniqueFd slave(open(name, O_RDWR | O_NOCTTY | O_CLOEXEC));
    if (slave.get() < 0 || fchown(slave.get(), user.uid, user.gid) != 0) {
      return InternalError(std::string(name) + ": " + std::strerror(errno));
    }
    return Pipe{std::move(master), std::move(slave)};
  }

  // Copies what `fd` gives into `log` (and to an attached terminal) until it closes.
  void Pump(int fd, LogWriter& log) {
    if (fd < 0) {
      return;
    }
    open_pipes_++;
    auto id = std::make_shared<EventLoop::Id>(0);
    *id = loop_.Watch(fd, POLLIN, [this, fd, &log, id](short, Clock::MonoTime) {
      ssize_t n = read(fd, buffer_, sizeof buffer_);
      if (n < 0 && (errno == EINTR || errno == EAGAIN)) {
        return;
      }
      if (n <= 0) {
        loop_.Remove(*id);
        if (--open_pipes_ == 0 && exited_) {
          loop_.Stop();
        }
        return;
      }
      if (attach_ != nullptr && &log == &*stdout_log_) {
        attach_->Output({buffer_, static_cast<size_t>(n)});
      }
      Status s = log.Append({buffer_, static_cast<size_t>(n)});
      if (!s.ok() && !log_error_reported_) {
        log_error_reported_ = true;
        Complain(kExitFailed, s.ToString());
      }
    });
  }

  void Reap() {
    int status = 0;
    if (exited_ || waitpid(pid_, &status, WNOHANG) != pid_) {
      return;
    }
    exited_ = true;
    state_.ended_unix_ms = UnixMs(clock_);
    if (WIFSIGNALED(status)) {
      const char* name = sigabbrev_np(WTERMSIG(status));
      state_.signal = name != nullptr ? name : std::to_string(WTERMSIG(status));
    } else {
      state_.exit_code = WEXITSTATUS(status);
    }
    if (open_pipes_ == 0) {
      loop_.Stop();
      return;
    }
    loop_.After(kDrainAfterExit, [this](Clock::MonoTime) { loop_.Stop(); });
  }

  void Cancel() {
    if (exited_) {
      return;
    }
    cancelled_ = true;
    long long grace = 10;
    Result<std::string> text = ReadFile(dir_ + "/" + kCancelFile, 64);
    if (text.ok()) {
      ParseInt(Trim(*text), &grace);
    }
    kill(-pid_, SIGTERM);
    loop_.After(std::chrono::seconds(grace), [this](Clock::MonoTime) {
      if (!exited_) {
        kill(-pid_, SIGKILL);
      }
    });
  }

  int Record() {
    attach_.reset();  // no one attaches to an ended job
    if (state_.state != JobState::kFailed) {
      state_.state = cancelled_                                        ? JobState::kCancelled
                     : state_.exit_code.has_value() && *state_.exit_code == 0 ? JobState::kSucceeded
                                                                      : JobState::kFailed;
    }
    Status written = WriteJobState(dir_, state_);
    if (!written.ok()) {
      return Complain(kExitFailed, written.ToString());
    }
    return kExitOk;
  }

  RealClock clock_;
  std::string dir_;
  std::string attach_dir_;
  api::JobSpec spec_;
  api::JobOnWorker state_;
  size_t log_bytes_;
  EventLoop loop_;
  std::optional<LogWriter> stdout_log_;
  std::optional<LogWriter> stderr_log_;
  UniqueFd out_;
  UniqueFd err_;
  std::unique_ptr<AttachPoint> attach_;
  pid_t pid_ = 0;
  int open_pipes_ = 0;
  bool exited_ = false;
  bool cancelled_ = false;
  bool log_error_reported_ = false;
  char buffer_[kLogChunkBytes];
};

}  // namespace

int KeepMain(const std::vector<std::string>& args) {
  sigset_t signals = KeeperSignals();
  sigprocmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);
  signal(SIGHUP, SIG_IGN);
  Result<Flags> flags = ParseFlags(args, {"state-dir", "log-bytes", "attach-dir"});
  if (!flags.ok() || flags->positional.size() != 1) {
    return Complain(kExitUsage,
                    "usage: tpufleet-agent keep ID [--state-dir DIR] [--log-bytes N] "
                    "[--attach-dir DIR]");
  }
  const std::string& id = flags->positional[0];
  long long log_bytes = static_cast<long long>(kLogFileBytes);
  if (!CheckJobId(id).ok() || !ParseInt(flags->Get("log-bytes", std::to_string(log_bytes)), &log_bytes) ||
      log_bytes <= 0) {
    return Complain(kExitUsage, "keep: a job id and a positive --log-bytes, please");
  }
  std::string dir = JobDir(flags->Get("state-dir", std::string(api::kAgentStateDir)), id);
  Result<UniqueFd> lock = TakeKeeperLock(dir);
  if (!lock.ok()) {
    return Complain(kExitFailed, lock.status().ToString());
  }
  Result<api::JobSpec> spec = ReadJobSpec(dir);
  Result<api::JobOnWorker> state = ReadJobState(dir);
  if (!spec.ok() || !state.ok()) {
    return Complain(kExitFailed, (spec.ok() ? state.status() : spec.status()).ToString());
  }
  if (IsEnded(state->state)) {
    return kExitOk;
  }
  UniqueFd signal_fd(signalfd(-1, &signals, SFD_CLOEXEC | SFD_NONBLOCK));
  if (signal_fd.get() < 0) {
    return Complain(kExitFailed, std::string("signalfd: ") + std::strerror(errno));
  }
  Keeper keeper(dir, flags->Get("attach-dir", ""), std::move(*spec), std::move(*state),
                static_cast<size_t>(log_bytes));
  return keeper.Run(signal_fd.get());
}

}  // namespace tpufleet::agent
