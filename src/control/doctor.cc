#include "control/doctor.h"

#include <algorithm>
#include <cstdlib>
#include <map>

#include "control/agent_client.h"
#include "control/agent_install.h"
#include "util/strings.h"

namespace tpufleet {
namespace {

// What the TPU API and the catalog say of one node's workers.
struct NodeFacts {
  std::string type;                    // "" for a node the API does not know as a TPU
  int chips_per_host = 0;              // 0: none expected
  std::vector<std::string> endpoints;  // internal addresses, worker 0 first; "": unknown
};

std::string Key(const WorkerTarget& w) { return w.fleet + "/" + w.node; }

// From the cloud when it answers (the record's type otherwise, and no endpoints: the
// agent then skips that comparison).
NodeFacts FactsOf(World& world, const Catalog& catalog, const NodeRecord& rec) {
  NodeFacts f;
  f.type = rec.provider == "ssh-hosts" ? "" : rec.type;
  if (Result<CloudProvider*> p = world.providers.ForRecord(rec); p.ok() && !f.type.empty()) {
    if (Result<CloudNode> n = (*p)->GetNode(rec.zone, rec.name); n.ok()) {
      f.type = n->type;
      for (const CloudWorker& cw : n->workers) {
        f.endpoints.push_back(cw.address);
      }
    }
  }
  if (Result<AcceleratorType> t = catalog.Lookup(f.type); t.ok()) {
    f.chips_per_host = t->chips_per_worker;
  }
  return f;
}

int64_t NowMs(World& world) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             world.clock.Now().time_since_epoch())
      .count();
}

std::string Seconds(int64_t ms) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.3f s", static_cast<double>(ms) / 1000.0);
  return buf;
}

// Forgets the recorded agent of the workers in `stale` (by their targets), so the next
// `up` looks at them again.
void ForgetAgents(World& world, const std::vector<const WorkerTarget*>& stale) {
  if (stale.empty()) {
    return;
  }
  (void)world.store.Transaction([&]() -> Status {
    TPUFLEET_ASSIGN_OR_RETURN(std::vector<NodeRecord> nodes, world.store.Nodes(""));
    for (NodeRecord& rec : nodes) {
      bool changed = false;
      for (WorkerRecord& w : rec.workers) {
        for (const WorkerTarget* t : stale) {
          if (t->fleet == rec.fleet && t->node == rec.name && t->worker == w.index &&
              w.agent_sha256 != kAgentNotInstallable && !w.agent_sha256.empty()) {
            w.agent_sha256.clear();
            changed = true;
          }
        }
      }
      if (changed) {
        TPUFLEET_TRY(world.store.PutNode(rec));
      }
    }
    return Status::Ok();
  });
}

}  // namespace

bool WorkerDiagnosis::ok() const {
  return std::all_of(checks.begin(), checks.end(), [](const api::DoctorCheck& c) { return c.ok; });
}

api::DoctorCheck ClockCheck(int64_t worker_ms, int64_t sent_ms, int64_t answered_ms) {
  int64_t half_trip = (answered_ms - sent_ms) / 2;
  int64_t offset = worker_ms - (sent_ms + half_trip);
  std::string detail = Seconds(offset) + " from this machine's clock (±" +
                       Seconds(half_trip).substr(1) + ")";
  if (std::llabs(offset) <= kClockOffsetLimit.count() + half_trip) {
    return {"clock", true, detail, ""};
  }
  return {"clock", false, detail + ", more than " + Seconds(kClockOffsetLimit.count()).substr(1),
          "the worker's (or this machine's) clock is off: check its time service "
          "(`timedatectl status`; `sudo systemctl restart chrony` or systemd-timesyncd)"};
}

Result<std::vector<WorkerDiagnosis>> Doctor(World& world, const Catalog& catalog,
                                            const std::vector<WorkerTarget>& workers) {
  Result<LocalAgent> local = LoadLocalAgent(world.paths.agent_binary);
  TPUFLEET_ASSIGN_OR_RETURN(std::vector<NodeRecord> records, world.store.Nodes(""));
  // One call per node: its workers share the expectations but each one's index.
  std::map<std::string, std::vector<size_t>> by_node;
  std::vector<std::string> order;
  for (size_t i = 0; i < workers.size(); ++i) {
    std::string key = Key(workers[i]);
    if (!by_node.count(key)) {
      order.push_back(key);
    }
    by_node[key].push_back(i);
  }
  std::vector<WorkerDiagnosis> out(workers.size());
  std::vector<const WorkerTarget*> stale;
  for (const std::string& key : order) {
    const std::vector<size_t>& at = by_node[key];
    std::vector<WorkerTarget> group;
    for (size_t i : at) {
      group.push_back(workers[i]);
    }
    NodeFacts facts;
    for (const NodeRecord& rec : records) {
      if (rec.fleet + "/" + rec.name == key) {
        facts = FactsOf(world, catalog, rec);
      }
    }
    AgentCall doctor;
    doctor.request.op = api::AgentOp::kDoctor;
    doctor.request.expect = {facts.type, facts.chips_per_host, -1, facts.endpoints};
    doctor.timeout = kDoctorCallTimeout;
    TPUFLEET_ASSIGN_OR_RETURN(std::vector<AgentReply> checked, CallAgents(world, group, doctor));
    AgentCall hello;
    hello.request.op = api::AgentOp::kHello;
    hello.timeout = kHelloCallTimeout;
    int64_t sent = NowMs(world);
    TPUFLEET_ASSIGN_OR_RETURN(std::vector<AgentReply> hellos, CallAgents(world, group, hello));
    int64_t answered = NowMs(world);
    for (size_t k = 0; k < at.size(); ++k) {
      WorkerDiagnosis& d = out[at[k]];
      d.worker = workers[at[k]];
      const auto* report = std::get_if<api::DoctorReport>(&checked[k].body);
      const auto* hi = std::get_if<api::AgentHello>(&hellos[k].body);
      if (!checked[k].status.ok() || report == nullptr || !hellos[k].status.ok() || hi == nullptr) {
        Status why = !checked[k].status.ok() ? checked[k].status : hellos[k].status;
        d.checks.push_back({"agent", false, why.message(),
                            "run `tpufleet up` to install and start the agent"});
        stale.push_back(&workers[at[k]]);
        continue;
      }
      d.checks.push_back({"agent", true, "answers (" + hi->agent_version + ")", ""});
      if (!local.ok()) {
        d.checks.push_back({"agent_version", false, "cannot compare: " + local.status().message(),
                            "put tpufleet-agent next to tpufleet, or set $" +
                                std::string(kAgentBinaryEnv)});
      } else if (hi->binary_sha256 != local->sha256) {
        d.checks.push_back({"agent_version", false,
                            "runs " + hi->binary_sha256.substr(0, 12) + ", the CLI has " +
                                local->sha256.substr(0, 12),
                            "old agent version: run `tpufleet up` to replace it"});
        stale.push_back(&workers[at[k]]);
      } else {
        d.checks.push_back(
            {"agent_version", true, "the CLI's (" + local->sha256.substr(0, 12) + ")", ""});
      }
      d.checks.push_back(ClockCheck(hi->time_unix_ms, sent, answered));
      d.checks.insert(d.checks.end(), report->checks.begin(), report->checks.end());
    }
  }
  ForgetAgents(world, stale);
  std::stable_partition(out.begin(), out.end(), [](const WorkerDiagnosis& d) { return !d.ok(); });
  return out;
}

}  // namespace tpufleet
