// The wire types of the --json output of the commands that work on workers (`exec`,
// `cp`, `forward`, `jobs`, `cancel`), and their JSON.
//
// Plain values, as in api/fleet.h: the CLI fills them from control's results; each
// struct's comment names its JSON object, keys in alphabetical order. ToJson never
// throws: bytes that are not UTF-8 (what a worker printed, or a cut through a
// character) become U+FFFD.
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/status.h"

namespace tpufleet::api {

/// One worker's run in `exec`: {"worker", "node", "index", "outcome", "ok", "stdout",
/// "stderr", "truncated", "dropped_bytes"?, "exit_code"?, "signal"?, "message"?}.
struct ExecWorker {
  std::string worker;   // "pod/w3"
  std::string node;
  int index = 0;        // the worker's index within its node
  std::string outcome;  // HostOutcomeName: "exited", "unreachable", "timeout", …
  bool ok = false;      // exited 0
  std::string stdout_text;  // "stdout": what was kept of it
  std::string stderr_text;  // "stderr"
  bool truncated = false;   // some output was not kept; then "dropped_bytes" is written
  size_t dropped_stdout = 0;  // "dropped_bytes": {"stdout", "stderr"}
  size_t dropped_stderr = 0;
  std::optional<int> exit_code;  // when it exited
  std::string signal;            // "TERM", …; written only when not empty
  std::string message;           // what went wrong; written only when not empty
};

/// `exec`: {"workers", "ok", "failed", "truncated"}.
struct ExecReport {
  std::vector<ExecWorker> workers;
  bool ok = false;         // every worker exited 0
  size_t failed = 0;       // workers that did not
  bool truncated = false;  // some worker's output was not all kept
};

/// One worker in `cp`: {"worker", "ok", "via", "message"?}; "message" is written when
/// the copy there failed.
struct CopyWorker {
  std::string worker;   // "pod/w3"
  bool ok = false;
  std::string via;      // "ssh" or "relay"
  std::string message;  // why it failed
};

/// `cp`: {"workers", "bytes", "seconds", "security_events", "ok"}.
struct CopyReport {
  std::vector<CopyWorker> workers;
  uint64_t bytes = 0;     // sent to each worker (uploads)
  double seconds = 0;     // how long the copy took
  std::vector<std::string> security_events;
  bool ok = false;        // every worker has every file and no security event happened
};

/// `forward`, once the forward works: {"url", "local_port", "remote_port", "worker"}.
struct ForwardStarted {
  std::string url;  // "http://127.0.0.1:8888/"
  int local_port = 0;
  int remote_port = 0;
  std::string worker;  // "pod/w0"
};

/// One worker of a job in `jobs` and `cancel`: {"worker", "index", "state", "pid",
/// "exit_code"?, "signal"?, "message"?, "error"?}. "state" is "unknown" when the worker
/// could not be asked ("error" says why); the others are written only when set.
struct JobWorkerReport {
  std::string worker;  // "pod/w3"
  int index = 0;
  std::string state;   // "running", "failed", …, "unknown"
  int pid = 0;
  std::optional<int> exit_code;
  std::string signal;   // "TERM", …
  std::string message;  // why it could not start, or how it was lost
  std::string error;    // why the worker could not be asked
};

/// A job: {"id", "name", "node", "state", "ended", "user", "started_by", "command",
/// "keep_going", "created_unix_ms", "started_unix_ms", "ended_unix_ms", "duration_ms",
/// "first_failure"?, "verdict"?, "verdict_detail"?, "workers"}; "first_failure" ("w2
/// failed first: exit 1") is written only when a worker failed; "verdict" (busy,
/// input-bound, straggler, idle, quiet, unknown: core/diagnosis.h) and its sentence
/// with the numbers only for a running job whose workers were asked for their metrics.
/// started/ended are 0 until every worker started/ended; duration_ms is from the start
/// to the end, or to now while it runs. A job run with --restart also has "restart"
/// (on-preemption, on-failure), "max_restarts", "restarts" (so far) and, once its node
/// recovered, "time_to_recover_seconds" (the node's last recovery).
struct JobReport {
  std::string id;
  std::string name;
  std::string node;
  std::string state;
  bool ended = false;
  std::string user;
  std::string started_by;
  std::string command;
  bool keep_going = false;
  int64_t created_unix_ms = 0;
  int64_t started_unix_ms = 0;
  int64_t ended_unix_ms = 0;
  int64_t duration_ms = 0;
  std::string first_failure;
  std::string verdict;
  std::string verdict_detail;
  std::vector<JobWorkerReport> workers;
  std::string restart;  // "" (and the next three not written): not restartable
  int max_restarts = 0;
  int restarts = 0;
  std::optional<double> time_to_recover_seconds;
};

/// `jobs`: {"jobs", "unreachable"}: every job, newest first, and a message for each
/// worker that could not be asked.
struct JobsList {
  std::vector<JobReport> jobs;
  std::vector<std::string> unreachable;
};

/// Where a job of a JobsList document runs: what `tpufleet --server URL attach JOB` reads
/// from the server's `jobs --json` to find the worker to log in to.
struct JobPlace {
  std::string id;
  std::string name;
  std::string node;
  bool ended = false;
  int64_t created_unix_ms = 0;
};
/// The jobs of a JobsList document (ToJson's); InvalidArgument for anything else.
Result<std::vector<JobPlace>> ParseJobPlaces(std::string_view jobs_json);

/// The documents, indented by two spaces, without a final newline.
/// By value: the workers' output (up to 64 MiB) moves into the document, not copied.
std::string ToJson(ExecReport report);
std::string ToJson(const CopyReport& report);
std::string ToJson(const JobReport& job);
std::string ToJson(const JobsList& list);
/// On one line (a script reads it as soon as the forward works), no final newline.
std::string ToJson(const ForwardStarted& forward);

}  // namespace tpufleet::api
