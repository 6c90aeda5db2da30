// Jobs, the parts that need no I/O: the environment a job's process gets on each
// worker, how the workers' states make the job's state, the gang rule, and the rules for
// job ids and names. The agent (src/agent) applies the environment and records each
// worker's state; the CLI (src/control/jobs) merges the states, applies the gang rule,
// makes ids and names and resolves a user's JOB argument. Both ask this one header, so
// the two ends cannot disagree.
//
// A job is one shell command run on every worker of each targeted node at once. On a
// node of W workers, the process on worker r is rank r of W. Times are Unix
// milliseconds, as the agent protocol carries them (docs/agent-protocol.md); core has
// no clock, and no randomness: callers pass both in.
//
// Thread-safety: pure functions over values.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/catalog.h"
#include "util/enum_names.h"
#include "util/status.h"

namespace tpufleet {

// ---------------------------------------------------------------------------------
// The job's environment

/// The port of JAX's coordination service on worker 0: JAX's default since JAX commit
/// 6ea9d94f93 (2025-11-03; 8476 before), so a program that passes no port finds it
/// (reference/monitoring.md §3, "How JAX finds the coordinator").
inline constexpr int kJaxCoordinatorPort = 8482;

/// The most bytes of one "NAME=VALUE" entry: Linux's MAX_ARG_STRLEN (32 pages, 131072
/// bytes with the terminating NUL). A longer entry makes execve fail with E2BIG, after
/// the job was accepted; refusing it up front gives the user one clear message instead.
inline constexpr size_t kMaxEnvEntryBytes = 131071;

/// What a job's environment needs to know of the node it runs on; the `topology` of a
/// job.start request.
struct JobTopology {
  /// The Cloud TPU type ("v4-32"), or "" for a machine without a TPU (ssh-hosts).
  std::string accelerator_type;
  /// Every worker's address, worker 0 first, as the API's networkEndpoints list them
  /// (on a TPU VM the metadata's worker-network-endpoints has the same order): the
  /// addresses the workers reach each other at, networkEndpoints[].ipAddress, not the
  /// external address (accessConfig) the CLI may log in through. One entry for a
  /// single-host node.
  std::vector<std::string> worker_addresses;
  /// Chips on each worker's host (catalog chips_per_worker); 0 without a TPU.
  int chips_per_host = 0;
  /// Where worker 0 serves JAX's coordination service.
  int coordinator_port = kJaxCoordinatorPort;

  bool operator==(const JobTopology&) const = default;
};

/// A job's topology on a node of accelerator type `type` (nullptr: a machine without a
/// TPU) whose workers answer at `worker_addresses`, worker 0 first. InvalidArgument when
/// the count of addresses is not the type's count of workers (a node the API lists
/// half-made), or an address is not a host address (CheckHostAddress).
Result<JobTopology> MakeJobTopology(const AcceleratorType* type,
                                    std::vector<std::string> worker_addresses);

/// A topology as it arrives over the wire: OK, or InvalidArgument saying what is wrong
/// (no addresses, an address that is not a host address, a port outside 1-65535,
/// a negative chips_per_host).
Status CheckJobTopology(const JobTopology& topology);

/// Environment entries, in order: (name, value).
using EnvList = std::vector<std::pair<std::string, std::string>>;

/// An environment variable name as POSIX shells accept it: [A-Za-z_][A-Za-z0-9_]*.
/// A name with '=' or a space could not be set, and one a shell cannot name could not be
/// read back by the job's own scripts. InvalidArgument otherwise.
Status CheckEnvName(std::string_view name);

/// One user `--env` entry: a valid name (CheckEnvName), a value without NUL (execve
/// ends a string at NUL: the job would see less than was given), at most
/// kMaxEnvEntryBytes in all, and not one of the variables tpufleet keeps (below).
/// InvalidArgument naming the variable and what is wrong.
Status CheckUserEnvEntry(std::string_view name, std::string_view value);

/// Parses a `--env` flag value "NAME=VALUE" (VALUE may be empty and may hold '=')
/// and checks it with CheckUserEnvEntry. InvalidArgument when there is no '='.
Result<std::pair<std::string, std::string>> ParseEnvAssignment(std::string_view text);

/// The environment tpufleet gives the process of job `job_id` (named `job_name`) on
/// worker `worker` of `topology`, with the user's `--env` entries laid over it. The
/// agent adds HOME, USER, LOGNAME, SHELL and PATH (the login's defaults) itself.
///
/// Every job, every machine:
///   TPUFLEET_JOB_ID       the job's id                                       (tpufleet)
///   TPUFLEET_JOB_NAME     the job's name                                     (tpufleet)
///   TPUFLEET_RANK         r, this worker's index in worker_addresses         (tpufleet)
///   TPUFLEET_WORLD_SIZE   W, the count of worker_addresses                   (tpufleet)
///   TPUFLEET_COORDINATOR  worker 0's address:coordinator_port ("[v6]:port" for an IPv6
///                         address): where a program that brings its own rendezvous
///                         (torch.distributed's MASTER_ADDR/PORT, say) can meet
///                                                                            (tpufleet)
///   TPUFLEET_RESTARTS     N, how often the job was started again after it ended
///                         (`run --restart`): 0 on its first run. A job that checkpoints
///                         can tell a fresh start from a resumption by it (tpufleet)
/// With a TPU (accelerator_type not empty), the variables JAX and PyTorch/XLA read, so
/// that `jax.distributed.initialize()` needs no arguments
/// (reference/monitoring.md §3, JAX jax/_src/clusters/cloud_tpu_cluster.py, PTXLA
/// torch_xla/_internal/tpu.py and torch_xla/core/xla_env_vars.py):
///   TPU_WORKER_ID         r: the host's index; JAX's GKE cluster takes the process id
///                         from it, PTXLA its worker id. The metadata server's
///                         agent-worker-number says the same on a real TPU VM.
///   TPU_WORKER_HOSTNAMES  a0,a1,…: every worker, worker 0 first; JAX takes the process
///                         count and the coordinator host from it, PTXLA the worker
///                         addresses. The metadata's worker-network-endpoints says the
///                         same.
///   CLOUD_TPU_TASK_ID     r: PTXLA's global process index, worker_id × local world
///                         size + local rank, which is r with one process per host.
///   TPU_ACCELERATOR_TYPE  the type ("v4-32"): PTXLA and libtpu read it instead of the
///                         metadata's accelerator-type.
/// and, only on a node of more than one worker:
///   JAX_COORDINATOR_ADDRESS  TPUFLEET_COORDINATOR's value: jax.distributed.initialize
///                         reads it when given no coordinator_address. Left out on a
///                         single-host node, where rank 0 is the whole world: there no
///                         variable may make JAX start a coordinator and wait for peers.
/// Deliberately not set:
///   TPU_PROCESS_BOUNDS, TPU_CHIPS_PER_PROCESS_BOUNDS (and the older *_HOST_BOUNDS),
///   TPU_VISIBLE_CHIPS: a job is one process per host using all its chips, which is
///   libtpu's default; worse, chips-per-process bounds other than the whole host make
///   libtpu skip /tmp/libtpu_lockfile, and with it the one-process-per-TPU rule.
///   MEGASCALE_COORDINATOR_ADDRESS (and MEGASCALE_*): multislice only; JAX would take
///   its coordinator from it over worker 0's address. tpufleet runs no multislice jobs.
///   TPU_SKIP_MDS_QUERY: the metadata server answers on every TPU VM (and the emulator's
///   workers); the variables above agree with it.
/// Without a TPU (an ssh-hosts machine): only the TPUFLEET_* variables; JAX and PyTorch
/// would take the TPU_* ones as a sign of a TPU and fail looking for it.
///
/// The user's entries, in their order, follow ours; one that names a variable of ours
/// replaces its value in place (a program that wants another coordinator port, say),
/// and of repeated names the last wins. Except TPUFLEET_JOB_ID, TPUFLEET_RANK,
/// TPUFLEET_WORLD_SIZE and TPUFLEET_RESTARTS, which are refused (CheckUserEnvEntry): the
/// same `--env` goes to every worker, so an override would give every rank the same rank
/// and world size; TPUFLEET_JOB_ID is how a process (and whoever reads
/// /proc/PID/environ) tells which job it belongs to: it must not claim another job's;
/// and the `--env` of a job's first run is also its restarts', which would all say 0.
///
/// InvalidArgument when `worker` is not an index of topology.worker_addresses, or the
/// topology (CheckJobTopology), the id (CheckJobId), the name (CheckJobName) or a user
/// entry (CheckUserEnvEntry) is malformed.
/// `restarts` is the job's JobSpec.restarts; InvalidArgument when negative.
Result<EnvList> JobEnvironment(const JobTopology& topology, int worker,
                               std::string_view job_id, std::string_view job_name,
                               const EnvList& user_env, int restarts = 0);

// ---------------------------------------------------------------------------------
// States

/// The state of a job's process on one worker, and (merged, JobStateOf) of the job.
/// The protocol spells them as the names table does.
enum class JobState {
  kStarting,   // accepted; the process is being started
  kWaiting,    // waits for the TPU, held by another job
  kRunning,    // the process runs
  kSucceeded,  // exited 0
  kFailed,     // exited non-zero, was killed by a signal it was not sent by a cancel,
               // or could not be started (message says why)
  kCancelled,  // stopped by a cancel (the user's or the gang rule's), whatever it exited with
  kLost,       // the agent lost track of it: its keeper vanished without a record
};

inline constexpr EnumName<JobState> kJobStateNames[] = {
    {JobState::kStarting, "starting"},   {JobState::kWaiting, "waiting"},
    {JobState::kRunning, "running"},     {JobState::kSucceeded, "succeeded"},
    {JobState::kFailed, "failed"},       {JobState::kCancelled, "cancelled"},
    {JobState::kLost, "lost"},
};

/// succeeded, failed, cancelled and lost: the state will not change again.
bool IsEnded(JobState state);

/// The job's state from its workers' states, the first row that matches:
///   any failed        failed     a failure decides the job's result, even while other
///                                workers still run (until the gang rule stops them)
///   any lost          lost       a worker's outcome is unknown: not a success
///   any cancelled     cancelled
///   any waiting       waiting    the gang cannot go on before every rank runs
///   any starting      starting
///   any running       running    the rest (if any) succeeded
///   all succeeded     succeeded
///   no workers        lost       no worker knows the job any more
/// So a live state is shown only while nothing has decided the job's result, and the
/// job has ended when every worker has (AllEnded), not when this says failed.
JobState JobStateOf(const std::vector<JobState>& workers);

/// Every state IsEnded (true for none).
bool AllEnded(const std::vector<JobState>& workers);

/// How one worker's process ended, as far as known: what the first-failure line needs.
struct WorkerOutcome {
  std::string node;                // the node's name; "" when the job has one node
  int worker = 0;                  // the worker's index on its node
  JobState state = JobState::kStarting;
  std::optional<int> exit_code;    // when it exited
  std::string signal;              // when a signal killed it: "KILL", "TERM", … (no SIG)
  std::string message;             // why it could not be started, when it could not
  int64_t ended_unix_ms = 0;       // when it ended; 0 while not ended or not known
};

/// How it ended, for people: "exit 1", "killed by SIGKILL", the message of one that could
/// not start, "lost (the agent lost track of it)", or the state's name for any other.
std::string DescribeEnd(const WorkerOutcome& outcome);

/// The worker that failed first: among those failed or lost, the earliest ended (an
/// unknown end time, 0, counts as last), then the lowest node (by name) and worker.
/// nullopt when none failed or was lost.
std::optional<WorkerOutcome> FirstFailure(const std::vector<WorkerOutcome>& workers);

/// The summary line `jobs` prints for a failed job: "w2 failed first: exit 1",
/// "pod-a/w2 failed first: killed by SIGKILL" (with a node name); "" when none failed.
std::string FirstFailureLine(const std::vector<WorkerOutcome>& workers);

/// The gang rule: once a worker has failed or was lost, the job cannot succeed, so the
/// other workers still starting, waiting or running are stopped, unless `keep_going`.
/// Returns their indices in `workers`, ascending; empty when nothing is to be cancelled.
std::vector<size_t> GangCancels(const std::vector<JobState>& workers, bool keep_going);

// ---------------------------------------------------------------------------------
// Ids, names and the JOB argument

/// Random bytes a job id is made from (40 bits; the id uses 35 of them).
using JobIdBytes = std::array<uint8_t, 5>;

/// "j" and 7 characters of lowercase base32 (RFC 4648's alphabet, a-z2-7) made from
/// `random`: 35 bits, so among 10,000 jobs two share an id with a chance of about one
/// in 700; the CLI draws again when the id is taken among the jobs it knows. Ids are
/// matched exactly, and the leading letter keeps an id from ever looking like a number
/// or an option.
std::string MakeJobId(const JobIdBytes& random);

/// What MakeJobId makes: InvalidArgument otherwise. The agent checks every id it is
/// sent: the id names its directory (jobs/ID/), so a "../x" must never get that far.
Status CheckJobId(std::string_view id);

/// A job name: [a-z0-9][a-z0-9._-]{0,62}. It becomes part of file names (logs copied
/// to the user's machine), log line prefixes and shell words, so no '/', spaces, quotes
/// or upper case (which case-insensitive file systems would fold), and a leading letter
/// or digit so it is never an option or a hidden file. InvalidArgument otherwise.
Status CheckJobName(std::string_view name);

/// The default name of a job running `command` (one shell line): the basename of its
/// first word after any leading NAME=VALUE assignments ("python3" for
/// "FOO=1 /usr/bin/python3 train.py"), made valid (lower case, other characters '-',
/// cut to 63); "job" when nothing is left.
std::string DefaultJobName(std::string_view command);

/// A job the CLI knows of, for resolving names.
struct JobRef {
  std::string id;
  std::string name;
  JobState state = JobState::kStarting;  // JobStateOf its workers
  bool ended = false;                    // AllEnded of its workers
  int64_t created_unix_ms = 0;
};

/// The job a user's JOB argument means, as an index into `jobs`: the job with that id;
/// else the newest (by created_unix_ms) with that name that has not ended; else the
/// newest ended one with it. NotFound otherwise: `no job "x"` and a "did you mean" of
/// the closest ids and names, when any is close.
Result<size_t> ResolveJob(std::string_view arg, const std::vector<JobRef>& jobs);

/// OK when no job in `jobs` that has not ended is named `name`; InvalidArgument naming
/// the job that has it otherwise (names are unique among live jobs, so a JOB argument
/// never means two running jobs).
Status CheckNameFree(std::string_view name, const std::vector<JobRef>& jobs);

/// How long a job ran or has run, for a table column: "0s", "45s", "4m12s",
/// "2h03m", "3d04h": two units at most, the smaller cut (not rounded). Negative durations
/// (a skewed clock) show as "0s". util's FormatDuration is the exact spec syntax; this
/// is for people.
std::string FormatJobDuration(std::chrono::milliseconds elapsed);

}  // namespace tpufleet
