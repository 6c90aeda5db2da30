#include "reconcile/api_pacer.h"

#include <algorithm>

namespace tpufleet {

ApiPacer::ApiPacer(Clock& clock, int calls_per_minute)
    : clock_(clock),
      per_second_(calls_per_minute / 60.0),
      burst_(std::max(1.0, per_second_ * static_cast<double>(kApiBurst.count()))),
      tokens_(burst_),
      refilled_(clock.MonotonicNow()) {}

void ApiPacer::Refill() {
  Clock::MonoTime now = clock_.MonotonicNow();
  double seconds = std::chrono::duration<double>(now - refilled_).count();
  refilled_ = now;
  tokens_ = std::min(burst_, tokens_ + seconds * per_second_);
}

void ApiPacer::Spend(int calls) {
  std::lock_guard<std::mutex> l(mu_);
  Refill();
  tokens_ -= calls;
  calls_ += calls;
}

bool ApiPacer::MayCall() {
  std::lock_guard<std::mutex> l(mu_);
  Refill();
  return tokens_ >= 1;
}

int64_t ApiPacer::calls() const {
  std::lock_guard<std::mutex> l(mu_);
  return calls_;
}

double ApiPacer::tokens() const {
  std::lock_guard<std::mutex> l(mu_);
  return tokens_;
}

// Forwards every call, counting it first. A list counts one call per zone (the zones
// are asked concurrently, a page each for a fleet's handful of nodes).
class CountingProviders::Counting final : public CloudProvider {
 public:
  Counting(CloudProvider& inner, ApiPacer& pacer) : inner_(inner), pacer_(pacer) {}

  std::string_view Name() const override { return inner_.Name(); }
  Result<CloudOperation> CreateNode(const CreateNodeRequest& request) override {
    pacer_.Spend();
    return inner_.CreateNode(request);
  }
  Result<CloudOperation> DeleteNode(std::string_view zone, std::string_view node_id) override {
    pacer_.Spend();
    return inner_.DeleteNode(zone, node_id);
  }
  Result<CloudOperation> StopNode(std::string_view zone, std::string_view node_id) override {
    pacer_.Spend();
    return inner_.StopNode(zone, node_id);
  }
  Result<CloudOperation> StartNode(std::string_view zone, std::string_view node_id) override {
    pacer_.Spend();
    return inner_.StartNode(zone, node_id);
  }
  Result<CloudOperation> DeleteQueuedResource(std::string_view zone, std::string_view id,
                                              bool force) override {
    pacer_.Spend();
    return inner_.DeleteQueuedResource(zone, id, force);
  }
  Result<CloudOperation> SetSshKeys(std::string_view zone, std::string_view node_id,
                                    std::string_view ssh_keys) override {
    pacer_.Spend();
    return inner_.SetSshKeys(zone, node_id, ssh_keys);
  }
  Result<CloudOperation> GetOperation(std::string_view name) override {
    pacer_.Spend();
    return inner_.GetOperation(name);
  }
  Result<CloudNode> GetNode(std::string_view zone, std::string_view node_id) override {
    pacer_.Spend();
    return inner_.GetNode(zone, node_id);
  }
  Result<CloudQueuedResource> GetQueuedResource(std::string_view zone,
                                                std::string_view id) override {
    pacer_.Spend();
    return inner_.GetQueuedResource(zone, id);
  }
  Result<std::vector<CloudNode>> ListNodes(const std::vector<std::string>& zones) override {
    pacer_.Spend(static_cast<int>(zones.size()));
    return inner_.ListNodes(zones);
  }
  Result<std::vector<CloudQueuedResource>> ListQueuedResources(
      const std::vector<std::string>& zones) override {
    pacer_.Spend(static_cast<int>(zones.size()));
    return inner_.ListQueuedResources(zones);
  }
  Result<std::vector<WorkerIdentity>> GetWorkerIdentities(std::string_view zone,
                                                          std::string_view node_id) override {
    pacer_.Spend();
    return inner_.GetWorkerIdentities(zone, node_id);
  }

 private:
  CloudProvider& inner_;
  ApiPacer& pacer_;
};

CountingProviders::CountingProviders(ProviderSource& inner, ApiPacer& pacer)
    : inner_(inner), pacer_(pacer) {}

CountingProviders::~CountingProviders() = default;

CloudProvider* CountingProviders::Wrap(CloudProvider* inner) {
  std::lock_guard<std::mutex> l(mu_);
  std::unique_ptr<Counting>& w = wrapped_[inner];
  if (!w) {
    w = std::make_unique<Counting>(*inner, pacer_);
  }
  return w.get();
}

Result<CloudProvider*> CountingProviders::ForFleet(const FleetSpec& fleet) {
  TPUFLEET_ASSIGN_OR_RETURN(CloudProvider * p, inner_.ForFleet(fleet));
  return Wrap(p);
}

Result<CloudProvider*> CountingProviders::ForRecord(const NodeRecord& record) {
  TPUFLEET_ASSIGN_OR_RETURN(CloudProvider * p, inner_.ForRecord(record));
  return Wrap(p);
}

}  // namespace tpufleet
