#include "cli/exec_output.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <utility>

#include "api/workers.h"
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
                       std::ostream& err, std::function<bool()> cancelled, ExecOutputLimits limits)
    : workers_(workers),
      mode_(mode),
      out_(out),
      err_(err),
      cancelled_(std::move(cancelled)),
      limits_(limits),
      state_(workers.size()) {}

bool ExecOutput::Cancelled() {
  return cancelled_ && cancelled_();
}

void ExecOutput::OnOutput(size_t host, OutputStream stream, std::string_view data) {
  int s = stream == OutputStream::kStdout ? 0 : 1;
  if (mode_ == Mode::kPrefixed) {
    Prefixed(host, s, data);
  } else {
    Keep(host, s, data);
  }
}

namespace {

// Where to cut a full line so that a UTF-8 character is not split between two pieces:
// before an unfinished sequence at the end of `text` (at most 3 bytes), else the end.
size_t Utf8Cut(std::string_view text) {
  for (size_t back = 1; back <= 3 && back <= text.size(); ++back) {
    auto c = static_cast<unsigned char>(text[text.size() - back]);
    if ((c & 0xc0) == 0x80) {
      continue;  // a continuation byte: look further back for its lead
    }
    size_t len = (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 1;
    return len > back && back < text.size() ? text.size() - back : text.size();
  }
  return text.size();
}

// "1 MiB", "64 KiB", "100 bytes": the limits as the messages name them.
std::string Size(size_t bytes) {
  if (bytes >= (1u << 20) && bytes % (1u << 20) == 0) {
    return std::to_string(bytes >> 20) + " MiB";
  }
  if (bytes >= 1024 && bytes % 1024 == 0) {
    return std::to_string(bytes >> 10) + " KiB";
  }
  return std::to_string(bytes) + " bytes";
}

}  // namespace

// Prints each complete line of `data` with the worker's prefix, holding an unfinished
// last line for the next call. The newline search looks at each byte once: the held
// part has none (it would have been printed), so only the new bytes are searched.
void PrintPrefixedLines(std::ostream& os, const std::string& prefix, std::string& held,
                        std::string_view data, size_t line_bytes) {
  while (!data.empty()) {
    size_t room = line_bytes > held.size() ? line_bytes - held.size() : 1;
    size_t look = std::min(data.size(), room);
    const void* nl = std::memchr(data.data(), '\n', look);
    if (nl != nullptr) {
      size_t line = static_cast<size_t>(static_cast<const char*>(nl) - data.data()) + 1;
      os << prefix << held << data.substr(0, line);
      held.clear();
      data.remove_prefix(line);
      continue;
    }
    held.append(data.substr(0, look));
    data.remove_prefix(look);
    if (held.size() >= line_bytes) {
      // A full line without its end: print this piece and carry on with the rest.
      size_t cut = Utf8Cut(held);
      os << prefix << std::string_view(held).substr(0, cut) << "\n";
      held.erase(0, cut);
    }
  }
  os.flush();
}

void ExecOutput::Prefixed(size_t host, int stream, std::string_view data) {
  std::string& held = state_[host].partial[stream];
  buffered_ -= held.size();
  scanned_ += data.size();  // each byte is looked at once: the search never rescans
  PrintPrefixedLines(stream == 0 ? out_ : err_, "[" + workers_[host].name + "] ", held, data,
                     limits_.line_bytes);
  buffered_ += held.size();
}

// An unfinished last line, ended with a newline as pdsh and clush do.
void ExecOutput::EmitPartial(size_t host, int stream) {
  std::string& held = state_[host].partial[stream];
  if (held.empty()) {
    return;
  }
  std::ostream& os = stream == 0 ? out_ : err_;
  os << "[" << workers_[host].name << "] " << held << "\n";
  os.flush();
  buffered_ -= held.size();
  held.clear();
}

// --group and --json: keeps what fits under the limits and counts the rest.
void ExecOutput::Keep(size_t host, int stream, std::string_view data) {
  Worker& w = state_[host];
  std::string& kept = mode_ == Mode::kGrouped ? w.all : w.stream[stream];
  size_t room = std::min(limits_.keep_per_worker - std::min(kept.size(), limits_.keep_per_worker),
                         limits_.keep_total - std::min(buffered_, limits_.keep_total));
  size_t take = std::min(room, data.size());
  kept.append(data.substr(0, take));
  buffered_ += take;
  w.dropped[stream] += data.size() - take;
}

void ExecOutput::OnResult(size_t host, const HostResult& result) {
  Worker& w = state_[host];
  w.result = result;
  w.done = true;
  if (mode_ == Mode::kPrefixed) {
    EmitPartial(host, 0);
    EmitPartial(host, 1);
  }
}

// Blocks in the order of the first worker that printed each output. Workers whose
// output was cut fold together when what was kept and how much was cut are the same;
// the cut part is not compared (the block's last line says so).
void ExecOutput::PrintGroups() {
  struct Group {
    size_t first;
    std::vector<WorkerTarget> workers;
  };
  std::vector<Group> groups;
  std::multimap<uint64_t, size_t> by_hash;  // Fnv1a64 of the text -> index in groups
  for (size_t i = 0; i < state_.size(); ++i) {
    const Worker& w = state_[i];
    size_t dropped = w.dropped[0] + w.dropped[1];
    if (w.all.empty() && dropped == 0) {
      continue;
    }
    uint64_t hash = Fnv1a64(w.all);
    Group* same = nullptr;
    for (auto [it, end] = by_hash.equal_range(hash); it != end; ++it) {
      const Worker& first = state_[groups[it->second].first];
      if (first.all == w.all && first.dropped[0] + first.dropped[1] == dropped) {
        same = &groups[it->second];
        break;
      }
    }
    if (same == nullptr) {
      by_hash.emplace(hash, groups.size());
      groups.push_back(Group{i, {}});
      same = &groups.back();
    }
    same->workers.push_back(workers_[i]);
  }
  for (const Group& g : groups) {
    const Worker& w = state_[g.first];
    std::string title =
        FoldWorkerNames(g.workers) + " (" + std::to_string(g.workers.size()) + ")";
    std::string rule(std::min<size_t>(title.size(), 72), '-');
    out_ << rule << "\n" << title << "\n" << rule << "\n" << w.all;
    if (!w.all.empty() && w.all.back() != '\n') {
      out_ << "\n";
    }
    if (size_t dropped = w.dropped[0] + w.dropped[1]; dropped > 0) {
      out_ << "[tpufleet: " << dropped << " more bytes not kept, not shown"
           << (g.workers.size() > 1 ? " and not compared" : "") << "]\n";
    }
  }
}

void ExecOutput::PrintJson(size_t failed) {
  api::ExecReport report;
  for (size_t i = 0; i < state_.size(); ++i) {
    Worker& w = state_[i];
    const HostResult& r = w.result;
    api::ExecWorker j;
    j.worker = workers_[i].name;
    j.node = workers_[i].node;
    j.index = workers_[i].worker;
    j.outcome = std::string(HostOutcomeName(r.outcome));
    j.ok = r.ok();
    j.stdout_text = std::move(w.stream[0]);
    j.stderr_text = std::move(w.stream[1]);
    j.truncated = w.dropped[0] + w.dropped[1] > 0;
    j.dropped_stdout = w.dropped[0];
    j.dropped_stderr = w.dropped[1];
    if (r.outcome == HostOutcome::kExited) {
      j.exit_code = r.exit_code;
    }
    j.signal = r.signal;
    j.message = r.message;
    report.truncated = report.truncated || j.truncated;
    report.workers.push_back(std::move(j));
  }
  report.ok = failed == 0;
  report.failed = failed;
  out_ << api::ToJson(std::move(report)) << "\n";
}

// One line on stderr naming the workers --group or --json did not keep all of.
void ExecOutput::SayWhatWasDropped() {
  std::vector<WorkerTarget> cut;
  size_t dropped = 0;
  for (size_t i = 0; i < state_.size(); ++i) {
    if (size_t d = state_[i].dropped[0] + state_[i].dropped[1]; d > 0) {
      cut.push_back(workers_[i]);
      dropped += d;
    }
  }
  if (cut.empty()) {
    return;
  }
  bool grouped = mode_ == Mode::kGrouped;
  err_ << "tpufleet: output cut: " << (grouped ? "--group" : "--json") << " keeps "
       << Size(limits_.keep_per_worker)
       << (grouped ? " of each worker" : " of each stream of each worker") << " and "
       << Size(limits_.keep_total) << " in all; " << FoldWorkerNames(cut) << " printed more ("
       << dropped << " bytes left out"
       << (grouped ? "); run exec without --group to see everything\n"
                   : ", marked \"truncated\": true)\n");
}

bool ExecOutput::Finish() {
  std::vector<size_t> failed;
  for (size_t i = 0; i < state_.size(); ++i) {
    if (!state_[i].result.ok()) {
      failed.push_back(i);
    }
  }
  if (mode_ == Mode::kGrouped) {
    PrintGroups();
  } else if (mode_ == Mode::kJson) {
    PrintJson(failed.size());
  }
  SayWhatWasDropped();
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
