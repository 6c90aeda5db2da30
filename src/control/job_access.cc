#include "control/job_access.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

namespace tpufleet {
namespace {

// The store's nodes by fleet and name.
using NodeKey = std::pair<std::string, std::string>;
Result<std::map<NodeKey, NodeRecord>> NodesByKey(World& world) {
  TPUFLEET_ASSIGN_OR_RETURN(std::vector<NodeRecord> all, world.store.Nodes(""));
  std::map<NodeKey, NodeRecord> out;
  for (NodeRecord& r : all) {
    NodeKey key{r.fleet, r.name};
    out.emplace(std::move(key), std::move(r));
  }
  return out;
}

// What a node nobody may see is to whoever may not see it: the message of a node that is
// nowhere, without the nearest names ResolveTargets would offer from all of them.
Status NoNode(const std::string& word) {
  return NotFoundError("no node '" + word + "' in tpufleet's state (tpufleet status lists them)");
}

Status ViewerMayNot(const Access& access, const std::string& fleet, const std::string& what) {
  return PermissionDeniedError(access.who() + " is a viewer" +
                               (fleet.empty() ? "" : " of fleet " + fleet) + ": a viewer may not " +
                               what + " (an admin gives the member role: tpufleet users set " +
                               access.who() + " --role member)");
}

}  // namespace

bool MaySeeJobView(const Access& access, const JobView& job) {
  return access.everything() ||
         (!job.workers.empty() && access.MaySeeJob(job.workers[0].target.fleet, job.user));
}

Result<std::vector<WorkerTarget>> VisibleTargets(World& world,
                                                 const std::vector<std::string>& words,
                                                 const Access& access) {
  std::vector<std::string> asked = words.empty() ? std::vector<std::string>{"all"} : words;
  if (access.everything()) {
    return ResolveTargets(world.store, asked);
  }
  TPUFLEET_ASSIGN_OR_RETURN(auto nodes, NodesByKey(world));
  std::vector<WorkerTarget> out;
  std::set<std::tuple<std::string, std::string, int>> seen;
  for (const std::string& word : asked) {
    Result<std::vector<WorkerTarget>> named = ResolveTargets(world.store, {word});
    if (!named.ok() && named.status().code() != StatusCode::kNotFound) {
      return named.status();
    }
    bool any = false;
    for (const WorkerTarget& w : named.ok() ? *named : std::vector<WorkerTarget>{}) {
      auto node = nodes.find({w.fleet, w.node});
      if (node == nodes.end() || !access.MaySeeNode(node->second)) {
        continue;
      }
      any = true;
      if (seen.insert({w.fleet, w.node, w.worker}).second) {
        out.push_back(w);
      }
    }
    if (!any) {
      return NoNode(word);
    }
  }
  std::sort(out.begin(), out.end(), [](const WorkerTarget& a, const WorkerTarget& b) {
    return std::tie(a.fleet, a.node, a.worker) < std::tie(b.fleet, b.node, b.worker);
  });
  return out;
}

Status CheckMayRun(World& world, const std::vector<std::string>& targets, const Access& access) {
  if (access.everything()) {
    return Status::Ok();
  }
  TPUFLEET_ASSIGN_OR_RETURN(auto nodes, NodesByKey(world));
  for (const std::string& word : targets) {
    TPUFLEET_ASSIGN_OR_RETURN(std::vector<WorkerTarget> visible,
                              VisibleTargets(world, {word}, access));
    Result<std::vector<WorkerTarget>> all = ResolveTargets(world.store, {word});
    if (!all.ok() || all->size() != visible.size()) {
      return NoNode(word);  // some of what it names is another's
    }
    for (const WorkerTarget& w : visible) {
      if (!access.MayUseNode(nodes.at({w.fleet, w.node}))) {
        return ViewerMayNot(access, w.fleet, "start jobs");
      }
    }
  }
  return Status::Ok();
}

Status CheckMayCancel(const JobView& job, const Access& access) {
  std::string fleet = job.workers.empty() ? "" : job.workers[0].target.fleet;
  return access.MayChangeJob(fleet, job.user) ? Status::Ok()
                                              : ViewerMayNot(access, fleet, "cancel jobs");
}

Status CheckNotOnlyViewer(World& world, const Access& access, const std::string& what) {
  if (access.everything()) {
    return Status::Ok();
  }
  TPUFLEET_ASSIGN_OR_RETURN(auto nodes, NodesByKey(world));
  for (const auto& [key, node] : nodes) {
    if (access.RoleIn(key.first).value_or(Role::kViewer) >= Role::kMember) {
      return Status::Ok();
    }
  }
  return ViewerMayNot(access, "", what);
}

FleetMetrics VisibleMetrics(FleetMetrics fleet, const Access& access,
                            std::chrono::milliseconds idle_after) {
  if (access.everything()) {
    return fleet;
  }
  for (WorkerMetrics& w : fleet.workers) {
    if (!w.report.has_value() || access.IsAdminOf(w.target.fleet)) {
      continue;
    }
    WorkerSample& sample = w.report->sample;
    auto others = [&](const std::string& user) { return user != access.who(); };
    std::set<std::string> own_jobs;
    for (const JobSample& j : sample.jobs) {
      if (!others(j.user)) {
        own_jobs.insert(j.id);
      }
    }
    std::erase_if(sample.jobs, [&](const JobSample& j) { return others(j.user); });
    for (ChipSample& chip : sample.chips) {
      std::erase_if(chip.holders, [&](const ChipHolder& h) { return others(h.user); });
    }
    WindowSummary& window = w.report->window;
    if (!window.job.empty() && own_jobs.count(window.job) == 0) {
      window.job.clear();
      window.job_cpu_percent.reset();
      window.job_cpu_limit_percent.reset();
      window.job_busiest_thread_percent.reset();
    }
  }
  return JudgeFleet(std::move(fleet.workers), fleet.now_unix_ms, idle_after);
}

}  // namespace tpufleet
