// FakeFanout: a Fanout for unit tests that reaches no host. It records every job and
// answers each host through `respond` (default: no output, exit 0), in host order.
//
// Thread-safety: one test thread.
#pragma once

#include <functional>
#include <vector>

#include "ssh/fanout.h"

namespace tpufleet {

class FakeFanout final : public Fanout {
 public:
  Status Run(const FanoutJob& job, FanoutSink& sink) override {
    jobs.push_back(job);
    for (size_t i = 0; i < job.hosts.size(); ++i) {
      HostResult result;
      if (respond) {
        result = respond(job.hosts[i], i, sink);
      }
      sink.OnResult(i, result);
    }
    return Status::Ok();
  }

  /// Called for host `index` of a job: may write output to the sink; returns its result.
  std::function<HostResult(const FanoutHost& host, size_t index, FanoutSink& sink)> respond;
  std::vector<FanoutJob> jobs;
};

}  // namespace tpufleet
