#include "control/resolve.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>

#include "control/fleet_status.h"
#include "ssh/runner.h"
#include "ssh/ssh_files.h"
#include "util/strings.h"

namespace tpufleet {
namespace {

// The highest worker index ssh-proxy takes: more than any slice has workers.
constexpr long long kMaxWorkerIndex = 1 << 16;

// A connection refused: something answers at the address, nothing listens on the port.
bool Refused(const Status& s) {
  return s.message().find(std::strerror(ECONNREFUSED)) != std::string::npos;
}

const WorkerRecord* FindWorker(const NodeRecord& r, int worker) {
  for (const WorkerRecord& w : r.workers) {
    if (w.index == worker) {
      return &w;
    }
  }
  return nullptr;
}

// Passes a run's output and results on to `sink` under the caller's host numbers
// (`to_caller[i]` for host i), holding back the results of hosts never reached when
// `hold` is set: they may run again at a new address.
class HoldBackSink final : public FanoutSink {
 public:
  HoldBackSink(FanoutSink& sink, std::vector<size_t> to_caller, bool hold)
      : sink_(sink), to_caller_(std::move(to_caller)), hold_(hold),
        spoke_(to_caller_.size(), false) {}

  void OnOutput(size_t host, OutputStream stream, std::string_view data) override {
    spoke_[host] = true;
    sink_.OnOutput(to_caller_[host], stream, data);
  }
  void OnResult(size_t host, const HostResult& result) override {
    if (hold_ && !spoke_[host] && NeverConnected(result)) {
      held_[host] = result;
      return;
    }
    sink_.OnResult(to_caller_[host], result);
  }
  bool Cancelled() override { return sink_.Cancelled(); }
  bool Backlogged() override { return sink_.Backlogged(); }

  /// Job host -> its held result.
  const std::map<size_t, HostResult>& held() const { return held_; }

 private:
  FanoutSink& sink_;
  const std::vector<size_t> to_caller_;
  const bool hold_;
  std::vector<bool> spoke_;
  std::map<size_t, HostResult> held_;
};

}  // namespace

ResolveSeams RealResolveSeams(World& world) {
  ResolveSeams seams;
  seams.connect = ConnectTcp;
  seams.refresh = [&world](const std::string& node) -> Result<NodeRecord> {
    TPUFLEET_ASSIGN_OR_RETURN(std::vector<NodeRecord> records, RefreshNodes(world, {node}));
    return records.at(0);
  };
  return seams;
}

Status CheckProxyTarget(const std::string& node, const std::string& worker, int* index) {
  TPUFLEET_TRY(CheckSshAlias(node));
  long long n = -1;
  if (!ParseInt(worker, &n) || n < 0 || n > kMaxWorkerIndex) {
    return InvalidArgumentError("worker " + QuoteForMessage(worker) +
                                " is not a worker index (0, 1, 2, …)");
  }
  *index = static_cast<int>(n);
  return Status::Ok();
}

Result<UniqueFd> ConnectToWorker(Store& store, const std::string& node, int worker,
                                 const ResolveSeams& seams, std::vector<std::string>* notes) {
  TPUFLEET_ASSIGN_OR_RETURN(std::vector<NodeRecord> all, store.Nodes(""));
  auto it = std::find_if(all.begin(), all.end(), [&](const NodeRecord& r) { return r.name == node; });
  if (it == all.end()) {
    return NotFoundError("no node named " + node + " in tpufleet's state (see `tpufleet status`)");
  }
  const WorkerRecord* known = FindWorker(*it, worker);
  if (known == nullptr) {
    return NotFoundError("node " + node + " has no worker " + std::to_string(worker));
  }
  const std::string name = node + ":" + std::to_string(worker);
  Status first = UnavailableError(name + " has no address yet");
  if (!known->address.empty()) {
    Result<UniqueFd> fd = seams.connect(known->address, it->port, kKnownAddressTimeout);
    if (fd.ok()) {
      return fd;
    }
    first = fd.status();
    if (Refused(first)) {
      // The machine at that address answered: the worker is there, its sshd is not up
      // yet (booting, as up waits for it). Asking the cloud would change nothing.
      return first;
    }
  }
  // Not there: ask the cloud where it is now (and remember it, for everyone).
  Result<NodeRecord> fresh = seams.refresh(node);
  if (!fresh.ok()) {
    return Status(first.code(), first.message() + "; asking the cloud for " + name +
                                    "'s address failed too: " + fresh.status().message());
  }
  if (fresh->state.IsDown()) {
    return FailedPreconditionError("node " + node + " is " + fresh->state.Name() +
                                   " (the cloud says so now): none of its workers can be "
                                   "reached; `tpufleet up` brings it back");
  }
  const WorkerRecord* now = FindWorker(*fresh, worker);
  if (now == nullptr || now->address.empty()) {
    return Status(first.code(), first.message() + "; the cloud lists no address for " + name +
                                    " (node " + fresh->state.Name() + ")");
  }
  if (notes != nullptr) {
    notes->push_back(now->address == known->address
                         ? name + " did not answer at " + known->address +
                               ", which the cloud still lists; trying again"
                         : name + " moved from " +
                               (known->address.empty() ? "no address" : known->address) +
                               " to " + now->address);
  }
  return seams.connect(now->address, fresh->port, kResolvedAddressTimeout);
}

Status RunResolving(
    World& world, const std::vector<WorkerTarget>& workers, const FanoutJob& job,
    FanoutSink& sink,
    const std::function<Result<std::vector<NodeRecord>>(const std::vector<std::string>&)>&
        refresh) {
  if (workers.size() != job.hosts.size()) {
    return InternalError("RunResolving: the job's hosts are not the workers");
  }
  std::vector<size_t> same(job.hosts.size());
  for (size_t i = 0; i < same.size(); ++i) {
    same[i] = i;
  }
  HoldBackSink first(sink, same, true);
  TPUFLEET_TRY(world.fanout.Run(job, first));
  if (first.held().empty()) {
    return Status::Ok();
  }
  std::map<size_t, HostResult> held = first.held();
  std::vector<std::string> nodes;
  for (const auto& [i, result] : held) {
    nodes.push_back(workers[i].node);
  }
  Result<std::vector<NodeRecord>> records =
      refresh ? refresh(nodes) : RefreshNodes(world, nodes);
  FanoutJob again = job;
  again.hosts.clear();
  std::vector<size_t> to_caller;
  for (auto& [i, result] : held) {
    if (!records.ok()) {
      result.message += " (and asking the cloud for a new address failed: " +
                        records.status().message() + ")";
      continue;
    }
    const WorkerTarget& w = workers[i];
    auto r = std::find_if(records->begin(), records->end(),
                          [&](const NodeRecord& n) { return n.name == w.node; });
    const WorkerRecord* now = r == records->end() ? nullptr : FindWorker(*r, w.worker);
    if (now == nullptr || now->address.empty() || now->address == job.hosts[i].address) {
      continue;  // not moved: its first result stands
    }
    if (job.fail_fast || sink.Cancelled()) {
      result.message += " (its address is now " + now->address + "; run it again)";
      continue;
    }
    FanoutHost h = job.hosts[i];
    h.address = now->address;
    again.hosts.push_back(std::move(h));
    to_caller.push_back(i);
  }
  for (const auto& [i, result] : held) {
    if (std::find(to_caller.begin(), to_caller.end(), i) == to_caller.end()) {
      sink.OnResult(i, result);
    }
  }
  if (again.hosts.empty()) {
    return Status::Ok();
  }
  HoldBackSink second(sink, to_caller, false);
  if (!world.fanout.Run(again, second).ok()) {
    for (size_t i : to_caller) {
      sink.OnResult(i, held[i]);  // the second run could not start: the first results
    }
  }
  return Status::Ok();
}

}  // namespace tpufleet
