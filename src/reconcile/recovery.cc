#include "reconcile/recovery.h"

#include <algorithm>
#include <cstdio>

#include "control/up_steps.h"

namespace tpufleet {

// The steps' progress: serve's log lines, and the events of the steps up does not
// record itself (agent-up, setup-done).
class Recovery::Progress final : public ProgressObserver {
 public:
  explicit Progress(Recovery& r) : r_(r) {}

  void OnProgress(const NodeProgress& p) override {
    switch (p.phase) {
      case NodePhase::kDeleting:
        r_.log_("deleting the husk in " + p.zone + (p.detail.empty() ? "" : " (" + p.detail + ")"));
        return;
      case NodePhase::kCreating:
        r_.log_("creating in " + p.zone);
        return;
      case NodePhase::kStockout:
        r_.log_("stockout in " + p.zone);
        return;
      case NodePhase::kSetup:
        AgentUp();
        return;
      case NodePhase::kReady:
        AgentUp();
        if (!setup_done_) {
          setup_done_ = true;
          Record("setup-done", "zone=" + p.zone);
        }
        return;
      default:
        return;
    }
  }

 private:
  void AgentUp() {
    if (!agent_up_) {
      agent_up_ = true;
      Record("agent-up", "");
    }
  }
  void Record(const std::string& kind, const std::string& detail) {
    if (Status s = r_.Event(kind, detail); !s.ok()) {
      r_.log_("could not record " + kind + ": " + s.message());
    }
  }

  Recovery& r_;
  bool agent_up_ = false;
  bool setup_done_ = false;
};

Recovery::Recovery(World& world, RecoveryRequest request, LockHold lock, EventLoop& loop,
                   Log log, Done done)
    : world_(world), request_(std::move(request)), lock_(std::move(lock)), loop_(loop),
      log_(std::move(log)), done_(std::move(done)) {}

Recovery::~Recovery() {
  loop_.Remove(watch_);
}

Result<std::unique_ptr<Recovery>> Recovery::Start(World& world, const Catalog& catalog,
                                                  RecoveryRequest request, LockHold lock,
                                                  const UpOptions& options, EventLoop& loop,
                                                  Log log, Done done) {
  const FleetSpec& fleet = *request.fleet;
  TPUFLEET_ASSIGN_OR_RETURN(CloudProvider * provider, world.providers.ForFleet(fleet));
  TPUFLEET_ASSIGN_OR_RETURN(UpPlan plan, PlanUp(fleet, catalog, world));
  auto it = std::find_if(plan.nodes.begin(), plan.nodes.end(),
                         [&](const NodePlan& p) { return p.node == request.node; });
  if (it == plan.nodes.end()) {
    return NotFoundError("node " + request.node + " is not in fleet " + fleet.name + "'s spec");
  }
  std::unique_ptr<Recovery> r(
      new Recovery(world, std::move(request), std::move(lock), loop, std::move(log), std::move(done)));
  NodePlan node_plan = *it;
  r->spec_ = *node_plan.spec;
  if (r->request_.capacity) {
    r->spec_.capacity = *r->request_.capacity;
  }
  node_plan.spec = &r->spec_;
  if (r->request_.force_recreate && node_plan.action == PlanAction::kKeep) {
    // The cloud still says READY, the agents know better: its end is seconds away.
    node_plan.action = PlanAction::kRecreate;
    node_plan.state = NodeState::kPreempted;
  }
  r->plans_ = {std::move(node_plan)};
  TPUFLEET_ASSIGN_OR_RETURN(FleetKey key, world.keys.Ensure());
  r->key_ = std::move(key);
  r->progress_ = std::make_unique<Progress>(*r);
  r->steps_ = std::make_unique<up_internal::UpSteps>(world, *r->request_.fleet, r->plans_,
                                                     *provider, options, *r->progress_,
                                                     &*r->key_, loop);
  Recovery* raw = r.get();
  r->watch_ = loop.AtTurnEnd([raw](Clock::MonoTime) {
    if (!raw->finished_ && raw->steps_->done()) {
      raw->Finish();
    }
  });
  return r;
}

Status Recovery::Event(const std::string& kind, const std::string& detail) {
  return world_.store.AddEvent(
      {0, world_.clock.Now(), request_.fleet->name, request_.node, kind, detail});
}

void Recovery::Finish() {
  finished_ = true;
  loop_.Remove(watch_);
  RecoveryOutcome out;
  out.fleet = request_.fleet->name;
  out.node = request_.node;
  out.status = steps_->Outcomes().front().status;
  steps_.reset();
  if (out.status.ok()) {
    out.seconds =
        std::chrono::duration<double>(world_.clock.Now() - request_.detected).count();
    char seconds[32];
    std::snprintf(seconds, sizeof seconds, "%.1f", out.seconds);
    if (Status s = Event("recovered", std::string("seconds=") + seconds); !s.ok()) {
      out.notes.push_back("could not record the recovery: " + s.message());
    }
  }
  lock_.reset();
  done_(out);  // may destroy this
}

}  // namespace tpufleet
