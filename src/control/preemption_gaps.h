// The preemption gaps of core/goodput.h, read from serve's events: a node's time from a
// `preempted` event to the job resumed on it (`job-resumed`), its recovery ended
// (`recovered`) or its deletion (`deleted`), whichever comes first.
//
// Thread-safety: as the Store given.
#pragma once

#include <vector>

#include "core/goodput.h"
#include "store/store.h"
#include "util/clock.h"

namespace tpufleet {

/// The gaps in `events` (any nodes, oldest first). One still open has no end. A
/// second `preempted` while a gap is open (the notice, then the API's state) is the
/// same gap.
std::vector<PreemptionGap> PreemptionGaps(const std::vector<EventRecord>& events);

/// The gaps of every fleet that end at or after `from` or are still open (the events
/// since a day before `from`: a gap opened earlier is taken as opened then).
Result<std::vector<PreemptionGap>> ReadPreemptionGaps(Store& store, Clock::WallTime from);

}  // namespace tpufleet
