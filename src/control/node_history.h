// What the event log and the serve record say that `status`, `jobs` and `events` show
// beside the nodes' own records: when a node was last ready, last lost (preempted, or
// found lost by serve), last recovered and how long that took; and whether a serve keeps
// this state and how fresh its view is.
//
// The time-to-recover of a node is the seconds= of its latest `recovered` event, which
// serve writes when the node is back (READY, set up, its restartable jobs resumed),
// counted from the preemption (store/store.h lists the event kinds).
//
// Thread-safety: as the World's store.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include "control/world.h"
#include "core/node_record.h"
#include "util/clock.h"
#include "util/status.h"

namespace tpufleet {

/// A serve whose process cannot be checked (it runs on another host) counts as running
/// while its last pass is this recent: several passes (5 s each by default) and a slow
/// recover step.
inline constexpr std::chrono::seconds kServeQuietLimit{120};

/// One node's history, from its newest events of each kind.
struct NodeHistory {
  std::optional<Clock::WallTime> last_ready;      // `ready`
  std::optional<Clock::WallTime> last_lost;       // `preempted` or `detected`
  std::optional<Clock::WallTime> last_recovered;  // `recovered`
  std::optional<double> time_to_recover_seconds;  // that event's seconds=
};

/// Reads the history of node `node` of `fleet`.
Result<NodeHistory> ReadNodeHistory(Store& store, const std::string& fleet,
                                    const std::string& node);

/// Whether the log has the node lost after it was last ready (or lost and never ready).
bool LostSinceReady(const NodeHistory& history);

/// The value of `key` in an event's "k=v k=v" detail; nullopt when it has none.
std::optional<std::string> DetailValue(std::string_view detail, std::string_view key);

/// The serve keeping this state, as far as the store and this host can tell.
struct ServeState {
  std::optional<ServeRecord> record;  // nullopt: none recorded (never run, or ended cleanly)
  bool running = false;  // recorded, and its process lives (this host) or passed lately
  std::chrono::seconds since_last_pass{0};  // with a record
};

/// Reads the serve record and checks its process: on this host by its pid, on another
/// by its last pass (kServeQuietLimit).
Result<ServeState> ReadServeState(World& world);

/// The state `status` shows for `record`: its own, except that a node the store has as
/// READY while the log has it lost since is never shown READY: "RECOVERING" while a
/// serve runs (it is recovering it), "PREEMPTED" otherwise.
std::string ShownState(const NodeRecord& record, const NodeHistory& history, bool serve_running);

}  // namespace tpufleet
