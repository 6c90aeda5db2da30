#include "control/up.h"

#include <algorithm>
#include <mutex>
#include <optional>
#include <random>
#include <semaphore>
#include <set>
#include <thread>

#include "control/host_keys.h"
#include "control/ssh_sync.h"
#include "control/up_internal.h"
#include "control/wait.h"
#include "core/zone_choice.h"
#include "ssh/fleet_key.h"
#include "ssh/ssh_files.h"
#include "util/strings.h"

namespace tpufleet {
namespace {

using up_internal::RecentStockouts;

constexpr int kPreemptedRetries = 3;

// A fresh UUID (version 4) for a create's request id.
std::string NewRequestId() {
  static std::mutex mu;
  static std::mt19937_64 rng{std::random_device{}()};
  uint64_t a, b;
  {
    std::lock_guard<std::mutex> l(mu);
    a = rng();
    b = rng();
  }
  a = (a & ~0xf000ULL) | 0x4000ULL;                     // version 4
  b = (b & ~(3ULL << 62)) | (2ULL << 62);               // variant 10
  char buf[37];
  snprintf(buf, sizeof buf, "%08x-%04x-%04x-%04x-%012llx", static_cast<unsigned>(a >> 32),
           static_cast<unsigned>((a >> 16) & 0xffff), static_cast<unsigned>(a & 0xffff),
           static_cast<unsigned>(b >> 48), static_cast<unsigned long long>(b & 0xffffffffffffULL));
  return buf;
}

// Works one node id from its plan to ready. One thread per node.
class NodeUp {
 public:
  NodeUp(World& world, const FleetSpec& fleet, const NodePlan& plan, CloudProvider& provider,
         const UpOptions& options, ProgressObserver& progress, const FleetKey* key,
         std::mutex& ssh_files_mu)
      : world_(world), fleet_(fleet), spec_(*plan.spec), plan_(plan), provider_(provider),
        options_(options), progress_(progress), key_(key), ssh_files_mu_(ssh_files_mu),
        poller_(world.clock, options.poll_min, options.poll_max, options.timeout) {}

  NodeOutcome Run() {
    NodeOutcome out{plan_.node, Status::Ok(), false};
    out.status = Bring();
    // Preempted on the way up: make it again, a few times at most (capacity that is
    // taken away at once is unlikely to stay on the next try).
    for (int retry = 0; retry < kPreemptedRetries && (preempted_ || vanished_); ++retry) {
      action_ = preempted_ ? PlanAction::kRecreate : PlanAction::kCreate;
      preempted_ = vanished_ = false;
      out.status = Bring();
    }
    out.changed = changed_;
    if (out.status.ok()) {
      Report(NodePhase::kReady, plan_.zones.empty() ? "" : zone_, ReadyDetail());
    } else {
      Report(NodePhase::kFailed, zone_, out.status.message());
    }
    return out;
  }

 private:
  bool IsSshHosts() const { return fleet_.provider == Provider::kSshHosts; }

  Status Bring() {
    TPUFLEET_TRY(LoadRecord());
    switch (action_) {
      case PlanAction::kForeign:
        return AlreadyExistsError(plan_.detail);
      case PlanAction::kDiffers:
        return FailedPreconditionError(plan_.detail);
      case PlanAction::kRecreate:
        TPUFLEET_TRY(Remove());
        TPUFLEET_TRY(Create());
        break;
      case PlanAction::kCreate:
        TPUFLEET_TRY(Create());
        break;
      case PlanAction::kKeep:
      case PlanAction::kWait:
        zone_ = plan_.zones.empty() ? "" : plan_.zones.front();
        TPUFLEET_TRY(Adopt());
        if (action_ == PlanAction::kWait && spec_.queued) {
          // A queued resource still waiting: its failure is news only it can tell.
          Status queued = WaitQueued(zone_);
          if (!queued.ok() && queued.code() != StatusCode::kNotFound) {
            return queued;
          }
        }
        break;
    }
    TPUFLEET_TRY(WaitReady());
    TPUFLEET_TRY(SyncSsh());
    // Every worker the same VM that accepted us and ran setup before: nothing to wait
    // for, and a second `up` of a large fleet stays a few API reads.
    // A worker that ran another version of the setup script runs the spec's again.
    bool all_done = !rec_.workers.empty() &&
                    std::none_of(rec_.workers.begin(), rec_.workers.end(),
                                 [&](const WorkerRecord& w) { return NeedsSetup(w, spec_.setup); });
    if (all_done && !changed_) {
      return Status::Ok();
    }
    TPUFLEET_TRY(WaitForSsh());
    return RunSetup();
  }

  std::string ReadyDetail() const {
    return std::to_string(rec_.workers.size()) +
           (rec_.workers.size() == 1 ? " worker" : " workers");
  }

  void Report(NodePhase phase, const std::string& zone, std::string detail = "") {
    progress_.OnProgress({plan_.node, phase, zone, std::move(detail)});
  }

  Status Event(const std::string& kind, const std::string& detail) {
    return world_.store.AddEvent({0, world_.clock.Now(), fleet_.name, plan_.node, kind, detail});
  }

  Status Save() {
    rec_.updated_at = world_.clock.Now();
    return world_.store.PutNode(rec_);
  }

  Status LoadRecord() {
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

  void FillFromSpec() {
    rec_.provider = std::string(ProviderName(fleet_.provider));
    rec_.project = fleet_.project;
    rec_.type = spec_.type;
    rec_.runtime_version = spec_.runtime_version;
    rec_.capacity = IsSshHosts() ? "" : std::string(CapacityName(spec_.capacity));
    rec_.spec_hash = SpecDigest(spec_);
    rec_.login = IsSshHosts() ? spec_.ssh_user : world_.login;
    rec_.port = spec_.port;
    rec_.labels = spec_.labels;
  }

  // A node that exists already (and is ours): make sure the store knows it.
  Status Adopt() {
    if (rec_.zone != zone_ || rec_.state == NodeState::kNone) {
      rec_.zone = zone_;
      rec_.state = plan_.state;
      TPUFLEET_TRY(Save());
    }
    return Status::Ok();
  }

  // Deletes a preempted node (or dead queued resource) before making it again.
  Status Remove() {
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
      TPUFLEET_TRY(WaitOperation(provider_, *op, poller_));
    } else if (op.status().code() != StatusCode::kNotFound) {
      return op.status();
    }
    changed_ = true;
    rec_.state = NodeState::kDeleted;  // nothing in flight here: a create elsewhere supersedes nothing
    return Status::Ok();
  }

  Status Create() {
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
    Status last;
    for (const std::string& zone : zones) {
      zone_ = zone;
      last = CreateIn(zone);
      if (last.code() != StatusCode::kResourceExhausted) {
        return last;
      }
      TPUFLEET_TRY(Event("stockout", "type=" + spec_.type + " zone=" + zone));
      Report(NodePhase::kStockout, zone, last.message());
    }
    rec_.state = NodeState::kStockout;
    TPUFLEET_TRY(Save());
    return ResourceExhaustedError("no capacity for " + spec_.type + " in any of its zones (" +
                                  Join(zones, ", ") + "); the last said: " + last.message() +
                                  ". Run up again later, add zones, or set `queued:`");
  }

  CreateNodeRequest Request(const std::string& zone) const {
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

  std::string DesiredSshKeys() const {
    return SshKeysMetadata(world_.login, key_ ? key_->public_key : "", UsersOn(fleet_, spec_));
  }

  Status CreateIn(const std::string& zone) {
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
      rec_.request_id = NewRequestId();
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
        return op.status();  // the answer may be lost: the record lets the next up look
      }
      return AdoptAfterConflict(zone, op.status());
    }
    changed_ = true;
    Status done = WaitOperation(provider_, *op, poller_);
    if (!done.ok()) {
      if (done.code() == StatusCode::kResourceExhausted && !spec_.queued) {
        TPUFLEET_TRY(DeleteLeftover(zone));
      }
      return done;
    }
    return spec_.queued ? WaitQueued(zone) : Status::Ok();
  }

  // The id was taken: by our own earlier request (a retry after a lost answer, or a
  // killed up), or by someone else.
  Status AdoptAfterConflict(const std::string& zone, const Status& conflict) {
    Result<CloudNode> node = provider_.GetNode(zone, plan_.node);
    if (node.ok()) {
      auto label = node->labels.find(kFleetLabel);
      if (label == node->labels.end() || label->second != fleet_.name) {
        return conflict;
      }
      return Status::Ok();
    }
    if (spec_.queued) {
      return WaitQueued(zone);  // our queued resource, its node not made yet
    }
    return conflict;
  }

  LeftoverRecord LeftoverIn(const std::string& zone, bool queued,
                            const std::string& reason) const {
    return {fleet_.name, plan_.node, zone,          queued, rec_.provider, rec_.project,
            rec_.type,   rec_.capacity, reason, "", rec_.created_at};
  }

  // A failed create may leave a node behind (Cloud TPU sometimes does); it would hold
  // the id and quota, so delete it, or remember it for the next up or down to delete
  // before the record moves on to another zone. An error only when it cannot even be
  // remembered: then the record stays here, and the next up looks here first.
  Status DeleteLeftover(const std::string& zone) {
    Status deleted = DeleteAndWait(provider_, zone, plan_.node, false, poller_);
    if (!deleted.ok()) {
      LeftoverRecord x = LeftoverIn(zone, false, "stockout");
      x.last_error = deleted.message();
      TPUFLEET_TRY(world_.store.Transaction([&] { return RememberLeftover(world_, x); }));
      Report(NodePhase::kStockout, zone,
             "it left a node behind that could not be deleted (" + deleted.message() +
                 "); the next up or down deletes it");
    }
    rec_.state = NodeState::kStockout;  // this zone's create is over: nothing in flight here
    return Status::Ok();
  }

  Status WaitQueued(const std::string& zone) {
    NodeState last_state;
    while (true) {
      TPUFLEET_ASSIGN_OR_RETURN(CloudQueuedResource qr,
                                provider_.GetQueuedResource(zone, plan_.node));
      if (qr.state == NodeState::kActive) {
        return Status::Ok();
      }
      if (qr.state == NodeState::kFailed) {
        return qr.failure.ok() ? FailedPreconditionError("queued resource " + qr.cloud_name +
                                                         " failed")
                               : qr.failure;
      }
      if (qr.state != last_state) {
        last_state = qr.state;
        Report(NodePhase::kQueued, zone, qr.state.Name());
        if (rec_.state != NodeState::kQueued) {
          rec_.state = NodeState::kQueued;
          TPUFLEET_TRY(Save());
        }
      }
      if (!poller_.Pause()) {
        return TimeoutError("queued resource " + plan_.node + " still " + qr.state.Name() +
                            " after the timeout; it keeps waiting in the cloud, and the next "
                            "`up` picks it up");
      }
    }
  }

  Status WaitReady() {
    Report(NodePhase::kBooting, zone_);
    CloudNode node;
    NodeState last_state;
    while (true) {
      Result<CloudNode> got = provider_.GetNode(zone_, plan_.node);
      if (got.ok()) {
        node = std::move(*got);
        if (node.state.IsUsable()) {
          break;
        }
        if (node.state.IsGone()) {
          preempted_ = true;
          gone_state_ = node.state;
        }
        if (node.state.IsHalted()) {
          return FailedPreconditionError("node " + plan_.node + " is " + node.state.Name() +
                                         (node.health.empty() ? "" : " (" + node.health + ")"));
        }
        if (node.state != last_state) {
          last_state = node.state;
          Report(NodePhase::kBooting, zone_, node.state.Name());
        }
      } else if (got.status().code() != StatusCode::kNotFound) {
        return got.status();
      } else if (action_ == PlanAction::kWait || last_state != NodeState::kNone) {
        // It was there and is gone: a create that failed (one a killed `up` started, say)
        // or a delete by someone else. Make it anew rather than wait for nothing.
        vanished_ = true;
        rec_.state = NodeState::kNotFound;  // its create is over: the next one supersedes nothing
        return UnavailableError("node " + plan_.node + " vanished while coming up");
      }
      if (!poller_.Pause()) {
        return TimeoutError("node " + plan_.node + " not READY in time (last state " +
                            (last_state == NodeState::kNone ? "not found" : last_state.Name()) +
                            ")");
      }
    }
    TPUFLEET_ASSIGN_OR_RETURN(std::vector<WorkerIdentity> ids, WaitIdentities(node));
    bool was_ready = rec_.state.IsUsable();
    rec_.state = node.state;
    rec_.health = node.health;
    rec_.cloud_name = node.cloud_name;
    if (!node.queued_resource.empty()) {
      rec_.queued_resource = node.queued_resource;
    }
    rec_.workers = MergeWorkers(node, ids);
    if (!IsSshHosts()) {
      rec_.login = world_.login;  // as UpdateSshKeys puts it in ssh-keys (sudo: SUDO_USER)
    }
    TPUFLEET_TRY(world_.store.Transaction([&]() -> Status {
      TPUFLEET_TRY(Save());
      return was_ready ? Status::Ok() : Event("ready", "zone=" + zone_);
    }));
    return UpdateSshKeys(node);
  }

  Result<std::vector<WorkerIdentity>> WaitIdentities(const CloudNode& node) {
    while (true) {
      TPUFLEET_ASSIGN_OR_RETURN(std::vector<WorkerIdentity> ids,
                                provider_.GetWorkerIdentities(zone_, plan_.node));
      size_t with_keys = std::count_if(ids.begin(), ids.end(), [](const WorkerIdentity& w) {
        return !w.host_key.empty();
      });
      if (with_keys == node.workers.size() && ids.size() == node.workers.size()) {
        return ids;
      }
      if (IsSshHosts()) {
        std::vector<std::string> confirmed;
        TPUFLEET_TRY(PinSshHostsKeys(node, plan_.node, spec_.port, rec_.workers,
                                     options_.confirm_host_key, ids, &confirmed));
        for (const std::string& c : confirmed) {
          TPUFLEET_TRY(Event("host-key-pinned", c));
        }
        return ids;
      }
      Report(NodePhase::kBooting, zone_,
             "host keys " + std::to_string(with_keys) + "/" + std::to_string(node.workers.size()));
      if (!poller_.Pause()) {
        return TimeoutError("node " + plan_.node + " did not publish its workers' host keys");
      }
    }
  }

  // A worker keeps its setup flag (and the version of setup it ran) only while it is the
  // same VM (same host key).
  std::vector<WorkerRecord> MergeWorkers(const CloudNode& node,
                                         const std::vector<WorkerIdentity>& ids) const {
    std::vector<WorkerRecord> out;
    for (size_t i = 0; i < node.workers.size(); ++i) {
      WorkerRecord w;
      w.index = static_cast<int>(i);
      w.address = node.workers[i].external_address.empty() ? node.workers[i].address
                                                           : node.workers[i].external_address;
      w.hostname = ids[i].hostname;
      w.host_key = ids[i].host_key;
      for (const WorkerRecord& old : rec_.workers) {
        if (old.index == w.index && old.host_key == w.host_key) {
          w.setup_done = old.setup_done;
          w.setup_digest = old.setup_digest;
        }
      }
      out.push_back(std::move(w));
    }
    return out;
  }

  Status UpdateSshKeys(const CloudNode& node) {
    if (IsSshHosts()) {
      return Status::Ok();
    }
    std::string want = DesiredSshKeys();
    auto have = node.metadata.find(kSshKeysMetadataKey);
    if (have != node.metadata.end() && have->second == want) {
      return Status::Ok();
    }
    changed_ = true;
    TPUFLEET_ASSIGN_OR_RETURN(CloudOperation op,
                              provider_.SetSshKeys(zone_, plan_.node, want));
    return WaitOperation(provider_, op, poller_);
  }

  Status SyncSsh() {
    std::lock_guard<std::mutex> l(ssh_files_mu_);
    return SyncSshFiles(world_);
  }

  // Each worker in parallel, at most one thread per worker.
  template <typename F>
  Status ForEachWorker(F&& f) {
    std::vector<Status> results(rec_.workers.size());
    std::vector<std::thread> threads;
    for (size_t i = 0; i < rec_.workers.size(); ++i) {
      threads.emplace_back([&, i] { results[i] = f(rec_.workers[i]); });
    }
    for (std::thread& t : threads) {
      t.join();
    }
    for (const Status& s : results) {
      TPUFLEET_TRY(s);
    }
    return Status::Ok();
  }

  // Keys reach a new VM's accounts a little after READY (the guest agent): retry login.
  Status WaitForSsh() {
    Report(NodePhase::kConnecting, zone_, ReadyDetail());
    return ForEachWorker([&](const WorkerRecord& w) -> Status {
      Poller poller(world_.clock, options_.poll_min, options_.poll_max,
                    std::min(options_.timeout, options_.login_timeout));
      Status last;
      do {
        Result<RunResult> r = world_.ssh.Run(WorkerAlias(plan_.node, w.index), LoginScript(),
                                             std::chrono::seconds(30));
        if (r.ok() && r->exit_code == 0) {
          return Status::Ok();
        }
        if (r.status().code() == StatusCode::kFailedPrecondition) {
          // The host key failed verification: no wait mends that.
          return r.status().WithContext(
              "worker " + std::to_string(w.index) + " of " + plan_.node + ": its host key is " +
              "not the one pinned (expected " + SshKeyLineFingerprint(w.host_key) + ")");
        }
        last = r.ok() ? UnavailableError("exit " + std::to_string(r->exit_code) + ": " +
                                         std::string(Trim(r->output)))
                      : r.status();
        // Say why we are still waiting: a refused key or a host key mismatch is the
        // user's to fix, and they should not have to wait out the timeout to learn it.
        Report(NodePhase::kConnecting, zone_,
               "worker " + std::to_string(w.index) + ": " +
                   last.message().substr(0, last.message().find('\n')));
        // A spot node can be preempted while we wait for it; then waiting is pointless.
        if (Result<CloudNode> n = provider_.GetNode(zone_, plan_.node);
            n.ok() && n->state.IsGone()) {
          std::lock_guard<std::mutex> l(gone_mu_);  // workers' threads race here
          preempted_ = true;
          gone_state_ = n->state;
          return FailedPreconditionError("node " + plan_.node + " was " + n->state.Name() +
                                         " while coming up");
        }
      } while (poller.Pause());
      return last.WithContext("worker " + std::to_string(w.index) + " of " + plan_.node +
                              " does not accept SSH");
    });
  }

  // ssh-hosts logins get the fleet key in their authorized_keys (host_keys.h).
  std::string LoginScript() const {
    return IsSshHosts() && key_ ? AuthorizeFleetKeyScript(key_->public_key) : "true";
  }

  Status RunSetup() {
    if (spec_.setup.empty()) {
      // Nothing to run: the login that WaitForSsh made is all a worker needs.
      for (WorkerRecord& w : rec_.workers) {
        w.setup_done = true;
        w.setup_digest = SetupDigest(spec_.setup);
      }
      return Save();
    }
    // Workers that never ran it, and those that ran another version (the spec's setup
    // was edited since): the spec's runs there now.
    size_t pending = std::count_if(rec_.workers.begin(), rec_.workers.end(),
                                   [&](const WorkerRecord& w) { return NeedsSetup(w, spec_.setup); });
    if (pending == 0) {
      return Status::Ok();
    }
    changed_ = true;
    Report(NodePhase::kSetup, zone_, std::to_string(pending) + " workers");
    std::mutex mu;
    return ForEachWorker([&](const WorkerRecord& w) -> Status {
      if (!NeedsSetup(w, spec_.setup)) {
        return Status::Ok();
      }
      // The script reaches bash on stdin; its own commands read /dev/null instead, so
      // one that reads stdin cannot swallow the rest of the script.
      TPUFLEET_ASSIGN_OR_RETURN(
          RunResult r, world_.ssh.Run(WorkerAlias(plan_.node, w.index),
                                      "{\n" + spec_.setup + "\n} </dev/null\n",
                                      options_.setup_timeout));
      if (r.exit_code != 0) {
        return FailedPreconditionError("setup failed on worker " + std::to_string(w.index) +
                                       " of " + plan_.node + " (exit " +
                                       std::to_string(r.exit_code) + "):\n" + LastLines(r.output));
      }
      std::lock_guard<std::mutex> l(mu);
      for (WorkerRecord& mine : rec_.workers) {
        if (mine.index == w.index) {
          mine.setup_done = true;
          mine.setup_digest = SetupDigest(spec_.setup);
        }
      }
      return world_.store.Transaction([&]() -> Status {
        TPUFLEET_TRY(Save());
        return Event("setup-done", "worker=" + std::to_string(w.index));
      });
    });
  }

  static std::string LastLines(const std::string& output) {
    std::vector<std::string> lines = Split(std::string(Trim(output)), '\n');
    size_t from = lines.size() > 10 ? lines.size() - 10 : 0;
    std::string out;
    for (size_t i = from; i < lines.size(); ++i) {
      out += "  " + lines[i] + (i + 1 < lines.size() ? "\n" : "");
    }
    return out;
  }

  World& world_;
  const FleetSpec& fleet_;
  const NodeSpec& spec_;
  const NodePlan& plan_;
  CloudProvider& provider_;
  const UpOptions& options_;
  ProgressObserver& progress_;
  const FleetKey* key_;
  std::mutex& ssh_files_mu_;
  Poller poller_;
  PlanAction action_ = plan_.action;
  bool preempted_ = false;  // the node was preempted while Bring waited for it
  bool vanished_ = false;   // the node disappeared while Bring waited for it
  NodeState gone_state_;    // its state then: PREEMPTED or TERMINATED
  std::mutex gone_mu_;      // guards the two above while workers are waited for
  NodeRecord rec_;
  std::string zone_;
  bool changed_ = false;
  bool resume_ = plan_.resume;  // the first create may reuse the recorded request id
};

}  // namespace

std::string SshKeysMetadata(const std::string& login, const std::string& fleet_public_key,
                            const std::vector<UserSpec>& users) {
  std::vector<std::string> lines;
  if (!fleet_public_key.empty()) {
    lines.push_back(login + ":" + fleet_public_key);
  }
  for (const UserSpec& u : users) {
    for (const std::string& k : u.keys) {
      lines.push_back(u.name + ":" + k);
    }
  }
  return Join(lines, "\n");
}

Result<UpReport> Up(const FleetSpec& fleet, const Catalog& catalog, World& world,
                    const UpOptions& options, ProgressObserver& progress) {
  TPUFLEET_ASSIGN_OR_RETURN(CloudProvider * provider, world.providers.ForFleet(fleet));
  // ssh-hosts nodes too: up adds it to their logins' authorized_keys (LoginScript).
  TPUFLEET_ASSIGN_OR_RETURN(FleetKey fleet_key, EnsureFleetKey(world.paths.ssh_dir));
  std::optional<FleetKey> key = std::move(fleet_key);
  UpReport report;
  DeleteOptions deleting;
  deleting.poll_min = options.poll_min;
  deleting.poll_max = options.poll_max;
  TPUFLEET_ASSIGN_OR_RETURN(report.leftovers,
                            FinishLeftovers(world, fleet.name, deleting, progress));
  TPUFLEET_ASSIGN_OR_RETURN(UpPlan plan, PlanUp(fleet, catalog, world));
  const std::vector<NodePlan>& plans = plan.nodes;
  report.untracked = std::move(plan.untracked);
  report.nodes.resize(plans.size());
  std::mutex ssh_files_mu;
  std::counting_semaphore<> slots(std::max(1, options.max_parallel_nodes));
  std::vector<std::thread> threads;
  for (size_t i = 0; i < plans.size(); ++i) {
    threads.emplace_back([&, i] {
      slots.acquire();
      NodeUp job(world, fleet, plans[i], *provider, options, progress, key ? &*key : nullptr,
                 ssh_files_mu);
      report.nodes[i] = job.Run();
      slots.release();
    });
  }
  for (std::thread& t : threads) {
    t.join();
  }

  TPUFLEET_ASSIGN_OR_RETURN(std::vector<NodeRecord> records, world.store.Nodes(fleet.name));
  for (const NodeRecord& r : records) {
    bool in_spec = std::any_of(plans.begin(), plans.end(),
                               [&](const NodePlan& p) { return p.node == r.name; });
    if (!in_spec) {
      report.not_in_spec.push_back(r.name);
    }
  }
  TPUFLEET_ASSIGN_OR_RETURN(report.leftovers_left, world.store.Leftovers(fleet.name));
  return report;
}

}  // namespace tpufleet
