#include "cli/exec_output.h"

#include <map>
#include <nlohmann/json.hpp>

#include "util/strings.h"

namespace tpufleet::cli {

std::string FoldWorkerNames(const std::vector<WorkerTarget>& workers) {
  std::vector<std::string> parts;
  size_t i = 0;
  while (i < workers.size()) {
    const std::string& node = workers[i].node;
    std::vector<std::string> ranges;
    size_t j = i;
    while (j < workers.size() && workers[j].node == node) {
      size_t k = j;
      while (k + 1 < workers.size() && workers[k + 1].node == node &&
             workers[k + 1].worker == workers[k].worker + 1) {
        ++k;
      }
      ranges.push_back(k == j ? std::to_string(workers[j].worker)
                              : std::to_string(workers[j].worker) + "-" +
                                    std::to_string(workers[k].worker));
      j = k + 1;
    }
    bool single = j - i == 1;
    parts.push_back(node + "/w" + (single ? ranges[0] : "[" + Join(ranges, ",") + "]"));
    i = j;
  }
  return Join(parts, ", ");
}

ExecOutput::ExecOutput(const std::vector<WorkerTarget>& workers, Mode mode, std::ostream& out,
                       std::ostream& err, const std::atomic<bool>* cancelled)
    : workers_(workers),
      mode_(mode),
      out_(out),
      err_(err),
      cancelled_(cancelled),
      state_(workers.size()) {}

bool ExecOutput::Cancelled() { return cancelled_ && cancelled_->load(); }

void ExecOutput::OnOutput(size_t host, OutputStream stream, std::string_view data) {
  int s = stream == OutputStream::kStdout ? 0 : 1;
  Worker& w = state_[host];
  switch (mode_) {
    case Mode::kPrefixed:
      w.partial[s].append(data);
      EmitLines(host, s, false);
      break;
    case Mode::kGrouped:
      w.all.append(data);
      break;
    case Mode::kJson:
      w.stream[s].append(data);
      break;
  }
}

// Writes the complete lines of the host's stream with its prefix; with `flush`, also an
// unfinished last line (ended with a newline, as pdsh and clush do).
void ExecOutput::EmitLines(size_t host, int stream, bool flush) {
  std::string& buf = state_[host].partial[stream];
  std::ostream& os = stream == 0 ? out_ : err_;
  const std::string prefix = "[" + workers_[host].name + "] ";
  size_t start = 0;
  for (size_t nl = buf.find('\n'); nl != std::string::npos; nl = buf.find('\n', start)) {
    os << prefix << std::string_view(buf).substr(start, nl + 1 - start);
    start = nl + 1;
  }
  if (flush && start < buf.size()) {
    os << prefix << std::string_view(buf).substr(start) << "\n";
    start = buf.size();
  }
  buf.erase(0, start);
  os.flush();
}

void ExecOutput::OnResult(size_t host, const HostResult& result) {
  Worker& w = state_[host];
  w.result = result;
  w.done = true;
  if (mode_ == Mode::kPrefixed) {
    EmitLines(host, 0, true);
    EmitLines(host, 1, true);
  }
}

bool ExecOutput::Finish() {
  if (mode_ == Mode::kGrouped) {
    // Blocks in the order of the first worker that printed each output.
    std::vector<std::string> order;
    std::map<std::string, std::vector<WorkerTarget>> by_output;
    for (size_t i = 0; i < state_.size(); ++i) {
      if (state_[i].all.empty()) {
        continue;
      }
      auto& list = by_output[state_[i].all];
      if (list.empty()) {
        order.push_back(state_[i].all);
      }
      list.push_back(workers_[i]);
    }
    for (const std::string& text : order) {
      const auto& list = by_output[text];
      std::string title = FoldWorkerNames(list) + " (" + std::to_string(list.size()) + ")";
      std::string rule(std::min<size_t>(title.size(), 72), '-');
      out_ << rule << "\n" << title << "\n" << rule << "\n" << text;
      if (text.back() != '\n') {
        out_ << "\n";
      }
    }
  }
  std::vector<size_t> failed;
  for (size_t i = 0; i < state_.size(); ++i) {
    if (!state_[i].result.ok()) {
      failed.push_back(i);
    }
  }
  if (mode_ == Mode::kJson) {
    nlohmann::json list = nlohmann::json::array();
    for (size_t i = 0; i < state_.size(); ++i) {
      const HostResult& r = state_[i].result;
      nlohmann::json j = {{"worker", workers_[i].name},
                          {"node", workers_[i].node},
                          {"index", workers_[i].worker},
                          {"outcome", std::string(HostOutcomeName(r.outcome))},
                          {"ok", r.ok()},
                          {"stdout", state_[i].stream[0]},
                          {"stderr", state_[i].stream[1]}};
      if (r.outcome == HostOutcome::kExited) {
        j["exit_code"] = r.exit_code;
      }
      if (!r.signal.empty()) {
        j["signal"] = r.signal;
      }
      if (!r.message.empty()) {
        j["message"] = r.message;
      }
      list.push_back(j);
    }
    out_ << nlohmann::json{{"workers", list},
                           {"ok", failed.empty()},
                           {"failed", failed.size()}}
                .dump(2)
         << "\n";
  }
  if (!failed.empty()) {
    // Workers stopped because another failed are one folded line, not one each.
    std::vector<WorkerTarget> stopped;
    std::string stop_reason;
    err_ << "tpufleet: " << failed.size() << " of " << state_.size() << " workers failed:\n";
    for (size_t i : failed) {
      const HostResult& r = state_[i].result;
      if (r.outcome == HostOutcome::kCancelled) {
        stopped.push_back(workers_[i]);
        stop_reason = r.message;
        continue;
      }
      std::string why = r.outcome == HostOutcome::kExited
                            ? "exit " + std::to_string(r.exit_code)
                            : std::string(HostOutcomeName(r.outcome)) +
                                  (r.message.empty() ? "" : ": " + r.message);
      err_ << "  " << workers_[i].name << ": " << why << "\n";
    }
    if (!stopped.empty()) {
      err_ << "  " << FoldWorkerNames(stopped) << ": " << stop_reason << "\n";
    }
  }
  out_.flush();
  err_.flush();
  return failed.empty();
}

}  // namespace tpufleet::cli
