// The wire types of the --json output of the commands that work on workers (`exec`,
// `cp`, `forward`), and their JSON.
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
#include <vector>

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

/// The documents, indented by two spaces, without a final newline.
/// By value: the workers' output (up to 64 MiB) moves into the document, not copied.
std::string ToJson(ExecReport report);
std::string ToJson(const CopyReport& report);
/// On one line (a script reads it as soon as the forward works), no final newline.
std::string ToJson(const ForwardStarted& forward);

}  // namespace tpufleet::api
