// JobTable: serve's view of the jobs of its host, the one place that starts, queues,
// cancels and watches them.
//
// Jobs live on disk (job_dir.h) and in their keepers (keeper.h); the table is what serve
// knows of them, rebuilt from the state directory when serve starts: a job that has not
// ended is adopted through its keeper's lock (the keeper's pid, then a pidfd, so its end
// wakes the loop), queued again when it was waiting for the TPU, given a keeper when it
// had none yet (starting), and marked lost when its keeper is gone without a record.
//
// What changes a job's state after it started is its keeper, which replaces state.json;
// the table learns it through inotify on the job's directory (and, when asked to follow
// a job's logs, of writes to them, in batches of kLogBatch) and tells its listener.
// Nothing polls: an idle agent sleeps in poll(2). Where the kernel gives no inotify
// instance (its per-user limit, fs.inotify.max_user_instances, is shared by every
// worker of an emulated fleet and by anything else root runs), the table looks at its
// live and followed jobs every kPollFallback instead, and says so in the log once.
//
// One process per TPU: a job with `accelerator` starts only while no other accelerator
// job of the table is starting or running and no job waits before it (FIFO); then the
// device guard (agent/host/tpu_verdict.h's ClaimTpu) decides on what else is on the host
// (a stale lockfile is removed and said at the top of the job's stderr.log; an orphan
// refuses the job, or is killed with kill_stale). Otherwise the job waits (state
// waiting, `waiting_for` names the holder) or, with no_wait, is refused naming it. When
// a job ends, the first waiting job gets its turn.
//
// Thread-safety: none; the loop's thread only.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "agent/host/host_paths.h"
#include "agent/host/tpu_verdict.h"
#include "api/agent.h"
#include "util/event_loop.h"
#include "util/status.h"
#include "util/unique_fd.h"

namespace tpufleet::agent {

struct JobTableOptions {
  std::string state_dir = std::string(api::kAgentStateDir);
  size_t log_bytes = 0;          // keepers rotate logs at this size; 0: kLogFileBytes
  std::string program;           // the agent binary keepers are started from
  std::string attach_dir;        // where keepers put their jobs' terminals (attach.h)
  host::HostPaths host;          // where the device guard looks
  bool poll = false;             // look at jobs every kPollFallback, not through inotify
};

/// A job as the table holds it.
struct JobEntry {
  api::JobSpec spec;
  api::JobOnWorker state;
  std::string dir;
  uid_t uid = 0;                 // the job's user's
  pid_t keeper = 0;              // 0: none known (waiting, ended)
  UniqueFd pidfd;                // the keeper's, watched
  EventLoop::Id pidfd_watch = 0;
  int watch = -1;                // inotify watch of dir; -1 when none
  int followers = 0;             // streams that want log writes
  EventLoop::Id log_batch = 0;   // the timer of a batch of log writes (LogsWritten)
};

/// How long log writes gather before followers are told: a follower sees output at most
/// this late, and a chatty job wakes serve at most 1/kLogBatch times a second.
inline constexpr std::chrono::milliseconds kLogBatch{100};
/// Without inotify: how often live and followed jobs are looked at (a state change or
/// new log lines then reach a follower at most this late).
inline constexpr std::chrono::milliseconds kPollFallback{500};

/// How long job.start of a restart waits for the keeper of the job's last run to exit
/// after it recorded the end (the new run's keeper takes the same lock). The wait blocks
/// serve's loop: it is short, and a keeper past it makes the start UNAVAILABLE.
inline constexpr std::chrono::milliseconds kKeeperEndWait{2000};

class JobTable {
 public:
  /// What changed of job `id`: its state (kState) or its logs (kLogs).
  enum class Change { kState, kLogs };
  using Listener = std::function<void(const std::string& id, Change change)>;

  JobTable(EventLoop& loop, JobTableOptions options);
  JobTable(const JobTable&) = delete;
  JobTable& operator=(const JobTable&) = delete;
  ~JobTable();

  /// Makes the state directory (0700), watches it and adopts the jobs in it (above).
  Status Init();
  void SetListener(Listener listener) { listener_ = std::move(listener); }

  const JobEntry* Find(const std::string& id) const;
  /// Every job, oldest first.
  std::vector<const JobEntry*> All() const;

  /// job.start for `caller` (docs/agent-protocol.md): checks, then (unless dry_run)
  /// makes the job and starts, queues it or refuses it. The JobOnWorker as it is now.
  /// An id the table has is AlreadyExists, except a restart: the job has ended, is the
  /// same user's, and spec.restarts is larger than its own; it then runs again in its
  /// directory (logs appended), its record the new run's.
  Result<api::JobOnWorker> Start(api::JobSpec spec, uid_t caller, bool dry_run);
  /// job.cancel: a waiting job ends at once; a started one gets TERM, KILL after
  /// grace_seconds (its keeper does it). No-op for an ended job.
  Status Cancel(const std::string& id, int grace_seconds);
  /// The processes of the live jobs, each with its job's id (what the device guard and
  /// the devices op need to tell a job's holder from an orphan).
  host::LiveJobPids LivePids() const;
  /// Asks for (or, with false, stops asking for) kLogs changes of `id`.
  void Follow(const std::string& id, bool on);

 private:
  JobEntry* Mutable(const std::string& id);
  void Load(const std::string& id);
  void Adopt(JobEntry& job, pid_t keeper);
  Status SpawnKeeper(JobEntry& job);
  // Watches the keeper's pidfd: its end is KeeperGone.
  void WatchKeeper(JobEntry& job, pid_t keeper, UniqueFd pidfd);
  void KeeperGone(const std::string& id);
  void Reload(const std::string& id);
  void SetState(JobEntry& job, api::JobOnWorker state);
  void UpdateWatch(JobEntry& job);
  void OnInotify();
  // Without inotify: every live job's state is read again, every followed job's logs.
  void PollJobs();
  // A write to a followed job's logs: starts a batch (kLogBatch) whose end tells the
  // listener, unless one runs.
  void LogsWritten(const std::string& id);
  void Notify(const std::string& id, Change change);
  // The device guard's answer for a job that wants the TPU now; fills `job` (waiting,
  // waiting_for) or the log lines to write first.
  Status AdmitTpu(const api::JobSpec& spec, api::JobOnWorker& state,
                  std::vector<std::string>& log_lines);
  const JobEntry* TpuHolder() const;
  void StartWaiting();
  Status Create(JobEntry job, const std::vector<std::string>& log_lines);
  // Queues a waiting `job`, else starts its keeper (the guard's lines first in its log).
  Status Launch(JobEntry& job, const std::vector<std::string>& log_lines);
  // When `job` has ended but its keeper has not exited yet, waits for that (at most
  // kKeeperEndWait) and lets it go.
  void AwaitEndingKeeper(JobEntry& job);
  // Start's restart of ended `job` as `spec` (CheckRestart allowed it), from `state`.
  Status Restart(JobEntry& job, api::JobSpec spec, const api::JobOnWorker& state,
                 const std::vector<std::string>& log_lines);

  EventLoop& loop_;
  JobTableOptions options_;
  std::map<std::string, JobEntry> jobs_;
  std::deque<std::string> waiting_;  // accelerator jobs waiting for the TPU, FIFO
  UniqueFd inotify_;
  EventLoop::Id inotify_watch_ = 0;
  std::map<int, std::string> watches_;  // inotify watch -> job id
  EventLoop::Id poll_timer_ = 0;        // set when there is no inotify (PollJobs)
  Listener listener_;
};

}  // namespace tpufleet::agent
