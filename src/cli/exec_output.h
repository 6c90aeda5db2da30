// How `exec` shows what the workers printed: line by line as it arrives, each line
// prefixed with its worker ("[pod/w3] …", stderr lines on stderr), or with --group,
// identical outputs folded into one block under the list of workers that printed them
// (as `clush -b` does). Then a summary of the workers that failed and why.
//
// Thread-safety: one thread (the engine calls the sink on the caller's thread).
#pragma once

#include <atomic>
#include <ostream>
#include <string>
#include <vector>

#include "control/exec.h"

namespace tpufleet::cli {

/// "pod/w[0-3,5], eval/w0": workers of one node folded into index ranges, in order.
std::string FoldWorkerNames(const std::vector<WorkerTarget>& workers);

class ExecOutput final : public FanoutSink {
 public:
  enum class Mode { kPrefixed, kGrouped, kJson };

  /// `cancelled`: set (by a SIGINT handler) to stop the job.
  ExecOutput(const std::vector<WorkerTarget>& workers, Mode mode, std::ostream& out,
             std::ostream& err, const std::atomic<bool>* cancelled);

  void OnOutput(size_t host, OutputStream stream, std::string_view data) override;
  void OnResult(size_t host, const HostResult& result) override;
  bool Cancelled() override;

  /// Prints the grouped blocks or the JSON document (for those modes) and the summary of
  /// failures on `err`. True when every worker exited 0.
  bool Finish();

 private:
  struct Worker {
    std::string partial[2];  // an unfinished last line per stream (prefixed mode)
    std::string all;         // everything, in arrival order (grouped mode)
    std::string stream[2];   // per stream (JSON)
    HostResult result;
    bool done = false;
  };
  void EmitLines(size_t host, int stream, bool flush);

  const std::vector<WorkerTarget>& workers_;
  Mode mode_;
  std::ostream& out_;
  std::ostream& err_;
  const std::atomic<bool>* cancelled_;
  std::vector<Worker> state_;
};

}  // namespace tpufleet::cli
