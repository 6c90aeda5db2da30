// How `exec` shows what the workers printed: line by line as it arrives, each line
// prefixed with its worker ("[pod/w3] …", stderr lines on stderr), or with --group,
// identical outputs folded into one block under the list of workers that printed them
// (as `clush -b` does). Then a summary of the workers that failed and why.
//
// Memory is bounded whatever the workers print (issue 10): a line longer than
// ExecOutputLimits::line_bytes is printed in pieces of that size, each with the prefix,
// and --group and --json, which must hold output until the end, keep at most
// keep_per_worker bytes of each worker (per stream with --json) and keep_total in all.
// What they drop is counted and said: a line on stderr, a note closing the block, and
// "truncated" with the bytes dropped per stream in the JSON.
//
// Thread-safety: one thread (the engine calls the sink on the caller's thread).
#pragma once

#include <cstddef>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "control/exec.h"

namespace tpufleet::cli {

/// A line is printed in pieces of at most this many bytes (each with the worker's
/// prefix and ended with a newline): longer than any line a person reads, and what a
/// worker that never prints a newline costs per stream (pdsh's line buffer is 8 KiB).
inline constexpr size_t kExecLineBytes = 64 * 1024;
/// --group and --json keep this much of each worker (--json: of each stream): the
/// output of a command worth folding or parsing, not a log to scroll through.
inline constexpr size_t kExecKeepPerWorkerBytes = 1024 * 1024;
/// ... and this much of all workers together, so 1,024 workers printing a lot cost
/// tens of MiB, not one each (the JSON document then needs about as much again).
inline constexpr size_t kExecKeepTotalBytes = 64 * 1024 * 1024;

/// The bounds ExecOutput keeps to; tests pass smaller ones.
struct ExecOutputLimits {
  size_t line_bytes = kExecLineBytes;                // prefixed mode, per stream
  size_t keep_per_worker = kExecKeepPerWorkerBytes;  // --group; --json per stream
  size_t keep_total = kExecKeepTotalBytes;           // --group and --json, all workers
};

/// Prints what a worker wrote on one stream line by line, each line after `prefix`
/// ("[pod/w3] " for exec, "pod/w3 | " for a job's logs): `held` is the stream's
/// unfinished last line, kept for the next call; a line that reaches `line_bytes`
/// without its end is printed in pieces of that size (cut between UTF-8 characters),
/// each ended with a newline. Flushes `os`.
void PrintPrefixedLines(std::ostream& os, const std::string& prefix, std::string& held,
                        std::string_view data, size_t line_bytes);

/// "pod/w[0-3,5], eval/w0": workers of one node folded into index ranges, in order.
std::string FoldWorkerNames(const std::vector<WorkerTarget>& workers);

class ExecOutput final : public FanoutSink {
 public:
  enum class Mode { kPrefixed, kGrouped, kJson };

  /// `cancelled`: asked between steps; true stops the job (exec's is its
  /// InterruptWatch). Empty: never.
  ExecOutput(const std::vector<WorkerTarget>& workers, Mode mode, std::ostream& out,
             std::ostream& err, std::function<bool()> cancelled, ExecOutputLimits limits = {});

  void OnOutput(size_t host, OutputStream stream, std::string_view data) override;
  void OnResult(size_t host, const HostResult& result) override;
  bool Cancelled() override;

  /// Prints the grouped blocks or the JSON document (for those modes), a line saying
  /// what --group or --json did not keep, and the summary of failures on `err`. True
  /// when every worker exited 0.
  bool Finish();

  /// The bytes of output held now, all workers and streams: at most 2 * line_bytes per
  /// worker when prefixed, keep_total otherwise.
  size_t buffered_bytes() const { return buffered_; }
  /// For tests: how many bytes the newline search has looked at, which is each byte
  /// of output once (the search resumes where it stopped, never rescans a partial line).
  size_t bytes_scanned() const { return scanned_; }

 private:
  struct Worker {
    std::string partial[2];      // an unfinished last line per stream (prefixed mode)
    std::string all;             // what is kept, in arrival order (grouped mode)
    std::string stream[2];       // what is kept per stream (JSON)
    size_t dropped[2] = {0, 0};  // bytes not kept per stream (grouped, JSON)
    HostResult result;
    bool done = false;
  };
  void Prefixed(size_t host, int stream, std::string_view data);
  void Keep(size_t host, int stream, std::string_view data);
  void EmitPartial(size_t host, int stream);
  void PrintGroups();
  void PrintJson(size_t failed);
  void SayWhatWasDropped();

  const std::vector<WorkerTarget>& workers_;
  Mode mode_;
  std::ostream& out_;
  std::ostream& err_;
  const std::function<bool()> cancelled_;
  const ExecOutputLimits limits_;
  std::vector<Worker> state_;
  size_t buffered_ = 0;
  size_t scanned_ = 0;
};

}  // namespace tpufleet::cli
