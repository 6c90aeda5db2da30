// JobTable's starts, its TPU queue and cancels (job_table.h).
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "agent/become_user.h"
#include "agent/host/tpu_verdict.h"
#include "agent/host/user_db.h"
#include "agent/job_dir.h"
#include "agent/job_table.h"
#include "agent/logs.h"
#include "core/job.h"
#include "util/file.h"
#include "util/log.h"
#include "util/strings.h"

namespace tpufleet::agent {
namespace {

int64_t NowMs(const Clock& clock) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(clock.Now().time_since_epoch())
      .count();
}

api::TpuHolder HolderOf(const host::TpuClaimant& c) {
  return {c.process.pid, c.process.user, c.process.command, c.job};
}

// The device guard's lines at the top of a job's stderr.log, after what earlier runs
// of a restarted job wrote there.
Status AppendGuardLines(const std::string& job_dir, const std::vector<std::string>& lines) {
  if (lines.empty()) {
    return Status::Ok();
  }
  TPUFLEET_ASSIGN_OR_RETURN(LogWriter log, LogWriter::Open(job_dir + "/" + kStderrLog));
  return log.Append(Join(lines, "\n") + "\n");
}

// Whether job.start of `spec` may start `job` (the job of the same id) again: only a
// larger restarts of an ended job of the same user.
Status CheckRestart(const JobEntry& job, const api::JobSpec& spec) {
  const std::string& id = spec.id;
  if (spec.restarts <= job.spec.restarts) {
    return AlreadyExistsError("job " + id + " exists on this worker" +
                              (spec.restarts > 0 ? " at restarts " +
                                                       std::to_string(job.spec.restarts) +
                                                       " (a restart gives a larger one)"
                                                 : std::string()));
  }
  if (!IsEnded(job.state.state)) {
    return AlreadyExistsError("job " + id + " exists on this worker and is " +
                              std::string(api::JobStateName(job.state.state)) +
                              ": only an ended job is started again");
  }
  if (job.keeper != 0) {
    return UnavailableError("job " + id + " is ending (its keeper, pid " +
                            std::to_string(job.keeper) +
                            ", is still recording it); try again in a moment");
  }
  if (spec.user != job.spec.user) {
    return PermissionDeniedError("job " + id + " is " + job.spec.user + "'s; " + spec.user +
                                 " cannot start it again");
  }
  return Status::Ok();
}

std::string Describe(const api::TpuHolder& h) {
  return (h.job.empty() ? std::string("a process") : "job " + h.job) + " (pid " +
         std::to_string(h.pid) + ", user " + h.user + ": " + h.command + ")";
}

}  // namespace

host::LiveJobPids JobTable::LivePids() const {
  // A keeper leads its job's session, so every process of a job (but one that made a
  // session of its own) has its keeper's pid as its session: /proc/PID/stat's field 6.
  // A job on a terminal leads a session of its own, under its keeper's.
  std::map<pid_t, std::string> keepers;
  std::map<pid_t, std::string> sessions;
  for (const auto& [id, job] : jobs_) {
    if (job.keeper > 0) {
      keepers[job.keeper] = id;
      sessions[job.keeper] = id;
      if (job.state.pid > 0) {
        sessions[job.state.pid] = id;
      }
    }
  }
  host::LiveJobPids pids;
  if (keepers.empty()) {
    return pids;
  }
  for (const std::string& name : ListDirectory(options_.host.proc)) {
    long long pid = 0;
    if (!ParseInt(name, &pid)) {
      continue;
    }
    Result<std::string> stat = ReadFile(options_.host.proc + "/" + name + "/stat", 4096);
    size_t paren = stat.ok() ? stat->rfind(')') : std::string::npos;
    if (paren == std::string::npos) {
      continue;
    }
    // After "pid (comm)": state ppid pgrp session …
    std::vector<std::string> fields = Split(Trim(std::string_view(*stat).substr(paren + 1)), ' ');
    long long session = 0;
    if (fields.size() > 3 && ParseInt(fields[3], &session) &&
        keepers.count(static_cast<pid_t>(pid)) == 0) {
      auto job = sessions.find(static_cast<pid_t>(session));
      if (job != sessions.end()) {
        pids[static_cast<pid_t>(pid)] = job->second;
      }
    }
  }
  return pids;
}

const JobEntry* JobTable::TpuHolder() const {
  for (const auto& [id, job] : jobs_) {
    if (job.spec.accelerator && (job.state.state == JobState::kStarting ||
                                 job.state.state == JobState::kRunning)) {
      return &job;
    }
  }
  return nullptr;
}

Status JobTable::AdmitTpu(const api::JobSpec& spec, api::JobOnWorker& state,
                          std::vector<std::string>& log_lines) {
  std::optional<api::TpuHolder> holder;
  if (const JobEntry* job = TpuHolder(); job != nullptr) {
    holder = api::TpuHolder{job->state.pid, job->state.user, job->state.command, job->spec.id};
  } else if (!waiting_.empty()) {
    holder = Find(waiting_.front())->state.waiting_for;
  } else {
    host::ClaimOptions claim;
    claim.kill_stale = spec.kill_stale;
    Result<host::TpuVerdict> verdict =
        host::ClaimTpu(options_.host, LivePids(), claim);
    if (!verdict.ok()) {
      return InternalError("the TPU's state: " + verdict.status().message());
    }
    switch (verdict->kind) {
      case host::TpuVerdictKind::kFree:
        return Status::Ok();
      case host::TpuVerdictKind::kStaleLockfile:
        log_lines = verdict->log_lines;
        return Status::Ok();
      case host::TpuVerdictKind::kOrphan:
        return FailedPreconditionError(verdict->message);
      case host::TpuVerdictKind::kHeldByJob:
        holder = verdict->claimants.empty() ? api::TpuHolder{0, "", "", verdict->job}
                                            : HolderOf(verdict->claimants.front());
        break;
    }
  }
  if (spec.no_wait) {
    return FailedPreconditionError("the TPU is held by " + Describe(holder.value_or(api::TpuHolder{})) +
                                   " (no_wait)");
  }
  state.state = JobState::kWaiting;
  state.waiting_for = holder;
  return Status::Ok();
}

Result<api::JobOnWorker> JobTable::Start(api::JobSpec spec, uid_t caller, bool dry_run) {
  TPUFLEET_TRY(CheckJobId(spec.id));
  if (spec.name.empty()) {
    spec.name = DefaultJobName(spec.command);
  }
  TPUFLEET_TRY(CheckJobName(spec.name));
  for (const auto& [name, value] : spec.env) {
    TPUFLEET_TRY(CheckUserEnvEntry(name, value));
  }
  EnvList user_env(spec.env.begin(), spec.env.end());
  TPUFLEET_TRY(
      JobEnvironment(spec.topology, spec.worker, spec.id, spec.name, user_env, spec.restarts)
          .status());

  std::string caller_name = host::UserName(host::ReadPasswd("/etc"), caller);
  if (spec.user.empty()) {
    spec.user = caller_name;
  }
  if (spec.user != caller_name && caller != 0) {
    return PermissionDeniedError("only root may start a job as another user (" + caller_name +
                                 " asked for " + spec.user + ")");
  }
  TPUFLEET_ASSIGN_OR_RETURN(host::UserAccount user, host::LookUpUser("/etc", spec.user));
  if (geteuid() != 0 && user.uid != geteuid()) {
    return PermissionDeniedError("this agent does not run as root: it starts jobs only as uid " +
                                 std::to_string(geteuid()));
  }
  JobEntry* again = Mutable(spec.id);
  if (again != nullptr) {
    AwaitEndingKeeper(*again);
    TPUFLEET_TRY(CheckRestart(*again, spec));
  }
  for (const auto& [id, job] : jobs_) {
    if (id != spec.id && job.spec.name == spec.name && !IsEnded(job.state.state)) {
      return AlreadyExistsError("job " + id + " is named " + spec.name + " and has not ended");
    }
  }
  spec.workdir = ResolveWorkdir(user, spec.workdir);
  TPUFLEET_TRY(CheckUserCanEnter(user, spec.workdir));

  api::JobOnWorker state;
  state.id = spec.id;
  state.name = spec.name;
  state.user = spec.user;
  state.command = spec.command;
  state.worker = spec.worker;
  state.state = JobState::kStarting;
  state.created_unix_ms = NowMs(loop_.clock());
  state.started_by = spec.started_by;
  state.keep_going = spec.keep_going;
  state.world_size = std::max<int>(1, static_cast<int>(spec.topology.worker_addresses.size()));
  state.restarts = spec.restarts;
  if (dry_run) {
    return state;
  }
  std::vector<std::string> log_lines;
  if (spec.accelerator) {
    TPUFLEET_TRY(AdmitTpu(spec, state, log_lines));
  }
  if (again != nullptr) {
    TPUFLEET_TRY(Restart(*again, std::move(spec), state, log_lines));
    return state;
  }
  JobEntry job;
  job.dir = JobDir(options_.state_dir, spec.id);
  job.uid = user.uid;
  job.spec = std::move(spec);
  job.state = state;
  TPUFLEET_TRY(Create(std::move(job), log_lines));
  return state;
}

Status JobTable::Create(JobEntry job, const std::vector<std::string>& log_lines) {
  if (mkdir(job.dir.c_str(), 0700) != 0) {
    return errno == EEXIST ? AlreadyExistsError("job " + job.spec.id + " exists on this worker")
                           : ErrnoStatus(job.dir, errno);
  }
  TPUFLEET_TRY(WriteJobSpec(job.dir, job.spec));
  TPUFLEET_TRY(WriteJobState(job.dir, job.state));
  std::string id = job.spec.id;
  return Launch(jobs_.emplace(id, std::move(job)).first->second, log_lines);
}

Status JobTable::Launch(JobEntry& job, const std::vector<std::string>& log_lines) {
  if (job.state.state == JobState::kWaiting) {
    waiting_.push_back(job.spec.id);
    return Status::Ok();
  }
  TPUFLEET_TRY(AppendGuardLines(job.dir, log_lines));
  Status spawned = SpawnKeeper(job);
  if (!spawned.ok()) {
    KeeperGone(job.spec.id);
  }
  return spawned;
}

void JobTable::AwaitEndingKeeper(JobEntry& job) {
  if (!IsEnded(job.state.state) || job.keeper == 0) {
    return;
  }
  // The keeper recorded the end and is closing its logs: it exits within milliseconds.
  pollfd gone = {job.pidfd.get(), POLLIN, 0};
  if (poll(&gone, 1, static_cast<int>(kKeeperEndWait.count())) == 1) {
    KeeperGone(job.spec.id);
  }
}

Status JobTable::Restart(JobEntry& job, api::JobSpec spec, const api::JobOnWorker& state,
                         const std::vector<std::string>& log_lines) {
  // The last run's cancel must not reach this one; its logs stay, and this run's follow.
  if (unlink((job.dir + "/" + kCancelFile).c_str()) != 0 && errno != ENOENT) {
    return ErrnoStatus(job.dir + "/" + kCancelFile, errno);
  }
  TPUFLEET_TRY(WriteJobSpec(job.dir, spec));
  TPUFLEET_TRY(WriteJobState(job.dir, state));
  job.spec = std::move(spec);
  SetState(job, state);
  return Launch(job, log_lines);
}

void JobTable::StartWaiting() {
  while (!waiting_.empty() && TpuHolder() == nullptr) {
    JobEntry* job = Mutable(waiting_.front());
    if (job == nullptr || job->state.state != JobState::kWaiting) {
      waiting_.pop_front();
      continue;
    }
    std::string head = waiting_.front();
    waiting_.pop_front();  // AdmitTpu asks the device guard only with no one before it
    api::JobOnWorker next = job->state;
    std::vector<std::string> log_lines;
    api::JobSpec spec = job->spec;
    spec.no_wait = false;
    next.state = JobState::kStarting;
    next.waiting_for.reset();
    Status admitted = AdmitTpu(spec, next, log_lines);
    if (admitted.ok() && next.state == JobState::kWaiting) {
      waiting_.push_front(head);
      SetState(*job, next);
      return;
    }
    if (!admitted.ok()) {
      next.state = JobState::kFailed;
      next.message = admitted.message();
      next.ended_unix_ms = NowMs(loop_.clock());
    } else if (!log_lines.empty()) {
      Status written = AppendGuardLines(job->dir, log_lines);
      if (!written.ok()) {
        Log(LogLevel::kError, written.ToString());
      }
    }
    Status recorded = WriteJobState(job->dir, next);
    if (!recorded.ok()) {
      Log(LogLevel::kError, recorded.ToString());
    }
    SetState(*job, next);
    if (next.state == JobState::kStarting) {
      Status spawned = SpawnKeeper(*job);
      if (!spawned.ok()) {
        KeeperGone(head);
      }
    }
  }
}

Status JobTable::Cancel(const std::string& id, int grace_seconds) {
  JobEntry* job = Mutable(id);
  if (job == nullptr) {
    return NotFoundError("no job " + id + " on this worker");
  }
  if (IsEnded(job->state.state)) {
    return Status::Ok();
  }
  if (job->keeper == 0) {  // waiting: nothing runs yet
    waiting_.erase(std::remove(waiting_.begin(), waiting_.end(), id), waiting_.end());
    api::JobOnWorker cancelled = job->state;
    cancelled.state = JobState::kCancelled;
    cancelled.waiting_for.reset();
    cancelled.ended_unix_ms = NowMs(loop_.clock());
    TPUFLEET_TRY(WriteJobState(job->dir, cancelled));
    SetState(*job, std::move(cancelled));
    return Status::Ok();
  }
  TPUFLEET_TRY(WriteFileAtomic(job->dir + "/" + kCancelFile, std::to_string(grace_seconds) + "\n", 0600));
  if (syscall(SYS_pidfd_send_signal, job->pidfd.get(), SIGTERM, nullptr, 0) != 0) {
    return InternalError("signalling the keeper of job " + id + ": " + std::strerror(errno));
  }
  return Status::Ok();
}

}  // namespace tpufleet::agent
