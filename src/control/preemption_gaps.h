// The preemption gaps of core/goodput.h, read from serve's events: a node's time from a
// `preempted` event to the job resumed on it (`job-resumed`), its recovery ended
// (`recovered`) or its deletion (`deleted`), whichever comes first. A node made READY
// again (`ready`) that sees none of those within kResumeWait (brought back by `up`, or a
// recovery whose last event was lost) ends its gap at that `ready`: nothing was waiting
// to resume.
//
// Thread-safety: as the Store given.
#pragma once

#include <chrono>
#include <vector>

#include "core/goodput.h"
#include "store/store.h"
#include "util/clock.h"

namespace tpufleet {

/// How long after a preempted node is READY again a job may take to resume (its setup,
/// the agent, the restart) before the gap is taken to have ended at READY.
inline constexpr std::chrono::minutes kResumeWait{30};

/// The gaps in `events` (any nodes, oldest first) as of `now`. One still open has no
/// end. A second `preempted` while a gap is open (the notice, then the API's state) is
/// the same gap.
std::vector<PreemptionGap> PreemptionGaps(const std::vector<EventRecord>& events,
                                          Clock::WallTime now);

/// The gaps of every fleet that end at or after `from` or are still open at `now`, from
/// the events since a day before `from` (a gap opened before that is not seen).
Result<std::vector<PreemptionGap>> ReadPreemptionGaps(Store& store, Clock::WallTime from,
                                                      Clock::WallTime now);

}  // namespace tpufleet
