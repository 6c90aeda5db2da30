// Jobs: a command run on every worker of a node at once by the workers' node agents,
// which own the processes, so a job outlives the terminal, the SSH connection and this
// process. This is the CLI's side (the agent's is src/agent, the pure rules core/job.h):
// starting a job, listing the fleet's jobs with each worker's record merged into one
// view per job, following their logs, cancelling them, and the gang rule.
//
// A job runs on one node: rank r is worker r of W, with the node's TPU topology, so
// `jax.distributed.initialize()` needs no arguments (core/job.h JobEnvironment, applied
// by the agent). StartJob first asks every worker to check the job without starting it
// (job.start with dry_run): a workdir that is not there, a name in use, an unknown user
// refuse the job before any worker starts it. Then every worker starts it at once.
//
// The gang rule (core/job.h GangCancels): once a worker has failed, the job is stopped on
// the others, unless it was started with keep_going. No agent sees the other workers,
// so the CLI applies it wherever it looks at a job: the detached watcher `run` starts
// (WatchJob), `jobs` (ApplyGangRule after ListJobs) and `logs -f` (FollowJob).
//
// A job run with a restart policy (`run --restart on-preemption|on-failure`) is also
// kept in the state store (a JobRecord): the spec as sent, the policy and the restarts so
// far. serve (src/reconcile) starts such a job again with RestartJob when its node was
// recreated after a preemption, or when it failed; the job sees how often it was
// restarted as TPUFLEET_RESTARTS. `cancel` ends the record (state "done").
//
// Everything goes through CallAgents (agent_client.h): a worker that cannot be asked is
// a per-worker note, never the end of the command.
//
// Thread-safety: as World's members; callbacks run on the calling thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/agent.h"
#include "control/access.h"
#include "control/agent_client.h"
#include "control/targets.h"
#include "control/world.h"
#include "core/catalog.h"
#include "core/job.h"
#include "core/node_record.h"
#include "util/status.h"

namespace tpufleet {

/// TERM, then KILL this much later, for `cancel` and the gang rule: a training step
/// and a checkpoint flush, as the agent's own default (docs/agent-protocol.md).
inline constexpr std::chrono::seconds kDefaultCancelGrace{10};
/// The watcher asks again this long after a watch broke (a worker rebooting, the
/// connection dropped): soon enough that a failure stops the gang within seconds.
inline constexpr std::chrono::seconds kWatchRetryDelay{5};
/// A watcher that has reached none of the job's workers for this long gives up: the
/// node is gone or down for good, and `jobs` still applies the rule when it looks.
inline constexpr std::chrono::minutes kWatchGiveUp{30};

/// The restarts a restartable job is allowed when `run` does not say: enough for a
/// spot job through a bad night of preemptions, few enough that a job that fails at
/// once does not run forever.
inline constexpr int kDefaultMaxRestarts = 10;
/// The most `--max-restarts` may ask for.
inline constexpr int kMaxMaxRestarts = 1000;

/// What `run` asks for.
struct RunRequest {
  std::vector<std::string> targets;  // ResolveTargets words naming one whole node
  std::string command;               // one shell line, run by `bash -lc` on each worker
  std::string name;                  // "" = DefaultJobName(command)
  std::string workdir;               // "" = the login's home
  EnvList env;                       // the user's --env, in order (CheckUserEnvEntry)
  bool accelerator = true;           // the job uses the TPU (one process per TPU)
  bool no_wait = false;              // refuse instead of waiting for the TPU
  bool kill_stale = false;           // kill an orphan holding the TPU instead of refusing
  bool keep_going = false;           // opt out of the gang rule
  std::string started_by;            // "alice@laptop", shown by `jobs`
  /// The Unix account it runs as on the workers: "" is tpufleet's login; another (a
  /// team server's collaborator, whose account `users add` made) has the agents start
  /// it as root for that account (AgentCall::admin).
  std::string user;
  std::string id;                    // "" = a new random id (tests give their own)
  /// "" or "never": the job is not restarted. "on-preemption": serve starts it again
  /// when its node was preempted (and recreated); "on-failure": also when it failed.
  std::string restart;
  int max_restarts = kDefaultMaxRestarts;  // with restart: the restarts allowed
};

/// One worker of a job: where it is and what its agent last said of the job.
struct JobWorker {
  WorkerTarget target;
  api::JobOnWorker record;  // meaningful when `known`
  bool known = false;       // the agent answered about this job
  Status status;            // why not, when not known (the worker could not be asked)
};

/// A job as the fleet's agents know it: each worker's record, merged.
struct JobView {
  std::string id;
  std::string name;
  std::string node;
  std::string user;  // who runs it on the workers
  std::string command;
  std::string started_by;  // "alice@laptop"
  bool keep_going = false;
  std::vector<JobWorker> workers;        // the node's workers, in order
  JobState state = JobState::kLost;      // JobStateOf the known workers
  bool ended = false;                    // AllEnded of the known workers
  int64_t created_unix_ms = 0;           // the earliest of the workers'
  int64_t started_unix_ms = 0;           // the latest start (0 until every known one started)
  int64_t ended_unix_ms = 0;             // the latest end (0 until ended)
  std::string first_failure;             // FirstFailureLine: "w2 failed first: exit 1"
  int restarts = 0;                      // the latest run's restarts (the workers' or the store's)
  std::optional<JobRecord> restartable;  // the store's record when it was run with --restart
  /// A restarted job's node's last time-to-recover (node_history.h), when the node
  /// recovered since the job was started.
  std::optional<double> time_to_recover_seconds;
};

/// The jobs of some workers, and the workers that could not be asked.
struct JobsReport {
  std::vector<JobView> jobs;    // newest first
  std::vector<Status> missing;  // one per worker that did not answer, naming it
};

/// The view of job `id` from the records of its workers (`found[i]` the record of
/// workers[i], when it has one; `errors[i]` why workers[i] could not say).
JobView MergeJob(const std::string& id, const std::vector<WorkerTarget>& workers,
                 const std::vector<std::optional<api::JobOnWorker>>& found,
                 const std::vector<Status>& errors);

/// Every job on the workers `targets` name (none: every worker of the fleet), merged
/// per job. Errors only when the targets are bad (ResolveTargets) or the call cannot
/// start; an unanswering worker is in `missing`.
///
/// For a caller allowed `access` (visible.h): only the nodes they may see are targets (a
/// name of another is "no node", as an unknown one) and only the jobs they may see are
/// listed. The agents are asked as root (`sudo -n`), as jobs.list shows a non-root
/// caller its own jobs only (docs/agent-protocol.md).
Result<JobsReport> ListJobs(World& world, const std::vector<std::string>& targets,
                            const Access& access = Access::Everything("local"));

/// The job `arg` means (an id, or a name: core/job.h ResolveJob) among the jobs of the
/// fleet that `access` may see (Access::MaySeeJob; the others are as if they did not
/// exist). NotFound with a "did you mean" when there is none.
Result<JobView> FindJob(World& world, const std::string& arg,
                        const Access& access = Access::Everything("local"));

/// The exit status that stands for the job's result: 0 when it succeeded, the first
/// failure's exit code when it exited non-zero (127: command not found), 128 + the
/// signal's number when a signal killed it, 1 otherwise (cancelled, lost, unknown).
int JobExitCode(const JobView& job);

/// Starts the job `request` describes on every worker of its node (see the file
/// comment): InvalidArgument for a bad name, env or command, or targets that are not one
/// whole node; the targets' errors; InvalidArgument for a name a live job of the fleet
/// has; each worker's refusal of the dry run (a missing workdir), one line per worker,
/// with nothing started. When some workers start it and others fail to, the started
/// ones are cancelled and the error says which failed and why.
Result<JobView> StartJob(World& world, const Catalog& catalog, const RunRequest& request);

/// Starts the restartable job `job` (the store's record) again on its node as the store
/// has it now: the node's current workers and topology (a recreated node has new
/// addresses), the stored spec with restarts + 1, in the job's dir when the agent still
/// has it (logs appended). `reason` says why ("preempted", "failed (exit 1)").
/// On success `job` (restarts, last_reason, updated_at) is stored together with a
/// `job-resumed` event (job=ID restarts=N). At the limit (restarts == max_restarts) it
/// starts nothing, stores the job as "gave-up" with a `job-gave-up` event and returns
/// FailedPrecondition. The caller writes neither event. FailedPrecondition when `job`
/// is not "active"; the start's errors as StartJob's (nothing stored then).
Result<JobView> RestartJob(World& world, const Catalog& catalog, JobRecord& job,
                           const std::string& reason);

/// Cancels `job` on each of its workers that has not ended (TERM, KILL after `grace`),
/// and returns the job as the workers then tell it. `cold` as AgentCall's. A restartable
/// job's record is ended ("done", cancelled) first, so serve does not start it again.
Result<JobView> CancelJob(World& world, const JobView& job, std::chrono::seconds grace,
                          bool cold = false);

/// The gang rule on `job` as it is known now: when a worker failed and the job was not
/// started with keep_going, cancels it on the workers still starting, waiting or
/// running, and updates `job`. Returns the names of the workers it cancelled (none
/// when the rule had nothing to do).
Result<std::vector<std::string>> ApplyGangRule(World& world, JobView& job, bool cold = false);

/// What `logs` prints, and how.
struct FollowOptions {
  std::optional<int> worker;    // only this worker's index (nullopt: every worker)
  std::optional<int64_t> tail;  // the last N lines of each stream (nullopt: all)
  bool follow = false;          // go on until the job has ended (`logs -f`, `run`)
};

/// A piece of a worker's output: `stream` is "stdout" or "stderr".
using JobOutputFn =
    std::function<void(const JobWorker& worker, std::string_view stream, std::string_view data)>;
/// A line for people about what happened meanwhile ("pod/w2 failed: exit 1; stopping
/// the other workers").
using JobNoteFn = std::function<void(const std::string& note)>;

/// Prints the job's logs through `output`, as FollowOptions say. While following,
/// keeps `job`'s states up to date from the agents' state lines and applies the gang
/// rule (ApplyGangRule, cold) when it sees a failure. Returns the job as last seen.
/// Stops early when `cancelled` says so (Ctrl-C: the job goes on).
Result<JobView> FollowJob(World& world, JobView job, const FollowOptions& options,
                          const JobOutputFn& output, const JobNoteFn& note,
                          const AgentCancelFn& cancelled = {});

/// The detached gang watcher (`tpufleet jobs --watch ID`): watches job `id` on its
/// workers (job.watch) until every worker has ended, applying the gang rule at each
/// change; after a broken watch it asks again kWatchRetryDelay later, and gives up
/// after kWatchGiveUp without any worker answering, or at once when the job's node is
/// no longer in tpufleet's state (NotFound: `down` deleted it). `note` gets a line for each thing
/// it did, for its log.
Status WatchJob(World& world, const std::string& id, const JobNoteFn& note);

}  // namespace tpufleet
