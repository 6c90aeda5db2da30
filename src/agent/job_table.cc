#include "agent/job_table.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/inotify.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "agent/host/user_db.h"
#include "agent/job_dir.h"
#include "agent/logs.h"
#include "core/job.h"
#include "util/file.h"
#include "util/log.h"

namespace tpufleet::agent {
namespace {

int PidfdOpen(pid_t pid) { return static_cast<int>(syscall(SYS_pidfd_open, pid, 0)); }

// What inotify reports of a job's directory: state.json replaced, and (for followers)
// the logs written or rotated.
constexpr uint32_t kStateEvents = IN_MOVED_TO;
constexpr uint32_t kLogEvents = IN_MODIFY | IN_CREATE;

}  // namespace

JobTable::JobTable(EventLoop& loop, JobTableOptions options)
    : loop_(loop), options_(std::move(options)) {
  if (options_.log_bytes == 0) {
    options_.log_bytes = kLogFileBytes;
  }
}

JobTable::~JobTable() {
  for (auto& [id, job] : jobs_) {
    if (job.pidfd_watch != 0) {
      loop_.Remove(job.pidfd_watch);
    }
    if (job.log_batch != 0) {
      loop_.Remove(job.log_batch);
    }
  }
  if (inotify_watch_ != 0) {
    loop_.Remove(inotify_watch_);
  }
  if (poll_timer_ != 0) {
    loop_.Remove(poll_timer_);
  }
}

Status JobTable::Init() {
  TPUFLEET_TRY(MakeStateDirs(options_.state_dir));
  if (!options_.poll) {
    inotify_ = UniqueFd(inotify_init1(IN_NONBLOCK | IN_CLOEXEC));
    if (inotify_.get() < 0) {
      Log(LogLevel::kWarn, std::string("inotify_init1: ") + std::strerror(errno) +
                               "; looking at jobs every " +
                               std::to_string(kPollFallback.count()) + " ms instead");
    }
  }
  if (inotify_.get() >= 0) {
    inotify_watch_ = loop_.Watch(inotify_.get(), POLLIN, [this](short, Clock::MonoTime) {
      OnInotify();
    });
  } else {
    poll_timer_ = loop_.Every(kPollFallback, [this](Clock::MonoTime) { PollJobs(); });
  }
  for (const std::string& id : ListJobIds(options_.state_dir)) {
    Load(id);
  }
  for (const JobEntry* job : All()) {
    if (job->state.state == JobState::kWaiting) {
      waiting_.push_back(job->spec.id);
    }
  }
  StartWaiting();
  return Status::Ok();
}

const JobEntry* JobTable::Find(const std::string& id) const {
  auto it = jobs_.find(id);
  return it == jobs_.end() ? nullptr : &it->second;
}

JobEntry* JobTable::Mutable(const std::string& id) {
  auto it = jobs_.find(id);
  return it == jobs_.end() ? nullptr : &it->second;
}

std::vector<const JobEntry*> JobTable::All() const {
  std::vector<const JobEntry*> all;
  for (const auto& [id, job] : jobs_) {
    all.push_back(&job);
  }
  std::stable_sort(all.begin(), all.end(), [](const JobEntry* a, const JobEntry* b) {
    return a->state.created_unix_ms < b->state.created_unix_ms;
  });
  return all;
}

void JobTable::Load(const std::string& id) {
  JobEntry job;
  job.dir = JobDir(options_.state_dir, id);
  Result<api::JobSpec> spec = ReadJobSpec(job.dir);
  Result<api::JobOnWorker> state = ReadJobState(job.dir);
  if (!spec.ok() || !state.ok()) {
    Log(LogLevel::kWarn, "job " + id + " skipped: " +
                             (spec.ok() ? state.status() : spec.status()).ToString());
    return;
  }
  job.spec = std::move(*spec);
  job.state = std::move(*state);
  Result<host::UserAccount> user = host::LookUpUser("/etc", job.spec.user);
  job.uid = user.ok() ? user->uid : 0;  // an account since removed: root's alone
  JobEntry& entry = jobs_.emplace(id, std::move(job)).first->second;
  if (IsEnded(entry.state.state) || entry.state.state == JobState::kWaiting) {
    return;
  }
  if (pid_t keeper = KeeperPid(entry.dir); keeper > 0) {
    Adopt(entry, keeper);
    return;
  }
  if (entry.state.state == JobState::kStarting) {
    // serve stopped between making the job and starting its keeper.
    Status spawned = SpawnKeeper(entry);
    if (spawned.ok()) {
      return;
    }
  }
  KeeperGone(id);
}

void JobTable::Adopt(JobEntry& job, pid_t keeper) {
  // The pidfd first, then the lock again: a keeper still holding its lock after the
  // pidfd was opened is the process the pidfd names (pids are not reused while alive).
  UniqueFd pidfd(PidfdOpen(keeper));
  if (pidfd.get() < 0 || KeeperPid(job.dir) != keeper) {
    KeeperGone(job.spec.id);
    return;
  }
  WatchKeeper(job, keeper, std::move(pidfd));
  Reload(job.spec.id);  // what the keeper recorded while no serve looked
}

void JobTable::WatchKeeper(JobEntry& job, pid_t keeper, UniqueFd pidfd) {
  job.keeper = keeper;
  job.pidfd = std::move(pidfd);
  std::string id = job.spec.id;
  job.pidfd_watch = loop_.Watch(job.pidfd.get(), POLLIN, [this, id](short, Clock::MonoTime) {
    KeeperGone(id);
  });
  UpdateWatch(job);
}

Status JobTable::SpawnKeeper(JobEntry& job) {
  std::vector<std::string> args = {"tpufleet-agent", "keep", job.spec.id, "--state-dir",
                                   options_.state_dir, "--log-bytes",
                                   std::to_string(options_.log_bytes), "--attach-dir",
                                   options_.attach_dir};
  std::string log = job.dir + "/keeper.log";
  pid_t pid = fork();
  if (pid < 0) {
    return InternalError(std::string("fork: ") + std::strerror(errno));
  }
  if (pid == 0) {
    // The keeper's own session: no signal to serve's group or terminal reaches it.
    setsid();
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    signal(SIGPIPE, SIG_DFL);
    int in = open("/dev/null", O_RDWR);
    int err = open(log.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW, 0600);
    if (in < 0 || err < 0 || dup2(in, 0) < 0 || dup2(in, 1) < 0 || dup2(err, 2) < 0) {
      _exit(127);
    }
    std::vector<char*> argv;
    for (std::string& a : args) {
      argv.push_back(a.data());
    }
    argv.push_back(nullptr);
    execv(options_.program.c_str(), argv.data());
    _exit(127);
  }
  UniqueFd pidfd(PidfdOpen(pid));  // our child, not yet reaped: it is that process
  if (pidfd.get() < 0) {
    return InternalError(std::string("pidfd_open: ") + std::strerror(errno));
  }
  WatchKeeper(job, pid, std::move(pidfd));
  return Status::Ok();
}

void JobTable::KeeperGone(const std::string& id) {
  JobEntry* job = Mutable(id);
  if (job == nullptr) {
    return;
  }
  pid_t keeper = job->keeper;
  if (job->pidfd_watch != 0) {
    loop_.Remove(job->pidfd_watch);
    job->pidfd_watch = 0;
  }
  job->pidfd.Reset();
  job->keeper = 0;
  if (keeper > 0) {
    waitpid(keeper, nullptr, WNOHANG);  // ours when serve started it; else ECHILD
  }
  Reload(id);
  if (pid_t other = KeeperPid(job->dir);
      !IsEnded(job->state.state) && other > 0 && other != keeper) {
    // Another keeper holds the job (serve restarted just as it started one, and started
    // one more, which found the lock taken): that one is the job's.
    Adopt(*job, other);
    return;
  }
  if (!IsEnded(job->state.state)) {
    api::JobOnWorker lost = job->state;
    lost.state = JobState::kLost;
    lost.ended_unix_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                             loop_.clock().Now().time_since_epoch())
                             .count();
    lost.message = keeper > 0 ? "its keeper (pid " + std::to_string(keeper) +
                                    ") ended without recording the job's end"
                              : "no keeper holds it and it recorded no end";
    Status written = WriteJobState(job->dir, lost);
    if (!written.ok()) {
      Log(LogLevel::kError, written.ToString());
    }
    SetState(*job, std::move(lost));
  }
}

void JobTable::Reload(const std::string& id) {
  JobEntry* job = Mutable(id);
  if (job == nullptr) {
    return;
  }
  Result<api::JobOnWorker> state = ReadJobState(job->dir);
  if (state.ok()) {
    SetState(*job, std::move(*state));
  }
}

void JobTable::SetState(JobEntry& job, api::JobOnWorker state) {
  if (api::ToJson(state) == api::ToJson(job.state)) {
    return;
  }
  bool ended = IsEnded(state.state) && !IsEnded(job.state.state);
  job.state = std::move(state);
  std::string id = job.spec.id;
  UpdateWatch(job);
  Notify(id, Change::kState);
  if (ended) {
    StartWaiting();
  }
}

void JobTable::UpdateWatch(JobEntry& job) {
  if (inotify_.get() < 0) {
    return;  // PollJobs looks instead
  }
  bool live = !IsEnded(job.state.state) && job.state.state != JobState::kWaiting;
  bool logs = job.followers > 0 && job.log_batch == 0;
  uint32_t mask = (live ? kStateEvents : 0) | (logs ? kLogEvents : 0);
  if (mask == 0) {
    if (job.watch >= 0) {
      inotify_rm_watch(inotify_.get(), job.watch);
      watches_.erase(job.watch);
      job.watch = -1;
    }
    return;
  }
  int watch = inotify_add_watch(inotify_.get(), job.dir.c_str(), mask);
  if (watch < 0) {
    Log(LogLevel::kError, job.dir + ": inotify: " + std::strerror(errno));
    return;
  }
  job.watch = watch;
  watches_[watch] = job.spec.id;
}

void JobTable::OnInotify() {
  alignas(inotify_event) char buf[16384];
  while (true) {
    ssize_t n = read(inotify_.get(), buf, sizeof buf);
    if (n <= 0) {
      return;
    }
    for (ssize_t at = 0; at < n;) {
      const auto* event = reinterpret_cast<const inotify_event*>(buf + at);
      at += static_cast<ssize_t>(sizeof(inotify_event) + event->len);
      auto it = watches_.find(event->wd);
      if (it == watches_.end() || event->len == 0) {
        continue;
      }
      std::string id = it->second;
      std::string name = event->name;
      if ((event->mask & IN_MOVED_TO) != 0 && name == kJobStateFile) {
        Reload(id);
      } else if ((event->mask & kLogEvents) != 0 &&
                 (name.rfind(kStdoutLog, 0) == 0 || name.rfind(kStderrLog, 0) == 0)) {
        LogsWritten(id);
      }
    }
  }
}

void JobTable::PollJobs() {
  std::vector<std::pair<std::string, bool>> look;  // id, followed; Reload may change jobs_
  for (const auto& [id, job] : jobs_) {
    bool live = !IsEnded(job.state.state) && job.state.state != JobState::kWaiting;
    if (live || job.followers > 0) {
      look.emplace_back(id, job.followers > 0);
    }
  }
  for (const auto& [id, followed] : look) {
    Reload(id);
    if (followed && Mutable(id) != nullptr) {
      Notify(id, Change::kLogs);
    }
  }
}

void JobTable::LogsWritten(const std::string& id) {
  JobEntry* job = Mutable(id);
  if (job == nullptr || job->log_batch != 0) {
    return;
  }
  // Until the batch ends, writes wake no one: a job printing a hundred lines a second
  // costs serve ten turns a second, not a hundred.
  job->log_batch = loop_.After(kLogBatch, [this, id](Clock::MonoTime) {
    JobEntry* j = Mutable(id);
    if (j == nullptr) {
      return;
    }
    j->log_batch = 0;
    UpdateWatch(*j);
    Notify(id, Change::kLogs);
  });
  UpdateWatch(*job);
}

void JobTable::Follow(const std::string& id, bool on) {
  JobEntry* job = Mutable(id);
  if (job == nullptr) {
    return;
  }
  job->followers += on ? 1 : -1;
  UpdateWatch(*job);
}

void JobTable::Notify(const std::string& id, Change change) {
  if (listener_) {
    listener_(id, change);
  }
}

}  // namespace tpufleet::agent
