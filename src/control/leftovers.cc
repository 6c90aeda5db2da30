#include "control/leftovers.h"

#include <algorithm>
#include <functional>
#include <memory>

#include "util/event_loop.h"
#include "util/strings.h"

namespace tpufleet {
namespace {

bool Ignorable(const Status& s) { return s.ok() || s.code() == StatusCode::kNotFound; }

// The record ProviderSource::ForRecord needs to find a leftover's provider.
NodeRecord RecordOf(const LeftoverRecord& x) {
  NodeRecord r;
  r.fleet = x.fleet;
  r.name = x.name;
  r.provider = x.provider;
  r.project = x.project;
  r.zone = x.zone;
  r.type = x.type;
  r.capacity = x.capacity;
  return r;
}

}  // namespace

Deletion::Deletion(CloudProvider& provider, std::string zone, std::string name, bool queued,
                   Poller& poller)
    : provider_(provider), zone_(std::move(zone)), name_(std::move(name)), poller_(poller),
      stage_(queued ? Stage::kQueued : Stage::kLook) {}

std::optional<Clock::MonoTime> Deletion::Finish(Status status) {
  result_ = std::move(status);
  return std::nullopt;
}

// An operation of ours: polled until done; then the node is looked at again.
std::optional<Clock::MonoTime> Deletion::Wait(CloudOperation op, Clock::MonoTime now) {
  op_ = std::move(op);
  if (op_.done) {
    if (!op_.error.ok()) {
      return Finish(op_.error);
    }
    stage_ = Stage::kLook;
    return now;
  }
  stage_ = Stage::kOperation;
  std::optional<Clock::MonoTime> at = poller_.Next(now);
  return at ? at : Finish(TimeoutError("operation " + op_.name + " did not finish in time"));
}

std::optional<Clock::MonoTime> Deletion::Step(Clock::MonoTime now) {
  switch (stage_) {
    case Stage::kQueued: {
      stage_ = Stage::kLook;
      Result<CloudOperation> op = provider_.DeleteQueuedResource(zone_, name_, /*force=*/true);
      if (op.ok()) {
        return Wait(std::move(*op), now);
      }
      return Ignorable(op.status()) ? std::optional(now) : Finish(op.status());
    }
    case Stage::kOperation: {
      Result<CloudOperation> got = provider_.GetOperation(op_.name);
      return got.ok() ? Wait(std::move(*got), now) : Finish(got.status());
    }
    case Stage::kLook:
      break;
  }
  Result<CloudNode> node = provider_.GetNode(zone_, name_);
  if (node.status().code() == StatusCode::kNotFound) {
    return Finish(Status::Ok());
  }
  if (!node.ok()) {
    return Finish(node.status());
  }
  if (node->state != NodeState::kDeleting) {
    Result<CloudOperation> op = provider_.DeleteNode(zone_, name_);
    if (op.ok()) {
      return Wait(std::move(*op), now);
    }
    return Ignorable(op.status()) ? std::optional(now) : Finish(op.status());
  }
  std::optional<Clock::MonoTime> at = poller_.Next(now);
  return at ? at : Finish(TimeoutError("node " + name_ + " in " + zone_ + " is still DELETING"));
}

Status DeleteAndWait(CloudProvider& provider, const std::string& zone, const std::string& name,
                     bool queued, Poller& poller) {
  Deletion d(provider, zone, name, queued, poller);
  Clock& clock = poller.clock();
  for (std::optional<Clock::MonoTime> at = d.Step(clock.MonotonicNow()); at;
       at = d.Step(clock.MonotonicNow())) {
    Clock::MonoTime now = clock.MonotonicNow();
    if (*at > now) {
      clock.SleepFor(*at - now);
    }
  }
  return d.result();
}

Status RememberLeftover(World& world, const LeftoverRecord& x) {
  TPUFLEET_TRY(world.store.PutLeftover(x));
  return world.store.AddEvent({0, world.clock.Now(), x.fleet, x.name, "leftover",
                               "zone=" + x.zone + " reason=" + x.reason});
}

Result<std::vector<LeftoverOutcome>> FinishLeftovers(World& world, std::string_view fleet,
                                                     const DeleteOptions& options,
                                                     ProgressObserver& progress) {
  TPUFLEET_ASSIGN_OR_RETURN(std::vector<LeftoverRecord> all, world.store.Leftovers(fleet));
  std::vector<LeftoverOutcome> out(all.size());
  struct Run {
    std::unique_ptr<Poller> poller;
    std::unique_ptr<Deletion> deletion;
  };
  std::vector<Run> runs(all.size());
  size_t finished = 0;
  auto finish = [&](size_t i, Status status) {
    LeftoverOutcome& o = out[i];
    const LeftoverRecord& x = o.leftover;
    o.status = std::move(status);
    if (o.status.ok()) {
      o.status = world.store.Transaction([&]() -> Status {
        TPUFLEET_TRY(world.store.DeleteLeftover(x));
        return world.store.AddEvent({0, world.clock.Now(), x.fleet, x.name,
                                     "leftover-deleted", "zone=" + x.zone});
      });
    } else {
      o.leftover.last_error = o.status.message();
      (void)world.store.PutLeftover(o.leftover);  // the error is news; the record stays
    }
    progress.OnProgress({x.name + " (leftover)",
                         o.status.ok() ? NodePhase::kDeleted : NodePhase::kFailed, x.zone,
                         o.status.ok() ? "" : o.status.message()});
    ++finished;
  };
  // One loop drives every deletion: a timer per leftover, armed for its next request.
  EventLoop loop(world.clock);
  std::function<void(size_t, Clock::MonoTime)> step = [&](size_t i, Clock::MonoTime now) {
    if (std::optional<Clock::MonoTime> at = runs[i].deletion->Step(now)) {
      loop.At(*at, [&step, i](Clock::MonoTime then) { step(i, then); });
    } else {
      finish(i, runs[i].deletion->result());
    }
  };
  for (size_t i = 0; i < all.size(); ++i) {
    out[i].leftover = all[i];
    const LeftoverRecord& x = out[i].leftover;
    progress.OnProgress({x.name + " (leftover)", NodePhase::kDeleting, x.zone,
                         "left by " + x.reason});
    Result<CloudProvider*> provider = world.providers.ForRecord(RecordOf(x));
    if (!provider.ok()) {
      finish(i, provider.status());
      continue;
    }
    runs[i].poller = std::make_unique<Poller>(world.clock, options.poll_min, options.poll_max,
                                              options.timeout);
    runs[i].deletion =
        std::make_unique<Deletion>(**provider, x.zone, x.name, x.queued, *runs[i].poller);
    loop.At(loop.Now(), [&step, i](Clock::MonoTime now) { step(i, now); });
  }
  TPUFLEET_TRY(loop.RunUntil([&] { return finished == all.size(); }));
  return out;
}

std::vector<UntrackedNode> FindUntracked(const std::vector<CloudNode>& cloud,
                                         const std::vector<std::string>& fleets,
                                         const std::vector<NodeRecord>& records,
                                         const std::vector<LeftoverRecord>& leftovers) {
  std::vector<UntrackedNode> out;
  for (const CloudNode& n : cloud) {
    auto label = n.labels.find(kFleetLabel);
    if (label == n.labels.end() ||
        std::find(fleets.begin(), fleets.end(), label->second) == fleets.end()) {
      continue;
    }
    bool known = std::any_of(records.begin(), records.end(), [&](const NodeRecord& r) {
                   return r.name == n.id && r.zone == n.zone;
                 }) ||
                 std::any_of(leftovers.begin(), leftovers.end(), [&](const LeftoverRecord& x) {
                   return x.name == n.id && x.zone == n.zone;
                 });
    if (!known) {
      // "projects/P/locations/Z/nodes/N"
      std::vector<std::string> parts = Split(n.cloud_name, '/');
      std::string project = parts.size() > 1 && parts[0] == "projects" ? parts[1] : "";
      UntrackedNode u{label->second, project, n.id, n.zone, n.state, ""};
      for (const NodeRecord& r : records) {
        if (r.name == n.id) {
          u.recorded_zone = r.zone;
        }
      }
      out.push_back(std::move(u));
    }
  }
  return out;
}

std::string UntrackedMessage(const UntrackedNode& n) {
  if (!n.recorded_zone.empty()) {
    // import refuses a second node of a name tpufleet has: only the cloud's tools can
    // delete this one.
    return "untracked: " + n.name + " in " + n.zone + " carries fleet " + n.fleet +
           "'s label but duplicates the " + n.name + " tpufleet tracks in " + n.recorded_zone +
           " (it bills all the same); delete it with `gcloud compute tpus tpu-vm delete " +
           n.name + " --project " + n.project + " --zone " + n.zone + "`";
  }
  return "untracked: " + n.name + " in " + n.zone + " carries fleet " + n.fleet +
         "'s label but tpufleet has no record of it (it bills all the same); `tpufleet "
         "import --fleet " + n.fleet + " --project " + n.project + " --zones " + n.zone + " " +
         n.name +
         "` takes it in, and `tpufleet down " + n.name + "` then deletes it";
}

}  // namespace tpufleet
