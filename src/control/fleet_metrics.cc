#include "control/fleet_metrics.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

namespace tpufleet {
namespace {

// The ids of the jobs worker `w`'s latest sample shows, with each one's user: running
// jobs and the jobs of the chips' holders.
std::map<std::string, std::string> JobsOf(const WorkerMetrics& w) {
  std::map<std::string, std::string> jobs;
  if (!w.report.has_value()) {
    return jobs;
  }
  for (const JobSample& j : w.report->sample.jobs) {
    jobs[j.id] = j.user;
  }
  for (const ChipSample& c : w.report->sample.chips) {
    for (const ChipHolder& h : c.holders) {
      if (!h.job.empty()) {
        jobs.try_emplace(h.job, h.user);
      }
    }
  }
  return jobs;
}

// DiagnoseGroup over `group`'s workers; a straggler's worker index becomes its worker's.
void Judge(GroupMetrics& group, const std::vector<WorkerMetrics>& workers, int64_t now_ms,
           std::chrono::milliseconds idle_after) {
  std::vector<std::optional<WindowSummary>> windows;
  for (size_t i : group.workers) {
    const WorkerMetrics& w = workers[i];
    windows.push_back(w.report ? std::optional<WindowSummary>(w.report->window) : std::nullopt);
  }
  group.diagnosis = DiagnoseGroup(windows, now_ms, idle_after);
  if (group.diagnosis.worker.has_value()) {
    size_t k = static_cast<size_t>(*group.diagnosis.worker);
    group.diagnosis.worker =
        k < group.workers.size() ? std::optional<int>(workers[group.workers[k]].target.worker)
                                 : std::nullopt;
  }
}

const GroupMetrics* FindGroup(const std::vector<GroupMetrics>& groups, const std::string& name) {
  auto it = std::find_if(groups.begin(), groups.end(),
                         [&](const GroupMetrics& g) { return g.name == name; });
  return it == groups.end() ? nullptr : &*it;
}

}  // namespace

FleetMetrics JudgeFleet(std::vector<WorkerMetrics> workers, int64_t now_unix_ms,
                        std::chrono::milliseconds idle_after) {
  FleetMetrics fleet;
  fleet.now_unix_ms = now_unix_ms;
  fleet.workers = std::move(workers);
  std::map<std::string, size_t> node_index;
  // Each job's node and its workers there; the first node a job is seen on is its node.
  std::map<std::string, std::pair<std::string, std::string>> job_node_user;
  std::map<std::string, std::set<size_t>> job_workers;
  for (size_t i = 0; i < fleet.workers.size(); ++i) {
    WorkerMetrics& w = fleet.workers[i];
    if (w.report.has_value()) {
      w.diagnosis = DiagnoseWorker(w.report->window, now_unix_ms, idle_after);
    } else {
      w.diagnosis = {Verdict::kUnknown, w.status.message(), std::nullopt};
    }
    auto [it, added] = node_index.try_emplace(w.target.node, fleet.nodes.size());
    if (added) {
      fleet.nodes.push_back({w.target.node, w.target.node, "", {}, {}});
    }
    fleet.nodes[it->second].workers.push_back(i);
    for (const auto& [id, user] : JobsOf(w)) {
      job_node_user.try_emplace(id, w.target.node, user);
      if (job_node_user[id].first == w.target.node) {
        job_workers[id].insert(i);
      }
    }
  }
  for (const auto& [id, node_user] : job_node_user) {
    GroupMetrics job{id, node_user.first, node_user.second, {}, {}};
    for (size_t i : fleet.nodes[node_index[job.node]].workers) {
      if (job_workers[id].count(i) > 0 || !fleet.workers[i].report.has_value()) {
        job.workers.push_back(i);
      }
    }
    fleet.jobs.push_back(std::move(job));
  }
  std::stable_sort(fleet.jobs.begin(), fleet.jobs.end(),
                   [](const GroupMetrics& a, const GroupMetrics& b) { return a.node < b.node; });
  for (GroupMetrics& g : fleet.nodes) {
    Judge(g, fleet.workers, now_unix_ms, idle_after);
  }
  for (GroupMetrics& g : fleet.jobs) {
    Judge(g, fleet.workers, now_unix_ms, idle_after);
  }
  return fleet;
}

Result<FleetMetrics> SampleFleet(World& world, const std::vector<WorkerTarget>& workers,
                                 const MetricsOptions& options, const AgentCancelFn& cancelled) {
  AgentCall call;
  call.request.op = api::AgentOp::kMetrics;
  call.request.metrics = options.query;
  call.admin = true;  // a non-root caller's sample shows only its own jobs (agent ops)
  call.timeout = options.timeout;
  call.connect_timeout = options.connect_timeout;
  TPUFLEET_ASSIGN_OR_RETURN(std::vector<AgentReply> replies,
                            CallAgents(world, workers, call, {}, cancelled));
  std::vector<WorkerMetrics> out;
  out.reserve(workers.size());
  for (size_t i = 0; i < workers.size(); ++i) {
    WorkerMetrics w;
    w.target = workers[i];
    w.status = replies[i].status;
    if (auto* report = std::get_if<MetricsReport>(&replies[i].body); w.status.ok() && report) {
      w.report = std::move(*report);
    } else if (w.status.ok()) {
      w.status = InternalError("the agent on " + workers[i].name +
                               " answered metrics without a report: is its version the CLI's? "
                               "run `tpufleet up`");
    }
    out.push_back(std::move(w));
  }
  int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                    world.clock.Now().time_since_epoch())
                    .count();
  return JudgeFleet(std::move(out), now, options.idle_after);
}

const GroupMetrics* FindJobGroup(const FleetMetrics& fleet, const std::string& id) {
  return FindGroup(fleet.jobs, id);
}

const GroupMetrics* FindNodeGroup(const FleetMetrics& fleet, const std::string& name) {
  return FindGroup(fleet.nodes, name);
}

}  // namespace tpufleet
