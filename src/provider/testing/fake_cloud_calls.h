// What FakeCloud (fake_cloud.h) answers to each CloudProvider call: the model's
// transitions, its faults and its call log, over the state fake_cloud.h declares. Only
// fake_cloud.h includes this file, at its end.
#pragma once

namespace tpufleet {

inline Result<CloudOperation> FakeCloud::CreateNode(const CreateNodeRequest& r) {
  return Call("CreateNode", r.zone, r.node_id, [&]() -> Result<CloudOperation> {
    std::string request_key = r.zone + "|" + r.request_id;
    if (auto seen = requests_.find(request_key);
        !r.request_id.empty() && seen != requests_.end()) {
      Op& first = ops_.at(seen->second);
      return CloudOperation{first.name, first.done, first.done ? first.outcome : Status::Ok()};
    }
    if (auto it = create_errors_.find(r.zone); it != create_errors_.end() && !it->second.ok()) {
      return it->second;
    }
    if (!catalog_.Lookup(r.type).ok()) {
      return InvalidArgumentError("unknown accelerator type " + r.type);
    }
    auto qr = queued_.find({r.zone, r.node_id});
    if (r.queued && qr != queued_.end() && qr->second.request.request_id == r.request_id &&
        !r.request_id.empty()) {
      return NewOperation(OpKind::kNone, r.zone, r.node_id, Status::Ok());  // same request
    }
    if (nodes_.count({r.zone, r.node_id}) != 0 || qr != queued_.end()) {
      std::string what = r.queued ? "queuedResources/" : "nodes/";
      return AlreadyExistsError("Resource '" + ZonePath(r.zone) + "/" + what + r.node_id +
                                "' already exists");
    }
    if (r.queued) {
      QueuedEntry& q = queued_[{r.zone, r.node_id}];
      q.request = r;
      q.qr = {r.node_id, r.zone, ZonePath(r.zone) + "/queuedResources/" + r.node_id,
              NodeState::kWaitingForResources, Status::Ok(), {r.node_id}};
      CloudOperation op = NewOperation(OpKind::kNone, r.zone, r.node_id, Status::Ok());
      requests_[request_key] = op.name;
      return op;
    }
    Status outcome = Status::Ok();
    if (auto it = stockouts_.find(r.zone); it != stockouts_.end() && it->second) {
      outcome = ResourceExhaustedError("There is no more capacity in the zone \"" + r.zone +
                                       "\"; you can try in another zone where Cloud TPU "
                                       "Nodes are offered");
    }
    NodeEntry& e = MakeNode(r, NodeState::kCreating, "");
    e.hidden_lists = list_lag_;
    CloudOperation op = NewOperation(OpKind::kCreate, r.zone, r.node_id, outcome);
    if (!op.done) {
      nodes_.at({r.zone, r.node_id}).op = op.name;
    }
    requests_[request_key] = op.name;
    return op;
  }, r.request_id);
}

inline Result<CloudOperation> FakeCloud::DeleteNode(std::string_view zone, std::string_view node_id) {
  std::string z(zone), id(node_id);
  return Call("DeleteNode", z, id, [&]() -> Result<CloudOperation> {
    auto it = nodes_.find({z, id});
    if (it == nodes_.end()) {
      return NotFound("nodes/" + id, z);
    }
    it->second.node.state = NodeState::kDeleting;
    CloudOperation op = NewOperation(OpKind::kDelete, z, id, Status::Ok());
    if (!op.done) {
      it->second.op = op.name;
    }
    return op;
  });
}

inline Result<CloudOperation> FakeCloud::StopNode(std::string_view zone, std::string_view node_id) {
  return Transition("StopNode", zone, node_id, OpKind::kStop, [](const NodeEntry& e) {
    return e.node.workers.size() == 1 && e.node.state == NodeState::kReady
               ? Status::Ok()
               : InvalidArgumentError("stop is only available for single TPU nodes that are READY");
  });
}

inline Result<CloudOperation> FakeCloud::StartNode(std::string_view zone, std::string_view node_id) {
  return Transition("StartNode", zone, node_id, OpKind::kStart, [&](const NodeEntry& e) {
    return e.node.state == NodeState::kStopped
               ? Status::Ok()
               : FailedPreconditionError("node " + std::string(node_id) + " is " +
                                         e.node.state.Name() + ", not STOPPED");
  });
}

inline Result<CloudOperation> FakeCloud::DeleteQueuedResource(std::string_view zone, std::string_view qr_id,
                                            bool force) {
  std::string z(zone), id(qr_id);
  return Call("DeleteQueuedResource", z, id, [&]() -> Result<CloudOperation> {
    auto it = queued_.find({z, id});
    if (it == queued_.end()) {
      return NotFound("queuedResources/" + id, z);
    }
    for (const std::string& n : it->second.qr.node_ids) {
      if (auto node = nodes_.find({z, n}); node != nodes_.end()) {
        if (!force) {
          return FailedPreconditionError("queued resource " + id + " still has node " + n +
                                         "; delete it first or use force");
        }
        node->second.node.state = NodeState::kDeleting;
      }
    }
    it->second.qr.state = NodeState::kDeleting;
    return NewOperation(OpKind::kDeleteQueued, z, id, Status::Ok());
  });
}

inline Result<CloudOperation> FakeCloud::SetSshKeys(std::string_view zone, std::string_view node_id,
                                  std::string_view ssh_keys) {
  std::string z(zone), id(node_id);
  return Call("SetSshKeys", z, id, [&]() -> Result<CloudOperation> {
    auto it = nodes_.find({z, id});
    if (it == nodes_.end()) {
      return NotFound("nodes/" + id, z);
    }
    it->second.node.metadata["ssh-keys"] = std::string(ssh_keys);
    return NewOperation(OpKind::kNone, z, id, Status::Ok());
  });
}

inline Result<CloudOperation> FakeCloud::GetOperation(std::string_view name) {
  std::string n(name);
  return Call("GetOperation", "", n, [&]() -> Result<CloudOperation> {
    auto it = ops_.find(n);
    if (it == ops_.end()) {
      return NotFoundError("Operation '" + n + "' was not found");
    }
    return Poll(it->second);
  });
}

inline Result<CloudNode> FakeCloud::GetNode(std::string_view zone, std::string_view node_id) {
  std::string z(zone), id(node_id);
  return Call("GetNode", z, id, [&]() -> Result<CloudNode> {
    if (auto it = nodes_.find({z, id}); it != nodes_.end() && !it->second.op.empty()) {
      if (auto op = ops_.find(it->second.op); op != ops_.end()) {
        (void)Poll(op->second);  // may finish the operation, and so erase the node
      }
    }
    auto it = nodes_.find({z, id});
    if (it == nodes_.end()) {
      return NotFound("nodes/" + id, z);
    }
    return it->second.node;
  });
}

inline Result<CloudQueuedResource> FakeCloud::GetQueuedResource(std::string_view zone,
                                              std::string_view qr_id) {
  std::string z(zone), id(qr_id);
  return Call("GetQueuedResource", z, id, [&]() -> Result<CloudQueuedResource> {
    auto it = queued_.find({z, id});
    if (it == queued_.end()) {
      return NotFound("queuedResources/" + id, z);
    }
    QueuedEntry& q = it->second;
    if (q.qr.state == NodeState::kWaitingForResources && ++q.polls > queued_wait_polls_) {
      if (!queued_failure_.ok()) {
        q.qr.state = NodeState::kFailed;
        q.qr.failure = queued_failure_;
      } else {
        q.qr.state = NodeState::kActive;
        MakeNode(q.request, NodeState::kReady, q.qr.cloud_name);
      }
    }
    return q.qr;
  });
}

inline Result<std::vector<CloudNode>> FakeCloud::ListNodes(const std::vector<std::string>& zones) {
  return Call("ListNodes", "", Join(zones, ","), [&]() -> Result<std::vector<CloudNode>> {
    std::vector<CloudNode> out;
    for (const std::string& z : zones) {
      for (auto& [key, e] : nodes_) {
        if (key.first == z && e.hidden_lists > 0) {
          --e.hidden_lists;
        } else if (key.first == z) {
          out.push_back(e.node);
        }
      }
    }
    return out;
  });
}

inline Result<std::vector<CloudQueuedResource>> FakeCloud::ListQueuedResources(
    const std::vector<std::string>& zones) {
  return Call("ListQueuedResources", "", Join(zones, ","),
              [&]() -> Result<std::vector<CloudQueuedResource>> {
                std::vector<CloudQueuedResource> out;
                for (const std::string& z : zones) {
                  for (const auto& [key, q] : queued_) {
                    if (key.first == z) {
                      out.push_back(q.qr);
                    }
                  }
                }
                return out;
              });
}

inline Result<std::vector<WorkerIdentity>> FakeCloud::GetWorkerIdentities(std::string_view zone,
                                                        std::string_view node_id) {
  std::string z(zone), id(node_id);
  return Call("GetWorkerIdentities", z, id, [&]() -> Result<std::vector<WorkerIdentity>> {
    auto it = nodes_.find({z, id});
    if (it == nodes_.end()) {
      return NotFound("nodes/" + id, z);
    }
    NodeEntry& e = it->second;
    bool published = ++e.identity_calls > host_key_delay_;
    std::vector<WorkerIdentity> out;
    for (size_t i = 0; i < e.node.workers.size(); ++i) {
      out.push_back({static_cast<int>(i), published ? e.host_keys[i] : "",
                     e.hostname_prefix + std::to_string(i), ""});
    }
    return out;
  });
}

}  // namespace tpufleet
