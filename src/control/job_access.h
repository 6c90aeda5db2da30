// What a team server's caller (control/access.h) may do with nodes and jobs, for the
// commands a server runs for them: `run` (CheckMayRun), `cancel` (CheckMayCancel),
// `top` (VisibleTargets, VisibleMetrics); `logs` and `cancel` find the job with
// jobs.h's FindJob and the caller's Access.
//
// What a caller may not see does not exist for them: a node of another's selection is
// "no node X" exactly as a node that is nowhere (and no nearest names are offered from
// the nodes they may not see); another's job is "no job X". What they may see but not
// do (a viewer's run or cancel) is one PermissionDenied that says why.
//
// Access::Everything (the operator, local use) passes every check unchanged.
//
// Thread-safety: as World's members.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "control/access.h"
#include "control/fleet_metrics.h"
#include "control/jobs.h"
#include "control/targets.h"
#include "control/world.h"
#include "util/status.h"

namespace tpufleet {

/// Whether `access` may see `job` (Access::MaySeeJob of its fleet and user): the jobs
/// FindJob looks among, and those a served `jobs` may list.
bool MaySeeJobView(const Access& access, const JobView& job);

/// The workers `words` name (ResolveTargets'; none: "all") on the nodes `access` may
/// see. A word that names none of those is NotFound "no node 'WORD'", whether it names
/// only others' nodes or none at all.
Result<std::vector<WorkerTarget>> VisibleTargets(World& world,
                                                 const std::vector<std::string>& words,
                                                 const Access& access);

/// OK when `access` may start a job on what `targets` name: each word names only nodes
/// they may see (else NotFound as VisibleTargets'), and they may use each of them (else
/// PermissionDenied: a viewer may not start jobs).
Status CheckMayRun(World& world, const std::vector<std::string>& targets, const Access& access);

/// OK when `access` may cancel `job` (found with their Access, so one they may see);
/// PermissionDenied for a viewer of its fleet.
Status CheckMayCancel(const JobView& job, const Access& access);

/// OK unless the caller has no fleet of `world` in which they are a member or an admin:
/// PermissionDenied saying that a viewer may not `what` ("cancel jobs"), before any job
/// is looked for.
Status CheckNotOnlyViewer(World& world, const Access& access, const std::string& what);

/// `fleet` as `access` may see it: on the nodes of a fleet they are not an admin of, the
/// chips' holders and the job samples of other accounts than theirs are left out, and
/// the verdicts are judged again (JudgeFleet, with `idle_after`) without them.
FleetMetrics VisibleMetrics(FleetMetrics fleet, const Access& access,
                            std::chrono::milliseconds idle_after);

}  // namespace tpufleet
