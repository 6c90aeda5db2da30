// Who a fleet's node-hours are billed to, and the fleet as last applied (store: fleets),
// for the spend ledger and `tpufleet cost` (issue 17): `up` and serve record it each
// time they apply a spec, so that the owner and the budget are known from the store
// alone, through a team server or after the machine that ran `up` is gone.
//
// Thread-safety: free functions; the store is thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "core/fleet_spec.h"
#include "store/store.h"
#include "util/clock.h"

namespace tpufleet {

/// The spec's `owner`, else `applier`: the person applying it (the local login, or a
/// team server's caller).
std::string FleetOwner(const FleetSpec& spec, std::string_view applier);

/// Records `spec` in the store as applied by `applier` at `now`: its owner and budget.
Status RecordFleet(Store& store, const FleetSpec& spec, std::string_view applier,
                   Clock::WallTime now);

}  // namespace tpufleet
