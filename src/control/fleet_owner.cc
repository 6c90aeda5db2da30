#include "control/fleet_owner.h"

namespace tpufleet {

std::string FleetOwner(const FleetSpec& spec, std::string_view applier) {
  return spec.owner.empty() ? std::string(applier) : spec.owner;
}

Status RecordFleet(Store& store, const FleetSpec& spec, std::string_view applier,
                   Clock::WallTime now) {
  FleetRecord f;
  f.name = spec.name;
  f.owner = FleetOwner(spec, applier);
  if (spec.budget) {
    f.usd_per_day = spec.budget->usd_per_day;
    f.usd_total = spec.budget->usd_total;
  }
  f.updated_at = now;
  return store.PutFleet(f);
}

}  // namespace tpufleet
