// The node agent's wire protocol, version 1: the requests the CLI sends to
// `tpufleet-agent` over its Unix socket and the lines the agent answers, and their JSON.
// docs/agent-protocol.md is the protocol in full (transport, each op, who may call it,
// the compatibility rule); this header is its types.
//
// Framing: newline-delimited JSON, one object per line, each line at most
// kMaxAgentLineBytes (the newline not counted). Every request is
// {"v": 1, "op": "…", …}; every answer line carries "v": 1 too. A one-shot op answers one
// line, {"v":1,"ok":true,…} or {"v":1,"ok":false,"error":{"code":"NOT_FOUND","message":…}};
// a streaming op (job.logs, job.watch) answers data and state lines, then a last line
// with "end": true and ok/error; notice.watch answers notice lines and never ends by
// itself (the caller closes it; an end line comes only when the agent gives up on it).
//
// Compatibility: a reader ignores the fields it does not know (a newer peer may add
// some); a request whose "v" this build does not speak is refused with
// FAILED_PRECONDITION naming the versions it speaks. A field is never given another
// meaning or type within a version.
//
// Plain values, as in api/fleet.h; each struct's comment names its JSON object. Keys are
// written in alphabetical order. A field whose comment says "written only when set" is
// left out when empty, zero or nullopt; a reader takes a missing field as its default.
// The To*/…Line functions never throw: bytes that are not UTF-8 (a job's output) become
// U+FFFD. The Parse functions refuse, with one message naming the field, a line that is
// too long, not a JSON object, or has a field of the wrong type.
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "api/metrics.h"
#include "core/job.h"
#include "util/status.h"

namespace tpufleet::api {

/// The version this build writes, and every version it reads ("protocol" of hello).
inline constexpr int kAgentProtocolVersion = 1;
inline constexpr int kAgentProtocolVersions[] = {1};

/// The longest line either side sends or accepts, newline not counted: a job's env and
/// command fit many times over, and a reader never buffers more than this per line.
inline constexpr size_t kMaxAgentLineBytes = size_t{1} << 20;

/// Where the agent listens and keeps its state, unless told otherwise (serve --socket,
/// --state-dir). The socket's directory also holds the lock that keeps serve single.
inline constexpr std::string_view kAgentSocketPath = "/run/tpufleet-agent/agent.sock";
inline constexpr std::string_view kAgentStateDir = "/var/lib/tpufleet-agent";
/// Where `up` installs the binary on a worker.
inline constexpr std::string_view kAgentBinaryPath = "/usr/local/bin/tpufleet-agent";

/// `call` exits 3 when no agent answers on the socket (0: an answer arrived, errors
/// included; 2: bad usage).
inline constexpr int kAgentNotRunningExit = 3;

enum class AgentOp {
  kHello,          // "hello"
  kJobStart,       // "job.start"
  kJobList,        // "job.list"
  kJobCancel,      // "job.cancel"
  kJobLogs,        // "job.logs" (streaming)
  kJobWatch,       // "job.watch" (streaming)
  kDevices,        // "devices"
  kDoctor,         // "doctor"
  kAccountsApply,  // "accounts.apply"
  kDisksMount,     // "disks.mount"
  kMetrics,        // "metrics"
  kNotice,         // "notice"
  kNoticeWatch,    // "notice.watch" (streaming, endless)
};
std::string_view AgentOpName(AgentOp op);
/// Whether the op answers data/state lines and an end line (else one line).
bool IsStreamingOp(AgentOp op);

/// A job's state on one worker, and the topology of a job: core/job.h's, so the agent,
/// the CLI and the protocol cannot disagree. JobState is written by its name in
/// kJobStateNames ("starting", "waiting", "running", "succeeded", "failed", "cancelled",
/// "lost"); JobTopology as {"accelerator_type", "worker_addresses", "chips_per_host",
/// "coordinator_port"}.
using ::tpufleet::JobState;
using ::tpufleet::JobTopology;
std::string_view JobStateName(JobState state);
std::optional<JobState> JobStateFromName(std::string_view name);

/// What to run, the "job" of job.start (and the agent's jobs/ID/job.json):
/// {"id", "name", "user", "command", "workdir", "env", "accelerator", "no_wait",
/// "kill_stale", "keep_going", "pty", "topology", "worker", "started_by"} and, written
/// only when above 0, {"restarts"}.
struct JobSpec {
  std::string id;       // "j" + 7 lowercase base32 (core/job.h checks it)
  std::string name;
  std::string user;     // who runs it: "" is the caller; only root may name another
  std::string command;  // one shell line, run by `/bin/bash -lc` as the user's login
  std::string workdir;  // "" is the user's home
  std::map<std::string, std::string> env;  // the user's --env, besides the job's own
  bool accelerator = false;  // uses the TPU: waits for it (one process per TPU)
  bool no_wait = false;      // with accelerator: refuse instead of waiting
  bool kill_stale = false;   // with accelerator: kill an orphan holder instead of refusing
  bool keep_going = false;   // informational: the gang rule's opt-out, shown by job.list
  bool pty = false;          // run on a pseudo-terminal (worker 0 gets one, for attach)
  JobTopology topology;
  int worker = 0;            // this worker's index (rank); `call --worker` sets it
  std::string started_by;    // "alice@laptop"
  /// How often this job was started again after it ended (preempted, failed): the job
  /// sees it as TPUFLEET_RESTARTS. job.start of an id the agent has, whose job ended,
  /// with a larger `restarts` starts it again in the same job dir (logs appended).
  int restarts = 0;
};

/// What the job's TPU waits for, or who holds it: {"pid", "user", "command", "job"}
/// ("job" is "" for a process of no job). The metrics' chip holder: one type, one JSON.
using TpuHolder = ::tpufleet::ChipHolder;

/// A job on one worker, what job.start, job.list, job.cancel and the state lines give:
/// {"id", "name", "user", "command", "worker", "state", "pid", "created_unix_ms",
/// "started_unix_ms", "ended_unix_ms", "started_by", "keep_going", "world_size"} and,
/// written only when set, {"exit_code", "signal", "waiting_for", "message", "restarts"}.
/// A restarted job's times, pid and exit are its latest run's.
struct JobOnWorker {
  std::string id;
  std::string name;
  std::string user;
  std::string command;
  int worker = 0;
  JobState state = JobState::kStarting;
  int pid = 0;                    // the command's process (its group's leader); 0 before
  std::optional<int> exit_code;   // when it exited (127: the command was not found)
  std::string signal;             // when a signal killed it: "TERM", "KILL", …
  int64_t created_unix_ms = 0;    // job.start arrived
  int64_t started_unix_ms = 0;    // the command started (0 before)
  int64_t ended_unix_ms = 0;      // it ended (0 before)
  std::optional<TpuHolder> waiting_for;  // state waiting: who holds the TPU
  std::string message;  // why it failed to start, or how it was lost (not the job's output)
  std::string started_by;
  bool keep_going = false;
  int world_size = 1;   // the job's workers (topology's worker_addresses, at least 1)
  int restarts = 0;     // its spec's restarts: the run this record describes
};

/// doctor's "expect": what the CLI knows of the worker, {"accelerator_type",
/// "chips_per_host", "worker", "endpoints"}.
struct DoctorExpect {
  std::string accelerator_type;
  int chips_per_host = 0;
  int worker = 0;
  std::vector<std::string> endpoints;  // every worker's address, as the API lists them
};

/// The worker's own notice of its end, as its metadata server says it (the agent
/// long-polls instance/preempted and instance/maintenance-event): what notice answers
/// and each notice line of notice.watch carries, {"preempted", "maintenance_event",
/// "changed_unix_ms", "source", "error"}.
struct AgentNotice {
  bool preempted = false;  // instance/preempted is TRUE: the VM is going away
  /// instance/maintenance-event: "NONE", or what is coming ("TERMINATE_ON_HOST_MAINTENANCE",
  /// "MIGRATE_ON_HOST_MAINTENANCE", …), as the server spelled it.
  std::string maintenance_event = "NONE";
  /// When the agent saw the notice take its present value (the watcher's start for the
  /// first value it read); 0 before the first answer.
  int64_t changed_unix_ms = 0;
  /// "metadata": the values come from the worker's metadata server; "none": there is no
  /// metadata server (a host of ssh-hosts, or not reached yet), the values are defaults.
  std::string source = "none";
  std::string error;  // why the last poll failed ("" when it went through)
  bool operator==(const AgentNotice&) const = default;
};

/// An account of accounts.apply: {"name", "keys", "sudo"}.
struct AccountSpec {
  std::string name;
  std::vector<std::string> keys;  // exactly these in the tpufleet block of authorized_keys
  bool sudo = false;
};

/// An account accounts.apply takes away (`tpufleet users remove`): {"name", "purge"}.
/// Its processes are stopped (its jobs cancelled), its tpufleet keys removed and its
/// sudo rule made `!ALL`; with purge the account and its home go too.
struct AccountRemoval {
  std::string name;
  bool purge = false;
};

/// A data disk of disks.mount: {"disk", "path", "read_only"}. The worker shows the disk
/// as /dev/disk/by-id/google-DISK (its name in its zone).
struct MountSpec {
  std::string disk;
  std::string path;  // an absolute directory, made when missing
  bool read_only = false;
};

/// A request: {"v", "op"} and the op's fields (docs/agent-protocol.md):
/// job.start {"job", "dry_run"}, job.list {"ids"}, job.cancel {"id", "grace_seconds"},
/// job.logs {"id", "tail", "follow"}, job.watch {"ids"}, doctor {"expect"},
/// accounts.apply {"users", "remove"}, disks.mount {"mounts"}, metrics {"history_seconds", "step_seconds"}; any op may
/// carry {"worker"} (`call --worker N` adds it).
struct AgentRequest {
  AgentOp op = AgentOp::kHello;
  std::optional<int> worker;   // job.start: the job's worker (overrides job.worker)
  JobSpec job;                 // job.start
  bool dry_run = false;        // job.start: check the user, workdir and names; start nothing
  std::vector<std::string> ids;  // job.list (empty: every job), job.watch (at least one)
  std::string id;              // job.cancel, job.logs
  int grace_seconds = 10;      // job.cancel: TERM, then KILL this much later
  std::optional<int64_t> tail;  // job.logs: the last N lines of each stream (nullopt: all)
  bool follow = false;         // job.logs: go on until the job ended and its logs drained
  DoctorExpect expect;         // doctor
  std::vector<AccountSpec> users;  // accounts.apply
  std::vector<AccountRemoval> remove;  // accounts.apply: written only when not empty
  std::vector<MountSpec> mounts;   // disks.mount
  MetricsQuery metrics;        // metrics: its two fields sit at the request's top level
};

/// The request on one line (no newline), "v": kAgentProtocolVersion.
std::string ToLine(const AgentRequest& request);
/// A request line read by the agent. InvalidArgument for a line that is too long, not a
/// JSON object, has no "v", an unknown "op", a field of the wrong type, or lacks what
/// the op needs (job.start: job.id and job.command; job.cancel and job.logs: id;
/// job.watch: ids; metrics: history_seconds within 0..kMaxHistorySeconds and
/// step_seconds within 0..kMaxStepSeconds); FailedPrecondition for a "v" this build does
/// not speak.
Result<AgentRequest> ParseAgentRequest(std::string_view line);
/// `line` (a request from the CLI) with "worker": worker set, everything else kept as
/// it was, on one line: what `call --worker N` sends. InvalidArgument when `line` is not
/// a JSON object or is too long.
Result<std::string> AddWorkerToRequest(std::string_view line, int worker);

/// hello: {"agent_version", "binary_sha256", "protocol", "hostname", "boot_id",
/// "time_unix_ms", "uid"}.
struct AgentHello {
  std::string agent_version;
  std::string binary_sha256;    // of the agent's own executable, hex: what `up` compares
  std::vector<int> protocol;    // the versions spoken
  std::string hostname;
  std::string boot_id;          // /proc/sys/kernel/random/boot_id: changes at each boot
  int64_t time_unix_ms = 0;     // the worker's clock (doctor's offset)
  int uid = 0;                  // the caller's, as SO_PEERCRED told the agent
};

/// An accelerator: {"index", "path", "pci_address", "family"}.
struct AgentDevice {
  int index = 0;
  std::string path;         // "/dev/accel0", "/dev/vfio/3"
  std::string pci_address;  // "0000:00:04.0"
  std::string family;       // "v4"
};

/// /tmp/libtpu_lockfile: {"present", "locked_by_pid"}; locked_by_pid is 0 when no
/// process holds a lock on it.
struct AgentLockfile {
  bool present = false;
  int locked_by_pid = 0;
};

/// A process holding a device or the lock: {"device", "pid", "user", "command", "job"}.
struct DeviceHolder {
  std::string device;  // the device's path, or the lockfile's
  int pid = 0;
  std::string user;
  std::string command;
  std::string job;  // "" when it belongs to no job of the agent
};

/// devices: {"devices", "lockfile", "holders"}.
struct DevicesReport {
  std::vector<AgentDevice> devices;
  AgentLockfile lockfile;
  std::vector<DeviceHolder> holders;
};

/// A worker-side doctor check: {"name", "ok", "detail", "fix"}.
struct DoctorCheck {
  std::string name;    // "devices", "lockfile", "metadata", "disk /", "clock", …
  bool ok = false;
  std::string detail;  // what was seen
  std::string fix;     // what to do about it ("" when ok)
};

/// doctor: {"checks", "time_unix_ms"}.
struct DoctorReport {
  std::vector<DoctorCheck> checks;
  int64_t time_unix_ms = 0;
};

/// What accounts.apply did for one user: {"name", "action", "error"} and, written only
/// when set, {"detail"}.
struct AccountResult {
  std::string name;
  /// "created", "updated" (keys changed), "unchanged", "sudo_only" (an account the agent
  /// did not make: only its sudo rule set), "removed" (no longer listed), "revoked" (in
  /// "remove": processes stopped, keys gone), "purged" (in "remove" with purge: the
  /// account and home gone too), "refused".
  std::string action;
  std::string error;   // what failed; "" when it all went through
  std::string detail;  // for sudo_only: why the keys were left alone
};

/// The metadata guard on a worker after accounts.apply (docs/security.md): {"active",
/// "users", "error"} and, written only when set, {"detail"}.
struct MetadataGuardReport {
  bool active = false;             // the token is kept from `users` now
  std::vector<std::string> users;  // the accounts without sudo it guards (or should)
  std::string error;               // why it could not: the apply failed ("" when not)
  std::string detail;              // what it does, in words
};

/// accounts.apply's body: {"results": [AccountResult…], "metadata_guard": {…}}.
struct AccountsReport {
  std::vector<AccountResult> results;
  MetadataGuardReport metadata_guard;
};

/// What disks.mount did for one disk: {"disk", "path", "action", "error"}.
struct MountResult {
  std::string disk;
  std::string path;
  /// "mounted", "formatted" (a blank read-write disk given ext4, then mounted),
  /// "unchanged" (already mounted there), "unmounted" (no longer listed), "refused".
  std::string action;
  std::string error;  // what failed; "" when it went through
};

/// A one-shot op's answer, and the status of a streaming op's end line. The body is
/// written beside "ok" when the status is OK: hello's fields, {"job": JobOnWorker}
/// (job.start, job.cancel), {"jobs": […]} (job.list), the fields of devices', doctor's
/// and metrics' (MetricsReport) bodies, {"results": […]} (disks.mount), AccountsReport's
/// fields (accounts.apply), notice's fields (AgentNotice). An error is
/// {"code", "message"}, the code one of INVALID_ARGUMENT, NOT_FOUND, ALREADY_EXISTS,
/// PERMISSION_DENIED, FAILED_PRECONDITION, UNAVAILABLE, INTERNAL (and TIMEOUT,
/// RESOURCE_EXHAUSTED, which v1 agents never send).
using AgentBody = std::variant<std::monostate, AgentHello, JobOnWorker, std::vector<JobOnWorker>,
                               DevicesReport, DoctorReport, AccountsReport,
                               std::vector<MountResult>, MetricsReport, AgentNotice>;
struct AgentAnswer {
  Status status;
  AgentBody body;
};

/// A data line of job.logs: {"stream": "stdout"|"stderr", "data": "…"}.
struct LogChunk {
  std::string stream;
  std::string data;  // whole lines where they fit, newlines kept
};

/// A line of an answer, as the CLI reads it.
struct AgentLine {
  enum class Kind {
    kAnswer,  // a one-shot op's answer: `answer`
    kData,    // job.logs' output: `chunk`
    kState,   // {"state": JobOnWorker}: `state`
    kEnd,     // a streaming op's last line: `answer.status` (no body)
    kNotice,  // {"notice": AgentNotice}, notice.watch's: `notice`
  };
  Kind kind = Kind::kAnswer;
  AgentAnswer answer;
  LogChunk chunk;
  JobOnWorker state;
  AgentNotice notice;
};

/// The lines the agent writes, each without its newline.
std::string AnswerLine(const AgentAnswer& answer);
std::string DataLine(const LogChunk& chunk);
std::string StateLine(const JobOnWorker& state);
std::string NoticeLine(const AgentNotice& notice);
std::string EndLine(const Status& status);
/// An answer line of a request of `op`, which says what the body of a one-shot answer
/// is. InvalidArgument as for requests; FailedPrecondition for another "v".
Result<AgentLine> ParseAgentLine(std::string_view line, AgentOp op);

/// The agent's files: jobs/ID/job.json (the spec) and jobs/ID/state.json (the state),
/// indented documents without a final newline; read back with the Parse functions.
std::string ToJson(const JobSpec& spec);
std::string ToJson(const JobOnWorker& job);
Result<JobSpec> ParseJobSpec(std::string_view text);
Result<JobOnWorker> ParseJobOnWorker(std::string_view text);

}  // namespace tpufleet::api
