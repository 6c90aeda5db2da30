// ProgressView: draws what up and down report. On a terminal, one live line per node,
// redrawn in place; otherwise (a log, a pipe, CI) a plain line each time a node changes
// phase. With --json, nothing: the result is printed at the end.
//
// Thread-safety: OnProgress may be called from several threads at once.
#pragma once

#include <map>
#include <mutex>
#include <ostream>
#include <string>
#include <vector>

#include "control/progress.h"

namespace tpufleet::cli {

class ProgressView final : public ProgressObserver {
 public:
  enum class Mode { kLive, kLines, kQuiet };
  ProgressView(std::ostream& out, Mode mode) : out_(out), mode_(mode) {}

  void OnProgress(const NodeProgress& progress) override;

 private:
  std::string LineOf(const NodeProgress& p) const;

  std::ostream& out_;
  const Mode mode_;
  std::mutex mu_;
  std::vector<std::string> order_;               // nodes in first-seen order
  std::map<std::string, NodeProgress> latest_;   // node -> last report
  size_t drawn_ = 0;                             // lines drawn last time (live mode)
};

}  // namespace tpufleet::cli
