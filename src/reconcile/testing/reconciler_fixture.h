// ReconcilerTest: the Reconciler against control's fakes, for reconcile's tests: a
// FakeCloud, the FakeFanout's workers (up's steps through FakeWorkers, and here the
// agents' notice.watch, metrics and wall), an in-memory store, fake time.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "control/testing/fake_agents.h"
#include "control/testing/fake_state_lock.h"
#include "control/testing/test_world.h"
#include "control/testing/up_specs.h"
#include "reconcile/reconciler.h"

namespace tpufleet::testing {

class ReconcilerTest : public ::testing::Test {
 protected:
  ReconcilerTest() {
    w.world.state_lock = &lock;
    workers_respond_ = w.fanout.respond;
    agents.emplace(w.fanout);  // answers the job ops; the workers' fake the rest
    agents_respond_ = w.fanout.respond;
    w.fanout.respond = [this](const FanoutHost& h, size_t i, FanoutSink& sink) {
      return Respond(h, i, sink);
    };
  }

  std::unique_ptr<Reconciler> Make(const FleetSpec& spec, ReconcilerOptions o = {}) {
    auto r = std::make_unique<Reconciler>(
        w.world, w.catalog, loop, std::move(o),
        [this](const std::string&, const std::string& node, const std::string& m) {
          log.push_back(node + ": " + m);
        });
    r->SetFleets({spec});
    return r;
  }
  // Runs the loop until no action is in flight.
  void Settle(Reconciler& r) {
    ASSERT_TRUE(loop.RunUntil([&] { return !r.busy(); }).ok());
  }
  // `up` of `spec`, then a serve of it that has made its first pass and settled.
  std::unique_ptr<Reconciler> UpAndServe(const FleetSpec& spec) {
    w.Up(spec);
    std::unique_ptr<Reconciler> r = Make(spec);
    r->Pass();
    Settle(*r);
    return r;
  }
  // The workers' notice streams open again (kNoticeRetry after the fake's ended) and
  // are heard; a notice that changed brings a pass at once.
  void Hear(Reconciler& r) {
    w.clock.Advance(kNoticeRetry);
    for (int i = 0; i < 4 && !r.busy(); ++i) {
      loop.RunOnce(std::chrono::milliseconds(0));
    }
  }
  std::vector<std::string> Kinds(const std::string& node) {
    EventQuery q;
    q.node = node;
    std::vector<EventRecord> events = w.store->Events(q).value();
    std::vector<std::string> out;
    for (const EventRecord& e : events) {
      out.push_back(e.kind);
    }
    return out;
  }
  bool Logged(const std::string& part) {
    for (const std::string& l : log) {
      if (Contains(l, part)) {
        return true;
      }
    }
    return false;
  }
  // A restartable job (`run --restart on-preemption`) of the trainer, as the store keeps
  // it, and on its four workers in `state`.
  JobRecord PutJob(JobState state) {
    api::JobSpec js;
    js.id = "jabcdefg";
    js.name = "train";
    js.command = "python3 train.py";
    js.accelerator = true;
    JobRecord job;
    job.fleet = "lab";
    job.node = "trainer";
    job.id = js.id;
    job.name = js.name;
    job.spec_json = api::ToJson(js);
    job.restart = "on-preemption";
    job.state = "active";
    job.created_at = job.updated_at = w.clock.Now();
    EXPECT_TRUE(w.store->PutJob(job).ok());
    PutOnWorkers(job.id, state);
    return job;
  }
  void PutOnWorkers(const std::string& id, JobState state) {
    for (int i = 0; i < 4; ++i) {
      api::JobOnWorker j;
      j.id = id;
      j.name = "train";
      j.worker = i;
      j.state = state;
      agents->Put("trainer/w" + std::to_string(i), j);
    }
  }
  // The real (not dry-run) job starts so far, and the restart count each asked for.
  std::vector<int> Starts() {
    std::vector<int> out;
    for (const FakeAgents::Call& c : agents->CallsOf(api::AgentOp::kJobStart)) {
      if (!c.request.dry_run) {
        out.push_back(c.request.job.restarts);
      }
    }
    return out;
  }
  int64_t NowMs() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               w.clock.Now().time_since_epoch())
        .count();
  }

  TestWorld w;
  FakeStateLock lock;
  EventLoop loop{w.clock};
  std::vector<std::string> log;
  std::map<std::string, api::AgentNotice> notices;    // by worker name ("trainer/w0")
  std::map<std::string, MetricsReport> metrics;       // by worker name
  std::vector<std::string> walls;                     // workers wall ran on
  std::optional<FakeAgents> agents;                   // the workers' jobs
  std::set<std::string> cut_off;  // workers no connection reaches (a cut network)

 private:
  HostResult Respond(const FanoutHost& host, size_t index, FanoutSink& sink) {
    const FanoutJob& job = w.fanout.jobs[w.fanout.answering];
    if (cut_off.count(host.name) > 0) {
      HostResult r;
      r.outcome = HostOutcome::kUnreachable;
      r.message = "connect to " + host.address + " port 22: No route to host";
      return r;
    }
    if (job.command == "wall") {
      walls.push_back(host.name);
      return {};
    }
    Result<api::AgentRequest> q =
        api::ParseAgentRequest(Trim(job.stdin_header.substr(0, job.stdin_header.find('\n'))));
    if (q.ok() && q->op == api::AgentOp::kNoticeWatch) {
      sink.OnOutput(index, OutputStream::kStdout, api::NoticeLine(notices[host.name]) + "\n");
      return {};  // the fake's stream ends here; the last notice stands
    }
    if (q.ok() && q->op == api::AgentOp::kMetrics) {
      auto m = metrics.find(host.name);
      api::AgentAnswer a;
      if (m == metrics.end()) {
        a.status = UnavailableError("no metrics");
      } else {
        a.body = m->second;
      }
      sink.OnOutput(index, OutputStream::kStdout, api::AnswerLine(a) + "\n");
      return {};
    }
    if (q.ok() && (q->op == api::AgentOp::kJobStart || q->op == api::AgentOp::kJobList ||
                   q->op == api::AgentOp::kJobCancel)) {
      return agents_respond_(host, index, sink);
    }
    return workers_respond_(host, index, sink);
  }

  std::function<HostResult(const FanoutHost&, size_t, FanoutSink&)> workers_respond_;
  std::function<HostResult(const FanoutHost&, size_t, FanoutSink&)> agents_respond_;
};

}  // namespace tpufleet::testing
