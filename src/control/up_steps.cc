// NodeSteps' cloud steps but the create (up_create.cc): from the plan to a READY node
// with its host keys pinned and its ssh-keys metadata as the spec says.
#include "control/up_steps.h"

#include <algorithm>

#include "control/host_keys.h"
#include "control/up_internal.h"

namespace tpufleet::up_internal {

bool IsBatchStep(NodeStep step) {
  return step == NodeStep::kSshFiles || step == NodeStep::kLogin || step == NodeStep::kAgent ||
         step == NodeStep::kAgentInstall || step == NodeStep::kAccounts ||
         step == NodeStep::kMounts || step == NodeStep::kSetup;
}

NodeSteps::NodeSteps(World& world, const FleetSpec& fleet, const NodePlan& plan,
                     CloudProvider& provider, const UpOptions& options,
                     ProgressObserver& progress, const FleetKey* key,
                     const Result<LocalAgent>& agent)
    : world_(world), fleet_(fleet), spec_(*plan.spec), plan_(plan), provider_(provider),
      options_(options), progress_(progress), key_(key), agent_(agent),
      poller_(world.clock, options.poll_min, options.poll_max, options.timeout),
      due_(world.clock.MonotonicNow()), now_(due_), action_(plan.action),
      resume_(plan.resume) {}

void NodeSteps::Advance(Clock::MonoTime now) {
  now_ = now;
  Status s;
  switch (step_) {
    case NodeStep::kStart:
      s = Begin();
      break;
    case NodeStep::kOperation:
      s = PollOperation();
      break;
    case NodeStep::kQueued:
      s = PollQueued();
      break;
    case NodeStep::kBooting:
      s = PollBooting();
      break;
    case NodeStep::kHostKeys:
      s = PollHostKeys();
      break;
    case NodeStep::kLeftover:
      s = PollLeftover();
      break;
    case NodeStep::kSshFiles:
    case NodeStep::kLogin:
    case NodeStep::kAgent:
    case NodeStep::kAgentInstall:
    case NodeStep::kAccounts:
    case NodeStep::kMounts:
    case NodeStep::kSetup:
    case NodeStep::kDone:
      return;
  }
  if (!s.ok()) {
    End(s);
  }
}

// The end of an attempt: a failure made by a preemption starts again (a few times at
// most), anything else is the node's outcome.
void NodeSteps::End(const Status& status) {
  if (!status.ok() && (preempted_ || vanished_) && retries_ < kPreemptedRetries) {
    ++retries_;
    action_ = preempted_ ? PlanAction::kRecreate : PlanAction::kCreate;
    preempted_ = vanished_ = false;
    Go(NodeStep::kStart);
    return;
  }
  status_ = status;
  step_ = NodeStep::kDone;
  if (status.ok()) {
    Report(NodePhase::kReady, plan_.zones.empty() ? "" : zone_, ReadyDetail());
  } else {
    Report(NodePhase::kFailed, zone_, status.message());
  }
}

bool NodeSteps::PollLater(NodeStep step) {
  std::optional<Clock::MonoTime> at = poller_.Next(now_);
  if (!at) {
    return false;
  }
  Go(step, *at);
  return true;
}

Status NodeSteps::Begin() {
  TPUFLEET_TRY(LoadRecord());
  switch (action_) {
    case PlanAction::kForeign:
      return AlreadyExistsError(plan_.detail);
    case PlanAction::kDiffers:
      return FailedPreconditionError(plan_.detail);
    case PlanAction::kRecreate:
      return StartRemove();
    case PlanAction::kStart:
      zone_ = plan_.zones.front();
      TPUFLEET_TRY(Adopt());
      return StartStopped();
    case PlanAction::kCreate:
      return StartCreate();
    case PlanAction::kKeep:
    case PlanAction::kWait:
      zone_ = plan_.zones.empty() ? "" : plan_.zones.front();
      TPUFLEET_TRY(Adopt());
      if (action_ == PlanAction::kWait && spec_.queued) {
        StartQueued(/*from_create=*/false);
        return Status::Ok();
      }
      StartBooting();
      return Status::Ok();
  }
  return InternalError("unknown plan action");
}

std::string NodeSteps::ReadyDetail() const {
  return std::to_string(rec_.workers.size()) +
         (rec_.workers.size() == 1 ? " worker" : " workers");
}

void NodeSteps::Report(NodePhase phase, const std::string& zone, std::string detail) {
  progress_.OnProgress({plan_.node, phase, zone, std::move(detail)});
}

Status NodeSteps::Event(const std::string& kind, const std::string& detail) {
  return world_.store.AddEvent({0, world_.clock.Now(), fleet_.name, plan_.node, kind, detail});
}

Status NodeSteps::Save() {
  rec_.updated_at = world_.clock.Now();
  return world_.store.PutNode(rec_);
}

Status NodeSteps::LoadRecord() {
  TPUFLEET_ASSIGN_OR_RETURN(std::vector<NodeRecord> all, world_.store.Nodes(fleet_.name));
  for (NodeRecord& r : all) {
    if (r.name == plan_.node) {
      rec_ = std::move(r);
      // A kept or adopted node is selected (`exec team=a`) by its labels as of now.
      rec_.labels = spec_.labels;
      return Status::Ok();
    }
  }
  rec_ = NodeRecord{};
  rec_.fleet = fleet_.name;
  rec_.name = plan_.node;
  rec_.created_at = world_.clock.Now();
  FillFromSpec();
  return Status::Ok();
}

void NodeSteps::FillFromSpec() {
  rec_.provider = std::string(ProviderName(fleet_.provider));
  rec_.project = fleet_.project;
  rec_.type = spec_.type;
  rec_.runtime_version = spec_.runtime_version;
  rec_.capacity = ssh_hosts() ? "" : std::string(CapacityName(spec_.capacity));
  rec_.spec_hash = SpecDigest(spec_);
  rec_.login = ssh_hosts() ? spec_.ssh_user : world_.login;
  rec_.port = spec_.port;
  rec_.labels = spec_.labels;
}

// A node that exists already (and is ours): make sure the store knows it.
Status NodeSteps::Adopt() {
  if (rec_.zone != zone_ || rec_.state == NodeState::kNone) {
    rec_.zone = zone_;
    rec_.state = plan_.state;
    TPUFLEET_TRY(Save());
  }
  return Status::Ok();
}

// Deletes a preempted node (or dead queued resource) before making it again.
Status NodeSteps::StartRemove() {
  if (zone_.empty()) {
    zone_ = plan_.zones.front();
  }
  NodeState state = gone_state_ == NodeState::kNone ? plan_.state : gone_state_;
  Report(NodePhase::kDeleting, zone_, "was " + state.Name());
  if (rec_.state != state) {  // else `status --refresh` logged it already
    TPUFLEET_TRY(Event("preempted", "zone=" + zone_ + " state=" + state.Name()));
  }
  Result<CloudOperation> op = spec_.queued
                                  ? provider_.DeleteQueuedResource(zone_, plan_.node, true)
                                  : provider_.DeleteNode(zone_, plan_.node);
  if (op.ok()) {
    return WaitFor(*op, OpFor::kRemove);
  }
  if (op.status().code() != StatusCode::kNotFound) {
    return op.status();
  }
  return Removed();
}

// A stopped node (serve's idle action stops single-host nodes): started, its operation
// waited for, then brought up as a booting node is (its addresses and host keys may be
// new, as after a maintenance).
Status NodeSteps::StartStopped() {
  Report(NodePhase::kBooting, zone_, "starting (was STOPPED)");
  TPUFLEET_ASSIGN_OR_RETURN(CloudOperation op, provider_.StartNode(zone_, plan_.node));
  changed_ = true;
  TPUFLEET_TRY(Event("started", "zone=" + zone_));
  return WaitFor(op, OpFor::kStart);
}

Status NodeSteps::Removed() {
  changed_ = true;
  rec_.state = NodeState::kDeleted;  // nothing in flight here: a create elsewhere supersedes nothing
  return StartCreate();
}

Status NodeSteps::WaitFor(const CloudOperation& op, OpFor what) {
  op_ = op;
  op_for_ = what;
  if (op_.done) {
    return OperationDone(op_.error);
  }
  if (!PollLater(NodeStep::kOperation)) {
    return OperationDone(TimeoutError("operation " + op_.name + " did not finish in time"));
  }
  return Status::Ok();
}

Status NodeSteps::PollOperation() {
  Result<CloudOperation> got = provider_.GetOperation(op_.name);
  if (!got.ok()) {
    return OperationDone(got.status());
  }
  op_ = std::move(*got);
  if (op_.done) {
    return OperationDone(op_.error);
  }
  if (!PollLater(NodeStep::kOperation)) {
    return OperationDone(TimeoutError("operation " + op_.name + " did not finish in time"));
  }
  return Status::Ok();
}

Status NodeSteps::OperationDone(const Status& result) {
  switch (op_for_) {
    case OpFor::kRemove:
      TPUFLEET_TRY(result);
      return Removed();
    case OpFor::kCreate:
      return CreateDone(result);
    case OpFor::kSshKeys:
      TPUFLEET_TRY(result);
      Go(NodeStep::kSshFiles);
      return Status::Ok();
    case OpFor::kStart:
      TPUFLEET_TRY(result);
      StartBooting();
      return Status::Ok();
  }
  return InternalError("unknown operation");
}

Status NodeSteps::PollQueued() {
  Result<CloudQueuedResource> got = provider_.GetQueuedResource(zone_, plan_.node);
  if (!got.ok()) {
    return QueuedDone(got.status());
  }
  const CloudQueuedResource& qr = *got;
  if (qr.state == NodeState::kActive) {
    queued_active_ = true;
    return QueuedDone(Status::Ok());
  }
  if (qr.state == NodeState::kSuspending || qr.state == NodeState::kSuspended) {
    // Its node was preempted (or deleted) and the request will not make another: the
    // next pass (serve) or `up` deletes it and creates anew.
    return QueuedDone(UnavailableError("queued resource " + plan_.node + " is " +
                                       qr.state.Name() + ": its node was preempted or deleted"));
  }
  if (qr.state == NodeState::kFailed) {
    return QueuedDone(qr.failure.ok() ? FailedPreconditionError("queued resource " +
                                                                qr.cloud_name + " failed")
                                      : qr.failure);
  }
  if (qr.state != last_state_) {
    last_state_ = qr.state;
    Report(NodePhase::kQueued, zone_, qr.state.Name());
    if (rec_.state != NodeState::kQueued) {
      rec_.state = NodeState::kQueued;
      if (Status saved = Save(); !saved.ok()) {
        return QueuedDone(saved);
      }
    }
  }
  if (!PollLater(NodeStep::kQueued)) {
    return QueuedDone(TimeoutError("queued resource " + plan_.node + " still " + qr.state.Name() +
                                   " after the timeout; it keeps waiting in the cloud, and "
                                   "the next `up` picks it up"));
  }
  return Status::Ok();
}

Status NodeSteps::QueuedDone(const Status& result) {
  if (queued_from_create_) {
    if (!result.ok()) {
      return ZoneFailed(result);
    }
  } else if (!result.ok() && result.code() != StatusCode::kNotFound) {
    // A queued resource still waiting: its failure is news only it can tell.
    return result;
  }
  StartBooting();
  return Status::Ok();
}

void NodeSteps::StartQueued(bool from_create) {
  queued_from_create_ = from_create;
  last_state_ = NodeState::kNone;
  Go(NodeStep::kQueued);
}

void NodeSteps::StartBooting() {
  Report(NodePhase::kBooting, zone_);
  last_state_ = NodeState::kNone;
  Go(NodeStep::kBooting);
}

Status NodeSteps::PollBooting() {
  Result<CloudNode> got = provider_.GetNode(zone_, plan_.node);
  if (got.ok()) {
    if (got->state.IsUsable()) {
      node_ = std::move(*got);
      Go(NodeStep::kHostKeys);
      return Status::Ok();
    }
    const CloudNode& node = *got;
    if (node.state.IsGone()) {
      preempted_ = true;
      gone_state_ = node.state;
    }
    if (node.state.IsHalted()) {
      return FailedPreconditionError("node " + plan_.node + " is " + node.state.Name() +
                                     (node.health.empty() ? "" : " (" + node.health + ")"));
    }
    if (node.state != last_state_) {
      last_state_ = node.state;
      Report(NodePhase::kBooting, zone_, node.state.Name());
    }
  } else if (got.status().code() != StatusCode::kNotFound) {
    return got.status();
  } else if (action_ == PlanAction::kWait || last_state_ != NodeState::kNone || queued_active_) {
    // It was there and is gone: a create that failed (one a killed `up` started, say)
    // or a delete by someone else. Make it anew rather than wait for nothing.
    vanished_ = true;
    rec_.state = NodeState::kNotFound;  // its create is over: the next one supersedes nothing
    return UnavailableError("node " + plan_.node + " vanished while coming up");
  }
  if (!PollLater(NodeStep::kBooting)) {
    return TimeoutError("node " + plan_.node + " not READY in time (last state " +
                        (last_state_ == NodeState::kNone ? "not found" : last_state_.Name()) +
                        ")");
  }
  return Status::Ok();
}

Status NodeSteps::PollHostKeys() {
  TPUFLEET_ASSIGN_OR_RETURN(std::vector<WorkerIdentity> ids,
                            provider_.GetWorkerIdentities(zone_, plan_.node));
  size_t with_keys = std::count_if(ids.begin(), ids.end(), [](const WorkerIdentity& w) {
    return !w.host_key.empty();
  });
  if (with_keys == node_.workers.size() && ids.size() == node_.workers.size()) {
    return Ready(ids);
  }
  if (ssh_hosts()) {
    std::vector<std::string> confirmed;
    TPUFLEET_TRY(PinSshHostsKeys(node_, plan_.node, spec_.port, rec_.workers,
                                 options_.confirm_host_key, ids, &confirmed));
    for (const std::string& c : confirmed) {
      TPUFLEET_TRY(Event("host-key-pinned", c));
    }
    return Ready(ids);
  }
  Report(NodePhase::kBooting, zone_,
         "host keys " + std::to_string(with_keys) + "/" + std::to_string(node_.workers.size()));
  if (!PollLater(NodeStep::kHostKeys)) {
    return TimeoutError("node " + plan_.node + " did not publish its workers' host keys");
  }
  return Status::Ok();
}

// READY with every host key: the record takes the workers, then the ssh-keys metadata
// is made what the spec says.
Status NodeSteps::Ready(const std::vector<WorkerIdentity>& ids) {
  bool was_ready = rec_.state.IsUsable();
  rec_.state = node_.state;
  rec_.health = node_.health;
  rec_.data_disks = node_.data_disks;
  rec_.cloud_name = node_.cloud_name;
  if (!node_.queued_resource.empty()) {
    rec_.queued_resource = node_.queued_resource;
  }
  rec_.workers = MergeWorkers(node_, ids);
  if (!ssh_hosts()) {
    rec_.login = world_.login;  // as DesiredSshKeys puts it in ssh-keys (sudo: SUDO_USER)
  }
  TPUFLEET_TRY(world_.store.Transaction([&]() -> Status {
    TPUFLEET_TRY(Save());
    return was_ready ? Status::Ok() : Event("ready", "zone=" + zone_);
  }));
  std::string want = DesiredSshKeys();
  auto have = node_.metadata.find(kSshKeysMetadataKey);
  if (ssh_hosts() || (have != node_.metadata.end() && have->second == want)) {
    Go(NodeStep::kSshFiles);
    return Status::Ok();
  }
  changed_ = true;
  TPUFLEET_ASSIGN_OR_RETURN(CloudOperation op, provider_.SetSshKeys(zone_, plan_.node, want));
  return WaitFor(op, OpFor::kSshKeys);
}

// A worker keeps its setup flag (and the version of setup it ran) and its agent only
// while it is the same VM (same host key).
std::vector<WorkerRecord> NodeSteps::MergeWorkers(const CloudNode& node,
                                                  const std::vector<WorkerIdentity>& ids) const {
  std::vector<WorkerRecord> out;
  for (size_t i = 0; i < node.workers.size(); ++i) {
    WorkerRecord w;
    w.index = static_cast<int>(i);
    w.address = node.workers[i].SshAddress();
    w.internal_address = node.workers[i].address;
    w.hostname = ids[i].hostname;
    w.host_key = ids[i].host_key;
    for (const WorkerRecord& old : rec_.workers) {
      if (old.index == w.index && old.host_key == w.host_key) {
        w.setup_done = old.setup_done;
        w.setup_digest = old.setup_digest;
        w.agent_sha256 = old.agent_sha256;
      }
    }
    out.push_back(std::move(w));
  }
  return out;
}

bool NodeSteps::WorkersMoved(const CloudNode& node) const {
  if (node.workers.size() != rec_.workers.size()) {
    return true;
  }
  for (size_t i = 0; i < node.workers.size(); ++i) {
    if (node.workers[i].SshAddress() != rec_.workers[i].address) {
      return true;
    }
  }
  return false;
}

}  // namespace tpufleet::up_internal
