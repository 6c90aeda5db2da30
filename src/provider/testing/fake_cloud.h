// FakeCloud: an in-memory Cloud TPU behind CloudProvider, for control's unit tests.
//
// Nodes live per (zone, id) with their state, labels, metadata, workers (addresses
// 198.18.x.y) and host keys. The model is driven by looking, not by time:
//   - an operation finishes after `operation_polls` looks at it (GetOperation, or
//     GetNode of the node it works on, so a create whose answer was lost still ends);
//     with 0 it is done when returned. A create finishes with the node READY; in a
//     stocked-out zone it fails with ResourceExhausted and the node is gone.
//   - a queued resource stays WAITING_FOR_RESOURCES for `queued_wait_polls`
//     GetQueuedResource calls, then turns ACTIVE with its node READY (or FAILED with
//     the set failure).
//   - a node's workers publish host keys after `host_key_delay` GetWorkerIdentities.
// Each node made gets fresh host keys, so a recreated node looks like new VMs.
//
// A create's request id is remembered (for ever, where the API keeps it an hour): a
// create that repeats one in the same zone gets the first request's operation back,
// whatever happened since, as the API does.
//
// Faults: stockouts per zone (optionally leaving the node behind, as Cloud TPU
// sometimes does), a lag before a new node shows in lists, a synchronous error for every create in a zone (quota),
// a one-shot error for the next call of a method, before its effect or after it (the
// effect happens, the answer is lost), and a state change (a preemption) just before
// the next call of a method. Every call is logged, so tests can count
// mutating calls ("the second up made none").
//
// Thread-safety: one mutex guards everything; control calls it from many threads.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/catalog.h"
#include "provider/provider.h"
#include "provider/testing/fake_host_key.h"
#include "util/strings.h"

namespace tpufleet {

/// One call made to a FakeCloud.
struct FakeCloudCall {
  std::string method;  // "CreateNode", "GetNode", …
  std::string zone;    // "" for list calls and GetOperation
  std::string id;      // node or queued resource id; the operation name for GetOperation
  std::string request_id;  // CreateNode: the request id sent
};

class FakeCloud final : public CloudProvider {
 public:
  /// When a one-shot failure strikes: before the call changes anything, or after (the
  /// change is made but the caller sees only the error: a lost answer).
  enum class When { kBeforeEffect, kAfterEffect };

  /// `catalog` gives the worker count of each type; it must outlive the fake.
  FakeCloud(const Catalog& catalog, std::string project)
      : catalog_(catalog), project_(std::move(project)) {}

  std::string_view Name() const override { return "gcp-tpu"; }

  // ---- knobs

  /// Direct creates in `zone` fail (in their operation) for want of capacity.
  void SetStockout(const std::string& zone, bool stocked_out = true) {
    std::lock_guard<std::mutex> l(mu_);
    stockouts_[zone] = stocked_out;
  }
  /// A stocked-out create leaves its node behind (state CREATING, no operation) instead
  /// of nothing, for whoever made it to delete.
  void SetStockoutLeavesNode(bool leaves = true) {
    std::lock_guard<std::mutex> l(mu_);
    stockout_leaves_node_ = leaves;
  }
  /// A node that CreateNode makes from now on is missing from its next `lists` ListNodes
  /// answers (the API lists a new node a little after it accepts the create).
  void SetListLag(int lists) {
    std::lock_guard<std::mutex> l(mu_);
    list_lag_ = lists;
  }
  /// Every create in `zone` returns `error` at once (a quota error); OK clears it.
  void SetCreateError(const std::string& zone, Status error) {
    std::lock_guard<std::mutex> l(mu_);
    create_errors_[zone] = std::move(error);
  }
  /// The next call of `method` ("CreateNode", "GetNode", …) returns `error` once.
  void FailNext(const std::string& method, Status error, When when = When::kBeforeEffect) {
    std::lock_guard<std::mutex> l(mu_);
    fail_next_[method] = {std::move(error), when};
  }
  /// Every call of `method` returns `error`, with no effect, until this is called again
  /// with OK (the API refusing every call: a revoked credential).
  void FailEvery(const std::string& method, Status error) {
    std::lock_guard<std::mutex> l(mu_);
    fail_every_[method] = std::move(error);
  }
  void SetOperationPolls(int polls) {
    std::lock_guard<std::mutex> l(mu_);
    operation_polls_ = polls;
  }
  void SetQueuedWaitPolls(int polls) {
    std::lock_guard<std::mutex> l(mu_);
    queued_wait_polls_ = polls;
  }
  /// Queued resources that finish waiting from now on turn FAILED with `failure`
  /// (OK: they turn ACTIVE).
  void SetQueuedFailure(Status failure) {
    std::lock_guard<std::mutex> l(mu_);
    queued_failure_ = std::move(failure);
  }
  void SetHostKeyDelay(int calls) {
    std::lock_guard<std::mutex> l(mu_);
    host_key_delay_ = calls;
  }

  /// Spot capacity taken back: the node turns PREEMPTED.
  void Preempt(const std::string& zone, const std::string& id) {
    SetState(zone, id, NodeState::kPreempted);
  }
  void SetState(const std::string& zone, const std::string& id, NodeState state) {
    std::lock_guard<std::mutex> l(mu_);
    if (auto it = nodes_.find({zone, id}); it != nodes_.end()) {
      it->second.node.state = state;
    }
  }
  /// The node's createTime as the API gives it (none unless set).
  void SetCreateTime(const std::string& zone, const std::string& id, Clock::WallTime t) {
    std::lock_guard<std::mutex> l(mu_);
    if (auto it = nodes_.find({zone, id}); it != nodes_.end()) {
      it->second.node.create_time = t;
    }
  }
  /// Someone attached or detached disks (gcloud's attach-disk).
  void SetDataDisks(const std::string& zone, const std::string& id, std::vector<NodeDisk> disks) {
    std::lock_guard<std::mutex> l(mu_);
    if (auto it = nodes_.find({zone, id}); it != nodes_.end()) {
      it->second.node.data_disks = std::move(disks);
    }
  }
  /// Just before the next call of `method`, node (zone, id) turns `state`: a
  /// preemption while control waits on the node.
  void SetStateOnNext(const std::string& method, const std::string& zone, const std::string& id,
                      NodeState state) {
    std::lock_guard<std::mutex> l(mu_);
    state_on_next_[method] = {{zone, id}, state};
  }
  /// Maintenance, or a stop and start: the node's workers come back at new addresses.
  void MoveWorkers(const std::string& zone, const std::string& id) {
    std::lock_guard<std::mutex> l(mu_);
    if (auto it = nodes_.find({zone, id}); it != nodes_.end()) {
      for (CloudWorker& w : it->second.node.workers) {
        int n = next_address_++;
        w.address = "198.18." + std::to_string(n / 250) + "." + std::to_string(n % 250 + 1);
      }
    }
  }
  /// The node disappears (deleted by someone else).
  void Vanish(const std::string& zone, const std::string& id) {
    std::lock_guard<std::mutex> l(mu_);
    nodes_.erase({zone, id});
  }
  /// A node made outside tpufleet (gcloud, the console): READY, host keys published.
  CloudNode AddNode(const CreateNodeRequest& request) {
    std::lock_guard<std::mutex> l(mu_);
    NodeEntry& e = MakeNode(request, NodeState::kReady, "");
    e.identity_calls = host_key_delay_;
    return e.node;
  }

  // ---- inspection

  std::optional<CloudNode> Node(const std::string& zone, const std::string& id) const {
    std::lock_guard<std::mutex> l(mu_);
    auto it = nodes_.find({zone, id});
    return it == nodes_.end() ? std::nullopt : std::optional<CloudNode>(it->second.node);
  }
  std::vector<CloudNode> AllNodes() const {
    std::lock_guard<std::mutex> l(mu_);
    std::vector<CloudNode> out;
    for (const auto& [key, e] : nodes_) {
      out.push_back(e.node);
    }
    return out;
  }
  std::optional<CloudQueuedResource> Queued(const std::string& zone, const std::string& id) const {
    std::lock_guard<std::mutex> l(mu_);
    auto it = queued_.find({zone, id});
    return it == queued_.end() ? std::nullopt
                               : std::optional<CloudQueuedResource>(it->second.qr);
  }
  std::vector<FakeCloudCall> Calls() const {
    std::lock_guard<std::mutex> l(mu_);
    return calls_;
  }
  int CallCount(const std::string& method) const {
    std::lock_guard<std::mutex> l(mu_);
    int n = 0;
    for (const FakeCloudCall& c : calls_) {
      n += c.method == method ? 1 : 0;
    }
    return n;
  }
  int creates() const { return CallCount("CreateNode"); }
  int deletes() const { return CallCount("DeleteNode") + CallCount("DeleteQueuedResource"); }
  int ssh_key_sets() const { return CallCount("SetSshKeys"); }
  int stops() const { return CallCount("StopNode"); }
  int starts() const { return CallCount("StartNode"); }
  int mutating_calls() const {
    return creates() + deletes() + ssh_key_sets() + stops() + starts();
  }
  void ClearCalls() {
    std::lock_guard<std::mutex> l(mu_);
    calls_.clear();
  }

  // ---- CloudProvider (fake_cloud_calls.h)

  Result<CloudOperation> CreateNode(const CreateNodeRequest& r) override;

  Result<CloudOperation> DeleteNode(std::string_view zone, std::string_view node_id) override;

  // READY → STOPPING, STOPPED when its operation ends; a pod or another state refuses.
  Result<CloudOperation> StopNode(std::string_view zone, std::string_view node_id) override;
  // STOPPED → STARTING, READY when its operation ends; another state refuses.
  Result<CloudOperation> StartNode(std::string_view zone, std::string_view node_id) override;

  Result<CloudOperation> DeleteQueuedResource(std::string_view zone, std::string_view qr_id,
                                              bool force) override;

  Result<CloudOperation> SetSshKeys(std::string_view zone, std::string_view node_id,
                                    std::string_view ssh_keys) override;

  Result<CloudOperation> GetOperation(std::string_view name) override;

  Result<CloudNode> GetNode(std::string_view zone, std::string_view node_id) override;

  Result<CloudQueuedResource> GetQueuedResource(std::string_view zone,
                                                std::string_view qr_id) override;

  Result<std::vector<CloudNode>> ListNodes(const std::vector<std::string>& zones) override;

  Result<std::vector<CloudQueuedResource>> ListQueuedResources(
      const std::vector<std::string>& zones) override;

  Result<std::vector<WorkerIdentity>> GetWorkerIdentities(std::string_view zone,
                                                          std::string_view node_id) override;

 private:
  enum class OpKind { kNone, kCreate, kDelete, kStop, kStart, kDeleteQueued };

  struct Op {
    std::string name;
    OpKind kind = OpKind::kNone;
    std::string zone, id;
    int polls_left = 0;
    Status outcome;  // what the operation ends with
    bool done = false;
  };
  struct NodeEntry {
    CloudNode node;
    std::string op;  // the pending operation working on it, if any
    std::vector<std::string> host_keys;
    std::string hostname_prefix;  // "t1v-n-1a2b3c4d-w-"
    int identity_calls = 0;
    int hidden_lists = 0;  // ListNodes answers still to leave it out of
  };
  struct QueuedEntry {
    CloudQueuedResource qr;
    CreateNodeRequest request;
    int polls = 0;
  };
  using Key = std::pair<std::string, std::string>;  // zone, id

  // Logs the call, then runs `body` under the lock unless a one-shot failure applies.
  template <typename F>
  auto Call(const std::string& method, const std::string& zone, const std::string& id, F&& body,
            const std::string& request_id = "") -> decltype(body()) {
    std::lock_guard<std::mutex> l(mu_);
    calls_.push_back({method, zone, id, request_id});
    if (auto change = state_on_next_.find(method); change != state_on_next_.end()) {
      if (auto node = nodes_.find(change->second.first); node != nodes_.end()) {
        node->second.node.state = change->second.second;
      }
      state_on_next_.erase(change);
    }
    if (auto every = fail_every_.find(method); every != fail_every_.end() && !every->second.ok()) {
      return every->second;
    }
    auto it = fail_next_.find(method);
    if (it == fail_next_.end()) {
      return body();
    }
    auto [error, when] = it->second;
    fail_next_.erase(it);
    if (when == When::kAfterEffect) {
      (void)body();
    }
    return error;
  }

  std::string ZonePath(const std::string& zone) const {
    return "projects/" + project_ + "/locations/" + zone;
  }
  Status NotFound(const std::string& what, const std::string& zone) const {
    return NotFoundError("Resource '" + ZonePath(zone) + "/" + what + "' was not found");
  }

  // REQUIRES: mu_ held.
  NodeEntry& MakeNode(const CreateNodeRequest& r, NodeState state,
                      const std::string& queued_resource) {
    Result<AcceleratorType> type = catalog_.Lookup(r.type);
    int workers = type.ok() ? type->workers : 1;
    uint64_t generation = ++generation_;
    NodeEntry& e = nodes_[{r.zone, r.node_id}];
    e = NodeEntry{};
    e.node.id = r.node_id;
    e.node.zone = r.zone;
    e.node.cloud_name = ZonePath(r.zone) + "/nodes/" + r.node_id;
    e.node.type = r.type;
    e.node.runtime_version = r.runtime_version;
    e.node.state = state;
    e.node.capacity = r.capacity;
    e.node.queued_resource = queued_resource;
    e.node.labels = r.labels;
    e.node.metadata = r.metadata;
    for (const DataDiskSpec& d : r.data_disks) {
      e.node.data_disks.push_back({d.source, std::string(DiskModeName(d.mode))});
    }
    char hex[9];
    snprintf(hex, sizeof hex, "%08x", static_cast<unsigned>(Fnv1a64(e.node.cloud_name) ^ generation));
    e.hostname_prefix = "t1v-n-" + std::string(hex) + "-w-";
    for (int i = 0; i < workers; ++i) {
      int n = next_address_++;
      e.node.workers.push_back(
          {i, "198.18." + std::to_string(n / 250) + "." + std::to_string(n % 250 + 1), ""});
      e.host_keys.push_back(FakeHostKey(generation * 1000 + static_cast<uint64_t>(i)));
    }
    return e;
  }

  // A stop or start of node `node_id`: refused by `check`, else the node goes to its
  // passing state (STOPPING, STARTING) until the operation of `kind` ends.
  Result<CloudOperation> Transition(const char* method, std::string_view zone,
                                    std::string_view node_id, OpKind kind,
                                    const std::function<Status(const NodeEntry&)>& check) {
    std::string z(zone), id(node_id);
    return Call(method, z, id, [&]() -> Result<CloudOperation> {
      auto it = nodes_.find({z, id});
      if (it == nodes_.end()) {
        return NotFound("nodes/" + id, z);
      }
      NodeEntry& e = it->second;
      TPUFLEET_TRY(check(e));
      e.node.state = kind == OpKind::kStop ? NodeState::kStopping : NodeState::kStarting;
      CloudOperation op = NewOperation(kind, z, id, Status::Ok());
      e.op = op.done ? "" : op.name;
      return op;
    });
  }

  // REQUIRES: mu_ held.
  CloudOperation NewOperation(OpKind kind, const std::string& zone, const std::string& id,
                              Status outcome) {
    std::string name = ZonePath(zone) + "/operations/operation-" + std::to_string(++op_seq_);
    Op& op = ops_[name];
    op = Op{name, kind, zone, id, operation_polls_, std::move(outcome), false};
    if (op.polls_left <= 0) {
      return Finish(op);
    }
    return {name, false, Status::Ok()};
  }

  // One look at an operation. REQUIRES: mu_ held.
  CloudOperation Poll(Op& op) {
    if (!op.done && --op.polls_left <= 0) {
      return Finish(op);
    }
    return {op.name, op.done, op.done ? op.outcome : Status::Ok()};
  }

  // Applies a finished operation's effect. REQUIRES: mu_ held.
  CloudOperation Finish(Op& op) {
    op.done = true;
    Key key{op.zone, op.id};
    auto node = nodes_.find(key);
    switch (op.kind) {
      case OpKind::kCreate:
        if (node != nodes_.end() && !op.outcome.ok() && stockout_leaves_node_) {
          node->second.op.clear();  // left behind, CREATING for ever
        } else if (node != nodes_.end() && !op.outcome.ok()) {
          nodes_.erase(node);  // a stockout leaves nothing behind
        } else if (node != nodes_.end() && node->second.node.state == NodeState::kCreating) {
          node->second.node.state = NodeState::kReady;
          node->second.op.clear();
        }
        break;
      case OpKind::kDelete:
        if (node != nodes_.end()) {
          nodes_.erase(node);
        }
        break;
      case OpKind::kStop:
        if (node != nodes_.end() && node->second.node.state == NodeState::kStopping) {
          node->second.node.state = NodeState::kStopped;
          node->second.op.clear();
        }
        break;
      case OpKind::kStart:
        if (node != nodes_.end() && node->second.node.state == NodeState::kStarting) {
          node->second.node.state = NodeState::kReady;
          node->second.op.clear();
        }
        break;
      case OpKind::kDeleteQueued:
        if (auto q = queued_.find(key); q != queued_.end()) {
          for (const std::string& n : q->second.qr.node_ids) {
            nodes_.erase({op.zone, n});
          }
          queued_.erase(q);
        }
        break;
      case OpKind::kNone:
        break;
    }
    return {op.name, true, op.outcome};
  }

  const Catalog& catalog_;
  const std::string project_;

  mutable std::mutex mu_;
  std::map<Key, NodeEntry> nodes_;                  // guarded by mu_
  std::map<Key, QueuedEntry> queued_;               // guarded by mu_
  std::map<std::string, Op> ops_;                   // guarded by mu_, by name
  std::map<std::string, std::string> requests_;     // guarded by mu_; "zone|request id" -> op
  bool stockout_leaves_node_ = false;               // guarded by mu_
  int list_lag_ = 0;                                // guarded by mu_
  std::vector<FakeCloudCall> calls_;                // guarded by mu_
  std::map<std::string, bool> stockouts_;           // guarded by mu_
  std::map<std::string, Status> create_errors_;     // guarded by mu_
  std::map<std::string, std::pair<Status, When>> fail_next_;  // guarded by mu_
  std::map<std::string, Status> fail_every_;        // guarded by mu_
  std::map<std::string, std::pair<Key, NodeState>> state_on_next_;  // guarded by mu_
  Status queued_failure_;                           // guarded by mu_
  int operation_polls_ = 1;                         // guarded by mu_
  int queued_wait_polls_ = 0;                       // guarded by mu_
  int host_key_delay_ = 0;                          // guarded by mu_
  int next_address_ = 1;                            // guarded by mu_
  uint64_t generation_ = 0;                         // guarded by mu_
  uint64_t op_seq_ = 0;                             // guarded by mu_
};

}  // namespace tpufleet

// The CloudProvider calls, defined out of the class.
#include "provider/testing/fake_cloud_calls.h"  // IWYU pragma: export
