#include "control/node_history.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

#include "util/strings.h"

namespace tpufleet {
namespace {

// The newest event of `kind` of the node, if any.
Result<std::optional<EventRecord>> Newest(Store& store, const std::string& fleet,
                                          const std::string& node, const std::string& kind) {
  EventQuery q;
  q.fleet = fleet;
  q.node = node;
  q.kind = kind;
  q.limit = 1;
  TPUFLEET_ASSIGN_OR_RETURN(std::vector<EventRecord> events, store.Events(q));
  if (events.empty()) {
    return std::optional<EventRecord>();
  }
  return std::optional<EventRecord>(events.back());
}

bool ProcessLives(int pid) {
  return pid > 0 && (::kill(pid, 0) == 0 || errno == EPERM);
}

std::string HostName() {
  char host[256] = {};
  return ::gethostname(host, sizeof host - 1) == 0 ? std::string(host) : std::string();
}

}  // namespace

Result<NodeHistory> ReadNodeHistory(Store& store, const std::string& fleet,
                                    const std::string& node) {
  NodeHistory h;
  TPUFLEET_ASSIGN_OR_RETURN(std::optional<EventRecord> ready, Newest(store, fleet, node, "ready"));
  if (ready) {
    h.last_ready = ready->time;
  }
  for (const char* kind : {"preempted", "detected"}) {
    TPUFLEET_ASSIGN_OR_RETURN(std::optional<EventRecord> lost, Newest(store, fleet, node, kind));
    if (lost && (!h.last_lost || lost->time > *h.last_lost)) {
      h.last_lost = lost->time;
    }
  }
  TPUFLEET_ASSIGN_OR_RETURN(std::optional<EventRecord> recovered,
                            Newest(store, fleet, node, "recovered"));
  if (recovered) {
    h.last_recovered = recovered->time;
    std::optional<std::string> seconds = DetailValue(recovered->detail, "seconds");
    char* end = nullptr;
    double s = seconds ? std::strtod(seconds->c_str(), &end) : -1;
    if (seconds && end != seconds->c_str() && *end == '\0' && s >= 0) {
      h.time_to_recover_seconds = s;
    }
  }
  return h;
}

bool LostSinceReady(const NodeHistory& h) {
  return h.last_lost && (!h.last_ready || *h.last_lost > *h.last_ready);
}

std::optional<std::string> DetailValue(std::string_view detail, std::string_view key) {
  for (const std::string& word : Split(std::string(detail), ' ')) {
    if (word.size() > key.size() && StartsWith(word, key) && word[key.size()] == '=') {
      return word.substr(key.size() + 1);
    }
  }
  return std::nullopt;
}

Result<ServeState> ReadServeState(World& world) {
  ServeState s;
  TPUFLEET_ASSIGN_OR_RETURN(s.record, world.store.Serve());
  if (!s.record) {
    return s;
  }
  s.since_last_pass =
      std::chrono::duration_cast<std::chrono::seconds>(world.clock.Now() - s.record->last_pass_at);
  s.running = s.record->host == HostName() ? ProcessLives(s.record->pid)
                                           : s.since_last_pass <= kServeQuietLimit;
  return s;
}

std::string ShownState(const NodeRecord& record, const NodeHistory& history, bool serve_running) {
  if (record.state == NodeState::kReady && LostSinceReady(history)) {
    return serve_running ? "RECOVERING" : "PREEMPTED";
  }
  return record.state.Name();
}

}  // namespace tpufleet
