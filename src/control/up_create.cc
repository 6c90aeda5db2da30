// NodeSteps' create: zone by zone, each request recorded before it is sent (up.h's
// crash-safety contract), and what a stockout leaves behind deleted before the next zone.
#include "control/leftovers.h"
#include "control/up_internal.h"
#include "control/up_steps.h"
#include "core/zone_choice.h"
#include "util/secret.h"
#include "util/strings.h"

namespace tpufleet::up_internal {

Status NodeSteps::StartCreate() {
  std::vector<std::string> zones = plan_.zones;
  if (action_ != plan_.action || action_ == PlanAction::kRecreate) {
    zones = OrderZones(spec_.zones, spec_.type, RecentStockouts(world_), world_.clock.Now());
  }
  TPUFLEET_ASSIGN_OR_RETURN(std::vector<LeftoverRecord> leftovers,
                            world_.store.Leftovers(fleet_.name));
  zones = WithoutLeftovers(zones, plan_.node, leftovers);
  if (zones.empty()) {
    return UnavailableError("every zone of " + plan_.node + " still holds a leftover of it "
                            "that could not be deleted (see `tpufleet status`); run up "
                            "again once it is gone");
  }
  if (spec_.queued) {
    zones.resize(1);  // a queued resource waits for capacity where it is
  }
  zones_ = std::move(zones);
  zone_index_ = 0;
  stockout_ = Status::Ok();
  return CreateNext();
}

Status NodeSteps::CreateNext() {
  if (zone_index_ >= zones_.size()) {
    rec_.state = NodeState::kStockout;
    TPUFLEET_TRY(Save());
    return ResourceExhaustedError("no capacity for " + spec_.type + " in any of its zones (" +
                                  Join(zones_, ", ") + "); the last said: " +
                                  stockout_.message() +
                                  ". Run up again later, add zones, or set `queued:`");
  }
  zone_ = zones_[zone_index_];
  return CreateIn(zone_);
}

// How a zone's create ended when it did not bring the node: a stockout moves on to the
// next zone, anything else ends the attempt.
Status NodeSteps::ZoneFailed(const Status& last) {
  if (last.code() != StatusCode::kResourceExhausted) {
    return last;
  }
  TPUFLEET_TRY(Event("stockout", "type=" + spec_.type + " zone=" + zone_));
  Report(NodePhase::kStockout, zone_, last.message());
  stockout_ = last;
  ++zone_index_;
  return CreateNext();
}

CreateNodeRequest NodeSteps::Request(const std::string& zone) const {
  CreateNodeRequest r;
  r.zone = zone;
  r.node_id = plan_.node;
  r.type = spec_.type;
  r.runtime_version = spec_.runtime_version;
  r.capacity = spec_.capacity;
  r.labels = spec_.labels;
  r.labels[kFleetLabel] = fleet_.name;
  r.metadata[kSshKeysMetadataKey] = DesiredSshKeys();
  r.data_disks = spec_.data_disks;
  r.queued = spec_.queued;
  r.request_id = rec_.request_id;
  return r;
}

std::string NodeSteps::DesiredSshKeys() const {
  return SshKeysMetadata(world_.login, key_ ? key_->public_key : "", UsersOn(fleet_, spec_));
}

Status NodeSteps::CreateIn(const std::string& zone) {
  Report(NodePhase::kCreating, zone);
  // Record where and with which request id before asking: a kill after this line is
  // resolved by the next up looking in this zone first and, if nothing is there yet,
  // asking again with this id (resume).
  bool resume = resume_ && rec_.state.IsInFlight() && rec_.zone == zone &&
                !rec_.request_id.empty();
  resume_ = false;
  // A create in flight elsewhere is superseded by this one: whatever it makes there
  // is unwanted, so it is remembered, in the same step, until it is found gone.
  std::optional<LeftoverRecord> superseded;
  if (rec_.state.IsInFlight() && !rec_.zone.empty() && rec_.zone != zone) {
    superseded = LeftoverIn(rec_.zone, !rec_.queued_resource.empty(), "superseded");
  }
  FillFromSpec();
  if (!resume) {
    TPUFLEET_ASSIGN_OR_RETURN(rec_.request_id, RandomUuid());
    rec_.created_at = world_.clock.Now();
  }
  rec_.zone = zone;
  rec_.state = NodeState::kRequested;
  rec_.workers.clear();
  rec_.queued_resource = spec_.queued ? "projects/" + fleet_.project + "/locations/" + zone +
                                            "/queuedResources/" + plan_.node
                                      : "";
  TPUFLEET_TRY(world_.store.Transaction([&]() -> Status {
    TPUFLEET_TRY(Save());
    if (superseded) {
      TPUFLEET_TRY(RememberLeftover(world_, *superseded));
    }
    return Event("create-requested", "type=" + spec_.type + " zone=" + zone +
                                         " capacity=" + rec_.capacity +
                                         (resume ? " resumed=true" : ""));
  }));
  Result<CloudOperation> op = provider_.CreateNode(Request(zone));
  if (!op.ok()) {
    StatusCode code = op.status().code();
    if (code == StatusCode::kFailedPrecondition || code == StatusCode::kInvalidArgument ||
        code == StatusCode::kPermissionDenied) {
      // The API said no: nothing exists, so nothing is left for status to show.
      TPUFLEET_TRY(world_.store.DeleteNode(fleet_.name, plan_.node));
      return op.status();
    }
    if (code != StatusCode::kAlreadyExists) {
      // The answer may be lost: the record lets the next up look.
      return ZoneFailed(op.status());
    }
    return AdoptAfterConflict(zone, op.status());
  }
  changed_ = true;
  return WaitFor(*op, OpFor::kCreate);
}

Status NodeSteps::CreateDone(const Status& done) {
  if (!done.ok()) {
    if (done.code() == StatusCode::kResourceExhausted && !spec_.queued) {
      // A failed create may leave a node behind (Cloud TPU sometimes does); it would
      // hold the id and quota, so it is deleted before the next zone (kLeftover).
      stockout_ = done;
      leftover_.emplace(provider_, zone_, plan_.node, /*queued=*/false, poller_);
      Go(NodeStep::kLeftover);
      return Status::Ok();
    }
    return ZoneFailed(done);
  }
  if (spec_.queued) {
    StartQueued(/*from_create=*/true);
    return Status::Ok();
  }
  StartBooting();
  return Status::Ok();
}

// The id was taken: by our own earlier request (a retry after a lost answer, or a
// killed up), or by someone else.
Status NodeSteps::AdoptAfterConflict(const std::string& zone, const Status& conflict) {
  Result<CloudNode> node = provider_.GetNode(zone, plan_.node);
  if (node.ok()) {
    auto label = node->labels.find(kFleetLabel);
    if (label == node->labels.end() || label->second != fleet_.name) {
      return conflict;
    }
    StartBooting();
    return Status::Ok();
  }
  if (spec_.queued) {  // our queued resource, its node not made yet
    StartQueued(/*from_create=*/true);
    return Status::Ok();
  }
  return conflict;
}

LeftoverRecord NodeSteps::LeftoverIn(const std::string& zone, bool queued,
                                     const std::string& reason) const {
  return {fleet_.name, plan_.node, zone,          queued, rec_.provider, rec_.project,
          rec_.type,   rec_.capacity, reason, "", rec_.created_at};
}

// The stockout's leftover is deleted a request at a time (a Deletion, leftovers.h).
Status NodeSteps::PollLeftover() {
  if (std::optional<Clock::MonoTime> at = leftover_->Step(now_)) {
    Go(NodeStep::kLeftover, *at);
    return Status::Ok();
  }
  return LeftoverDone(leftover_->result());
}

// A stockout's leftover is gone, or remembered for the next up or down to delete before
// the record moves on to another zone. An error only when it cannot even be remembered:
// then the record stays here, and the next up looks here first.
Status NodeSteps::LeftoverDone(const Status& deleted) {
  if (!deleted.ok()) {
    LeftoverRecord x = LeftoverIn(zone_, false, "stockout");
    x.last_error = deleted.message();
    TPUFLEET_TRY(world_.store.Transaction([&] { return RememberLeftover(world_, x); }));
    Report(NodePhase::kStockout, zone_,
           "it left a node behind that could not be deleted (" + deleted.message() +
               "); the next up or down deletes it");
  }
  rec_.state = NodeState::kStockout;  // this zone's create is over: nothing in flight here
  return ZoneFailed(stockout_);
}

}  // namespace tpufleet::up_internal
