#include "cli/progress_view.h"

#include "cli/table.h"

namespace tpufleet::cli {

std::string ProgressView::LineOf(const NodeProgress& p) const {
  std::string line = p.node + ": " + std::string(NodePhaseName(p.phase));
  if (!p.zone.empty()) {
    line += " (" + p.zone + ")";
  }
  if (!p.detail.empty()) {
    line += " " + p.detail;
  }
  return TerminalText(line);  // the detail may be the cloud's error message
}

void ProgressView::OnProgress(const NodeProgress& p) {
  if (mode_ == Mode::kQuiet) {
    return;
  }
  std::lock_guard<std::mutex> l(mu_);
  if (!latest_.count(p.node)) {
    order_.push_back(p.node);
  }
  NodeProgress& last = latest_[p.node];
  bool same = last.phase == p.phase && last.zone == p.zone && last.detail == p.detail &&
              !last.node.empty();
  last = p;
  if (mode_ == Mode::kLines) {
    if (!same) {
      out_ << LineOf(p) << "\n" << std::flush;
    }
    return;
  }
  // Live: move up over the previous drawing, then redraw every node's line. A failure
  // message may span lines; only its first line is drawn live.
  if (drawn_ > 0) {
    out_ << "\033[" << drawn_ << "A";
  }
  for (const std::string& node : order_) {
    std::string line = LineOf(latest_[node]);
    line = line.substr(0, line.find('\n'));
    out_ << "\r\033[2K" << line << "\n";
  }
  drawn_ = order_.size();
  out_ << std::flush;
}

}  // namespace tpufleet::cli
