// The spend ledger's arithmetic: which node states bill, what a node costs per hour,
// what a set of billed stretches (core/node_record.h SpendRecord) cost between two
// times, and whether a fleet has reached its budget. The reconciler opens a stretch when
// a node enters a state and closes it when the node leaves it; the store keeps them
// across recreates and restarts of serve; this file only adds them up.
//
// The rules (docs/serve.md, "The ledger"):
//   - A node bills in the states core/node_state.h's IsBilled names (status prices by
//     the same rule): from its create until it is gone, a PREEMPTED husk included; not a
//     queued resource still waiting for capacity, nor a STOPPED node.
//   - A stretch is priced when it opens (PriceFor) and keeps that price: a catalog
//     update does not rewrite what was spent.
//   - The day of a daily budget is the UTC day: one day for everyone, whatever the
//     time zone of the machine serve runs on.
//
// Thread-safety: pure functions over values.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/catalog.h"
#include "core/fleet_spec.h"
#include "core/node_record.h"
#include "core/node_state.h"
#include "util/clock.h"

namespace tpufleet {

/// What one node of `type` in `zone` costs per hour: the list price (core/cost.h
/// PriceNode), spot at the top of its family's range (the most it can cost), reserved
/// 0 (the reservation is paid for whether used or not). 0 when the catalog has no
/// price for the type or the zone's region (the caller says so once; status shows "?").
double PriceFor(const Catalog& catalog, std::string_view type, std::string_view zone,
                Capacity capacity);

/// What `stretches` cost within [from, to): each billable stretch's price times the
/// hours it overlaps the span, an open stretch (no end) counted up to `to`. Stretches of
/// states that do not bill (recorded to show time in a state) cost nothing.
double SpendBetween(const std::vector<SpendRecord>& stretches, Clock::WallTime from,
                    Clock::WallTime to);

/// Where a fleet stands against its budget at one moment.
struct BudgetState {
  std::optional<double> limit_day;    // the spec's usd_per_day, if any
  std::optional<double> limit_total;  // the spec's usd_total, if any
  double spent_day = 0;               // since 00:00 UTC of `now`'s day
  double spent_total = 0;             // over every stretch given
  double rate_per_hour = 0;           // what the open billable stretches cost per hour
  bool reached = false;               // a limit is spent: create nothing, act per `action`
  BudgetAction action = BudgetAction::kStopCreating;  // the spec's, for DecideNode
  /// One line when reached: "usd_per_day $10.00 reached: $10.03 spent today (UTC),
  /// running at $12.88/h"; "" otherwise.
  std::string why;
};

/// The fleet's budget state at `now` from all its stretches (open ones run to `now`).
/// Without a budget nothing is reached, but the sums are still made (status shows them).
BudgetState CheckBudget(const std::optional<BudgetSpec>& budget,
                        const std::vector<SpendRecord>& stretches, Clock::WallTime now);

/// 00:00 UTC of the day `t` falls in.
Clock::WallTime UtcDayStart(Clock::WallTime t);

}  // namespace tpufleet
