// StartJob: the checks, the dry run on every worker, then the start on every worker.
#include <sys/random.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>

#include "control/jobs.h"
#include "control/jobs_internal.h"
#include "core/fleet_spec.h"
#include "util/strings.h"

namespace tpufleet {
namespace {

using jobs_internal::CancelOn;
using jobs_internal::Indices;
using jobs_internal::ListOn;
using jobs_internal::TargetWorkers;

// A new job id that none of `taken` has.
Result<std::string> NewJobId(const std::set<std::string>& taken) {
  while (true) {
    JobIdBytes bytes{};
    if (::getrandom(bytes.data(), bytes.size(), 0) != static_cast<ssize_t>(bytes.size())) {
      return InternalError(std::string("getrandom: ") + std::strerror(errno));
    }
    std::string id = MakeJobId(bytes);
    if (taken.count(id) == 0) {
      return id;
    }
  }
}

}  // namespace

namespace jobs_internal {

Result<std::vector<WorkerTarget>> OneWholeNode(World& world,
                                               const std::vector<std::string>& targets,
                                               NodeRecord* record) {
  if (targets.empty()) {
    return InvalidArgumentError("run takes a node: tpufleet run NODE -- COMMAND");
  }
  TPUFLEET_ASSIGN_OR_RETURN(std::vector<WorkerTarget> workers,
                            ResolveTargets(world.store, targets));
  std::vector<std::string> nodes;
  for (const WorkerTarget& w : workers) {
    if (std::find(nodes.begin(), nodes.end(), w.node) == nodes.end()) {
      nodes.push_back(w.node);
    }
  }
  std::string named = Join(targets, " ");
  if (nodes.size() > 1) {
    return InvalidArgumentError("a job runs on one node, and " + named + " names " +
                                std::to_string(nodes.size()) + " (" + Join(nodes, ", ") +
                                "): start one job per node");
  }
  TPUFLEET_ASSIGN_OR_RETURN(std::vector<NodeRecord> all, world.store.Nodes(""));
  for (NodeRecord& r : all) {
    if (r.name == nodes[0] && r.fleet == workers[0].fleet) {
      *record = std::move(r);
    }
  }
  if (workers.size() != record->workers.size()) {
    return InvalidArgumentError("a job runs on every worker of its node: " + named + " names " +
                                std::to_string(workers.size()) + " of " + nodes[0] + "'s " +
                                std::to_string(record->workers.size()) +
                                " workers; name the node: tpufleet run " + nodes[0] + " -- …");
  }
  return workers;
}

Result<JobTopology> TopologyOf(const Catalog& catalog, const NodeRecord& record,
                               const std::vector<WorkerTarget>& workers) {
  std::vector<std::string> addresses;
  for (const WorkerTarget& w : workers) {
    // The workers reach each other inside their network, not at what SSH reaches.
    addresses.push_back(w.internal_address.empty() ? w.address : w.internal_address);
  }
  if (record.type.empty()) {
    return MakeJobTopology(nullptr, addresses);
  }
  TPUFLEET_ASSIGN_OR_RETURN(AcceleratorType type, catalog.Lookup(record.type));
  return MakeJobTopology(&type, addresses);
}

}  // namespace jobs_internal

namespace {

using jobs_internal::CheckRestart;
using jobs_internal::KeepRestartable;
using jobs_internal::OneWholeNode;
using jobs_internal::Restarts;
using jobs_internal::StartChecked;
using jobs_internal::TopologyOf;

// "the job was not started: …": each failed worker's reason, one line each, or one line
// when every worker gave the same reason.
Status Refusal(const std::string& what, const std::vector<WorkerTarget>& workers,
               const std::vector<AgentReply>& replies) {
  std::vector<std::string> lines;
  std::set<std::string> reasons;
  StatusCode code = StatusCode::kOk;
  for (size_t i = 0; i < replies.size(); ++i) {
    const Status& s = replies[i].status;
    if (s.ok()) {
      continue;
    }
    code = code == StatusCode::kOk ? s.code() : code;
    lines.push_back(s.message());
    std::string prefix = workers[i].name + ": ";
    reasons.insert(StartsWith(s.message(), prefix) ? s.message().substr(prefix.size())
                                                   : s.message());
  }
  if (lines.empty()) {
    return Status::Ok();
  }
  if (reasons.size() == 1 && lines.size() == replies.size() && lines.size() > 1) {
    return Status(code, what + ": " + *reasons.begin() + " (on every worker)");
  }
  if (lines.size() == 1) {
    return Status(code, what + ": " + lines[0]);
  }
  return Status(code, what + ":\n  " + Join(lines, "\n  "));
}

// job.start on every worker: worker 0 on a terminal (for `attach`), the others without
// one (their stderr stays apart). The request line is one per call, so two calls; when
// worker 0 refuses, the others are not asked (their replies are OK and empty).
Result<std::vector<AgentReply>> StartEverywhere(World& world,
                                                const std::vector<WorkerTarget>& workers,
                                                AgentCall call) {
  call.request.job.pty = true;
  TPUFLEET_ASSIGN_OR_RETURN(std::vector<AgentReply> replies, CallAgents(world, {workers[0]}, call));
  if (!replies[0].status.ok()) {
    // Worker 0 refused (the TPU is held there, say): the others are not asked.
    replies.resize(workers.size());
    for (size_t i = 1; i < workers.size(); ++i) {
      replies[i].status = Status::Ok();
    }
    return replies;
  }
  if (workers.size() > 1) {
    call.request.job.pty = false;
    std::vector<WorkerTarget> rest(workers.begin() + 1, workers.end());
    TPUFLEET_ASSIGN_OR_RETURN(std::vector<AgentReply> others, CallAgents(world, rest, call));
    replies.insert(replies.end(), others.begin(), others.end());
  }
  return replies;
}

}  // namespace

Result<JobView> jobs_internal::StartChecked(World& world, const std::vector<WorkerTarget>& workers,
                                            AgentCall call) {
  // A job of another account than the login's is started by root: the agent lets root
  // alone name the user (docs/agent-protocol.md).
  call.admin = call.admin || !call.request.job.user.empty();
  // Nothing starts anywhere unless every worker accepts the job.
  call.request.dry_run = true;
  TPUFLEET_ASSIGN_OR_RETURN(std::vector<AgentReply> checked, CallAgents(world, workers, call));
  TPUFLEET_TRY(Refusal("the job was not started", workers, checked));

  call.request.dry_run = false;
  TPUFLEET_ASSIGN_OR_RETURN(std::vector<AgentReply> started, StartEverywhere(world, workers, call));
  std::vector<std::optional<api::JobOnWorker>> found;
  std::vector<Status> errors;
  for (const AgentReply& r : started) {
    const auto* on = std::get_if<api::JobOnWorker>(&r.body);
    found.push_back(r.status.ok() && on ? std::optional<api::JobOnWorker>(*on) : std::nullopt);
    errors.push_back(r.status);
  }
  const std::string& id = call.request.job.id;
  JobView job = MergeJob(id, workers, found, errors);
  Status failed = Refusal("job " + id + " could not start on every worker", workers, started);
  if (!failed.ok()) {
    // A gang that cannot start whole does not start: stop the workers that did.
    std::vector<size_t> live = Indices(job, [](const JobWorker& w) { return w.known; });
    Result<std::vector<std::string>> stopped =
        CancelOn(world, job, live, kDefaultCancelGrace, false);
    std::string then = !stopped.ok()
                           ? "; stopping it on the others failed: " + stopped.status().message()
                       : live.empty() ? ""
                                      : "; it was stopped on the others";
    return Status(failed.code(), failed.message() + then);
  }
  return job;
}

Result<JobView> StartJob(World& world, const Catalog& catalog, const RunRequest& request) {
  if (Trim(request.command).empty()) {
    return InvalidArgumentError("no command given: put it after `--`");
  }
  std::string name = request.name.empty() ? DefaultJobName(request.command) : request.name;
  TPUFLEET_TRY(CheckJobName(name).WithContext("--name"));
  for (const auto& [key, value] : request.env) {
    TPUFLEET_TRY(CheckUserEnvEntry(key, value).WithContext("--env"));
  }
  TPUFLEET_TRY(CheckRestart(request.restart, request.max_restarts));
  NodeRecord record;
  TPUFLEET_ASSIGN_OR_RETURN(std::vector<WorkerTarget> workers,
                            OneWholeNode(world, request.targets, &record));
  TPUFLEET_ASSIGN_OR_RETURN(JobTopology topology, TopologyOf(catalog, record, workers));

  // Names are unique among the fleet's live jobs; ids among all of them.
  TPUFLEET_ASSIGN_OR_RETURN(std::vector<WorkerTarget> fleet, TargetWorkers(world, {}));
  TPUFLEET_ASSIGN_OR_RETURN(JobsReport existing, ListOn(world, fleet, {}));
  std::vector<JobRef> refs;
  std::vector<JobRef> others;  // a collaborator's run: the jobs of other accounts
  std::set<std::string> ids;
  for (const JobView& j : existing.jobs) {
    bool another = !request.user.empty() && j.user != request.user;
    (another ? others : refs).push_back({j.id, j.name, j.state, j.ended, j.created_unix_ms});
    ids.insert(j.id);
  }
  TPUFLEET_TRY(CheckNameFree(name, refs));
  if (!CheckNameFree(name, others).ok()) {
    // Another's job is not theirs to see: the name is taken, and nothing more is said.
    return InvalidArgumentError("the name " + QuoteForMessage(name) +
                                " is taken by a job of the fleet that has not ended; give "
                                "this one another --name");
  }
  std::string id = request.id;
  if (id.empty()) {
    TPUFLEET_ASSIGN_OR_RETURN(id, NewJobId(ids));
  } else if (ids.count(id) > 0) {
    return AlreadyExistsError("there is a job " + id + " already");
  }

  AgentCall call;
  call.request.op = api::AgentOp::kJobStart;
  api::JobSpec& spec = call.request.job;
  spec.id = id;
  spec.name = name;
  spec.command = request.command;
  spec.workdir = request.workdir;
  for (const auto& [key, value] : request.env) {
    spec.env[key] = value;  // of repeated names the last wins, as JobEnvironment has it
  }
  spec.accelerator = request.accelerator && !topology.accelerator_type.empty();
  spec.no_wait = request.no_wait;
  spec.kill_stale = request.kill_stale;
  spec.keep_going = request.keep_going;
  spec.topology = topology;
  spec.started_by = request.started_by;
  spec.user = request.user;
  TPUFLEET_ASSIGN_OR_RETURN(JobView job, StartChecked(world, workers, call));
  // Its share of its node's hours from now on (core/spend_report.h) is billed to a
  // collaborator who ran it; anyone else's run, like the node, to the fleet's owner.
  JobRunRecord run{record.fleet,      record.name, id, name, request.user, request.user,
                   world.clock.Now(), std::nullopt};
  if (Status put = world.store.PutJobRun(run); !put.ok()) {
    return Status(put.code(),
                  "job " + id + " started, but its hours are not billed to it: " + put.message());
  }
  if (Restarts(request.restart)) {
    // After the start: a job kept before it ran would be "restarted" by serve without
    // ever having started. A failed write leaves the job running, not restartable.
    Result<JobRecord> kept = KeepRestartable(world, record, spec, request);
    if (!kept.ok()) {
      return Status(kept.status().code(), "job " + id +
                                              " started, but serve will not restart "
                                              "it: " +
                                              kept.status().message());
    }
    job.restartable = std::move(*kept);
  }
  return job;
}

}  // namespace tpufleet
