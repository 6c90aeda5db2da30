// control's reports (and core's catalog) as the api's wire types, for the commands'
// --json output.
//
// control keeps its own report types (a Status per node, records as stored, pointers
// into the spec); api/ holds what a program reads (api/fleet.h, api/workers.h). These
// functions are the one place the first become the second, so `tpufleet --json` today
// and the server later print the same documents.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <vector>

#include "api/catalog.h"
#include "api/fleet.h"
#include "api/workers.h"
#include "control/copy.h"
#include "control/down.h"
#include "control/fleet_status.h"
#include "control/up.h"
#include "core/catalog.h"
#include "core/cost.h"

namespace tpufleet::cli {

std::vector<api::NodeOutcome> ToApi(const std::vector<NodeOutcome>& outcomes);
api::UpPlan ToApi(const UpPlan& plan);
/// `fleet`: the spec's name; `ssh_config`: the SSH config file up wrote.
api::UpReport ToApi(const UpReport& report, const std::string& fleet,
                    const std::string& ssh_config);
api::DownReport ToApi(const DownReport& report);
api::StatusReport ToApi(const FleetStatusReport& report);
/// `seconds`: how long the copy took, as the CLI measured it.
api::CopyReport ToApi(const CopyReport& report, double seconds);

/// `catalog`: every family of the catalog, with its reference price.
std::vector<api::CatalogFamily> ToApi(const Catalog& catalog);
/// `catalog TYPE`.
api::CatalogType ToApi(const Catalog& catalog, const AcceleratorType& type);
/// `plan`: the fitting types, in the plan's order.
std::vector<api::PlanOption> ToApi(const Plan& plan);

}  // namespace tpufleet::cli
