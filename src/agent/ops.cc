// Server's ops (server.h, docs/agent-protocol.md).
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <set>

#include "agent/host/accounts.h"
#include "agent/host/doctor_checks.h"
#include "agent/host/metadata_guard.h"
#include "agent/host/mounts.h"
#include "agent/host/plain_http.h"
#include "agent/host/tpu_scan.h"
#include "agent/host/user_db.h"
#include "agent/job_dir.h"
#include "agent/server.h"
#include "tpu_metrics/runtime_metrics_client.h"
#include "util/file.h"
#include "util/strings.h"

namespace tpufleet::agent {
namespace {

int64_t NowMs(const Clock& clock) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(clock.Now().time_since_epoch())
      .count();
}

bool IsRoot(uid_t uid) { return uid == 0; }

}  // namespace

void KeepOwnJobs(MetricsReport& report, const std::set<std::string>& own,
                 const std::string& user) {
  std::erase_if(report.sample.jobs, [&](const JobSample& j) { return own.count(j.id) == 0; });
  for (ChipSample& chip : report.sample.chips) {
    for (ChipHolder& h : chip.holders) {
      bool mine = h.job.empty() ? h.user == user : own.count(h.job) != 0;
      if (!mine) {
        h.command.clear();
        h.job.clear();
      }
    }
  }
  WindowSummary& w = report.window;
  if (!w.job.empty() && own.count(w.job) == 0) {
    w.job.clear();
    w.job_cpu_percent.reset();
    w.job_cpu_limit_percent.reset();
    w.job_busiest_thread_percent.reset();
  }
}

void Server::Handle(Conn& c, std::string_view line) {
  Result<api::AgentRequest> parsed = api::ParseAgentRequest(line);
  if (!parsed.ok()) {
    Finish(c, api::EndLine(parsed.status()));
    return;
  }
  const api::AgentRequest& r = *parsed;
  auto answer = [&](const api::AgentAnswer& a) { Finish(c, api::AnswerLine(a)); };
  switch (r.op) {
    case api::AgentOp::kHello:
      answer(Hello(c));
      return;
    case api::AgentOp::kJobStart:
      StartJob(c, r);
      return;
    case api::AgentOp::kJobList: {
      // A job of another user is not listed to a non-root caller: on a worker shared by
      // collaborators no one learns of another's jobs (names, command lines) from here.
      std::vector<api::JobOnWorker> jobs;
      for (const JobEntry* job : jobs_.All()) {
        if (!IsRoot(c.uid) && job->uid != c.uid) {
          continue;
        }
        if (r.ids.empty() || std::find(r.ids.begin(), r.ids.end(), job->spec.id) != r.ids.end()) {
          jobs.push_back(job->state);
        }
      }
      answer({Status::Ok(), std::move(jobs)});
      return;
    }
    case api::AgentOp::kJobCancel:
      CancelJob(c, r);
      return;
    case api::AgentOp::kJobLogs:
      StartLogs(c, r);
      return;
    case api::AgentOp::kJobWatch:
      StartWatch(c, r);
      return;
    case api::AgentOp::kDevices:
      answer(Devices());
      return;
    case api::AgentOp::kMetrics:
      answer(Metrics(c, r.metrics));
      return;
    case api::AgentOp::kDoctor:
      // One doctor request serves a node's workers alike: `call --worker N` says which
      // worker this is when the request does not.
      answer(Doctor(r.expect, r.expect.worker >= 0 ? r.expect.worker : r.worker.value_or(-1)));
      return;
    case api::AgentOp::kAccountsApply:
      if (!IsRoot(c.uid)) {
        answer({PermissionDeniedError("accounts.apply is for root (sudo -n tpufleet-agent call)"), {}});
        return;
      }
      answer(ApplyAccounts(r.users, r.remove));
      return;
    case api::AgentOp::kDisksMount:
      if (!IsRoot(c.uid)) {
        answer({PermissionDeniedError("disks.mount is for root (sudo -n tpufleet-agent call)"), {}});
        return;
      }
      answer(MountDisks(r.mounts));
      return;
    case api::AgentOp::kNotice:
      answer({Status::Ok(), notices_.Current()});
      return;
    case api::AgentOp::kNoticeWatch:
      // Kept until the client goes away: OnNotice sends each change.
      c.request = r;
      Queue(c, api::NoticeLine(notices_.Current()));
      return;
  }
}

api::AgentAnswer Server::Hello(const Conn& c) {
  api::AgentHello h;
  h.agent_version = identity_.version;
  h.binary_sha256 = identity_.binary_sha256;
  h.protocol.assign(std::begin(api::kAgentProtocolVersions), std::end(api::kAgentProtocolVersions));
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  h.hostname = host;
  Result<std::string> boot_id = ReadFile("/proc/sys/kernel/random/boot_id", 64);
  h.boot_id = boot_id.ok() ? std::string(Trim(*boot_id)) : "";
  h.time_unix_ms = NowMs(loop_.clock());
  h.uid = static_cast<int>(c.uid);
  return {Status::Ok(), h};
}

api::AgentAnswer Server::Devices() {
  host::TpuFacts facts = host::ScanTpu(host_);
  host::LiveJobPids live = jobs_.LivePids();
  api::DevicesReport report;
  for (const host::Accelerator& a : facts.accelerators) {
    report.devices.push_back({a.index, a.path, a.pci_address, a.family});
  }
  report.lockfile.present = facts.lockfile.present;
  if (!facts.lockfile.lockers.empty()) {
    report.lockfile.locked_by_pid = facts.lockfile.lockers.front().pid;
  }
  auto job_of = [&](pid_t pid) {
    auto it = live.find(pid);
    return it == live.end() ? std::string() : it->second;
  };
  for (const host::DeviceHolder& h : facts.holders) {
    report.holders.push_back(
        {h.device, h.process.pid, h.process.user, h.process.command, job_of(h.process.pid)});
  }
  for (const host::ProcessInfo& p : facts.lockfile.lockers) {
    report.holders.push_back({host_.lockfile, p.pid, p.user, p.command, job_of(p.pid)});
  }
  return {Status::Ok(), std::move(report)};
}

api::AgentAnswer Server::Metrics(const Conn& c, const api::MetricsQuery& query) {
  if (sampler_ == nullptr) {
    return {UnavailableError("this agent does not sample (serve without a sampler)"), {}};
  }
  MetricsReport report = sampler_->Report(query);
  if (!IsRoot(c.uid)) {
    std::set<std::string> own;
    for (const JobEntry* job : jobs_.All()) {
      if (job->uid == c.uid) {
        own.insert(job->spec.id);
      }
    }
    KeepOwnJobs(report, own, host::UserName(host::ReadPasswd(host_.etc), c.uid));
  }
  return {Status::Ok(), std::move(report)};
}

void Server::TellSampler() {
  if (sampler_ == nullptr) {
    return;
  }
  std::vector<sampler::JobRef> running;
  for (const JobEntry* job : jobs_.All()) {
    if (job->keeper > 0 && !IsEnded(job->state.state) && job->state.state != JobState::kWaiting) {
      auto ports = job->spec.env.find("TPU_RUNTIME_METRICS_PORTS");
      running.push_back({job->spec.id, job->state.user, job->keeper, job->state.pid,
                         tpu_metrics::MetricsPorts(ports == job->spec.env.end() ? "" : ports->second)});
    }
  }
  sampler_->SetJobs(std::move(running));
}

api::AgentAnswer Server::Doctor(const api::DoctorExpect& expect, int worker) {
  host::DoctorExpect e;
  e.accelerator_type = expect.accelerator_type;
  e.chips_per_host = expect.chips_per_host;
  e.worker = worker;
  e.endpoints = expect.endpoints;
  host::PlainHttpClient http;
  host::HostDoctorReport report =
      host::RunHostDoctor(host_, e, jobs_.LivePids(), http,
                          host::MetadataBaseUrl(std::getenv("GCE_METADATA_IP")), loop_.clock());
  api::DoctorReport out;
  for (host::DoctorCheck& check : report.checks) {
    out.checks.push_back({std::move(check.name), check.ok, std::move(check.detail),
                          std::move(check.fix)});
  }
  // Only where there is something to guard, or the guard failed.
  if (guard_ != nullptr && (guard_->state().active || !guard_->state().error.empty())) {
    const host::GuardState& g = guard_->state();
    bool ok = g.error.empty();
    out.checks.push_back({"metadata guard", ok, ok ? g.detail : g.error,
                          ok ? "" : "fix what the detail says, then run tpufleet up again"});
  }
  out.time_unix_ms = report.time_unix_ms;
  return {Status::Ok(), std::move(out)};
}

api::AgentAnswer Server::ApplyAccounts(const std::vector<api::AccountSpec>& users,
                                       const std::vector<api::AccountRemoval>& remove) {
  std::vector<host::AccountSpec> specs;
  for (const api::AccountSpec& u : users) {
    specs.push_back({u.name, u.keys, u.sudo});
  }
  std::vector<host::AccountRemoval> removals;
  for (const api::AccountRemoval& x : remove) {
    removals.push_back({x.name, x.purge});
  }
  host::AccountTools tools;
  // Its jobs through the table, so that they end recorded as cancelled (their keepers
  // are root's and see the cancel); the host then stops whatever is left.
  tools.stop_jobs = [this](const std::string& name) {
    std::string failed;
    for (const JobEntry* job : jobs_.All()) {
      if (job->state.user == name && !IsEnded(job->state.state)) {
        if (Status s = jobs_.Cancel(job->spec.id, kRemovedJobGraceSeconds); !s.ok()) {
          failed += (failed.empty() ? "" : "; ") + s.message();
        }
      }
    }
    return failed;
  };
  std::vector<host::AccountResult> done = host::ApplyAccounts(host_, specs, removals, tools);
  api::AccountsReport report;
  // The accounts without sudo, as the apply left them, lose the metadata server's token.
  if (guard_ != nullptr) {
    const host::GuardState& g = guard_->Apply(
        host::GuardedAccounts(specs, done, host::ReadPasswd(host_.etc), geteuid()));
    report.metadata_guard = {g.active, g.users, g.error, g.detail};
  }
  for (host::AccountResult& r : done) {
    report.results.push_back({std::move(r.name), std::move(r.action), std::move(r.error),
                              std::move(r.detail)});
  }
  return {Status::Ok(), std::move(report)};
}

api::AgentAnswer Server::MountDisks(const std::vector<api::MountSpec>& mounts) {
  std::vector<host::MountSpec> specs;
  for (const api::MountSpec& m : mounts) {
    specs.push_back({m.disk, m.path, m.read_only});
  }
  std::vector<api::MountResult> results;
  for (host::MountResult& r : host::ApplyMounts(host_, specs)) {
    results.push_back({std::move(r.disk), std::move(r.path), std::move(r.action),
                       std::move(r.error)});
  }
  return {Status::Ok(), std::move(results)};
}

Result<const JobEntry*> Server::OwnJob(const Conn& c, const std::string& id) {
  const JobEntry* job = jobs_.Find(id);
  if (job == nullptr) {
    return NotFoundError("no job " + id + " on this worker");
  }
  if (!IsRoot(c.uid) && job->uid != c.uid) {
    return PermissionDeniedError("job " + id + " is " + job->spec.user +
                                 "'s: only they and root may see its logs or cancel it");
  }
  return job;
}

std::vector<api::JobOnWorker> Server::States(const std::vector<std::string>& ids) {
  std::vector<api::JobOnWorker> states;
  for (const std::string& id : ids) {
    if (const JobEntry* job = jobs_.Find(id); job != nullptr) {
      states.push_back(job->state);
    }
  }
  return states;
}

void Server::StartJob(Conn& c, const api::AgentRequest& r) {
  Result<api::JobOnWorker> started = jobs_.Start(r.job, c.uid, r.dry_run);
  if (!started.ok() || r.dry_run || started->state != JobState::kStarting) {
    Finish(c, api::AnswerLine({started.status(), started.ok() ? *started : api::JobOnWorker{}}));
    return;
  }
  // Answer once the keeper has started the command (or could not), or after a while.
  const JobEntry* job = jobs_.Find(r.job.id);
  if (job != nullptr && job->state.state != JobState::kStarting) {
    Finish(c, api::AnswerLine({Status::Ok(), job->state}));
    return;
  }
  AnswerLater(c, r, r.job.id, kStartAnswerWait);
}

void Server::AnswerLater(Conn& c, const api::AgentRequest& r, const std::string& id,
                         std::chrono::nanoseconds at_most) {
  c.request = r;
  uint64_t key = c.key;
  c.timer = loop_.After(at_most, [this, key, id](Clock::MonoTime) {
    auto it = conns_.find(key);
    const JobEntry* now = jobs_.Find(id);
    if (it != conns_.end() && now != nullptr) {
      it->second->timer = 0;
      Finish(*it->second, api::AnswerLine({Status::Ok(), now->state}));
    }
  });
}

void Server::CancelJob(Conn& c, const api::AgentRequest& r) {
  Result<const JobEntry*> job = OwnJob(c, r.id);
  Status cancelled = job.ok() ? jobs_.Cancel(r.id, r.grace_seconds) : job.status();
  if (!cancelled.ok() || IsEnded((*job)->state.state)) {
    Finish(c, api::AnswerLine({cancelled, cancelled.ok() ? (*job)->state : api::JobOnWorker{}}));
    return;
  }
  AnswerLater(c, r, r.id, std::chrono::seconds(r.grace_seconds) + kCancelAnswerExtra);
}

void Server::StartLogs(Conn& c, const api::AgentRequest& r) {
  Result<const JobEntry*> job = OwnJob(c, r.id);
  if (!job.ok()) {
    Finish(c, api::EndLine(job.status()));
    return;
  }
  c.request = r;
  c.stdout_log = LogReader::Open((*job)->dir + "/" + kStdoutLog, r.tail);
  c.stderr_log = LogReader::Open((*job)->dir + "/" + kStderrLog, r.tail);
  if (r.follow) {
    c.followed = r.id;
    jobs_.Follow(r.id, true);
    Queue(c, api::StateLine((*job)->state));
  }
  PumpLogs(c);
}

void Server::PumpLogs(Conn& c) {
  if (!c.request.has_value()) {
    return;
  }
  const JobEntry* job = jobs_.Find(c.request->id);
  // The end is decided before the last read: output written before the end was
  // recorded is then surely read below.
  bool ended = job == nullptr || IsEnded(job->state.state);
  while (c.out.size() < kMaxQueuedOutput) {
    std::string data = c.stdout_log->Read();
    std::string stream = "stdout";
    if (data.empty()) {
      data = c.stderr_log->Read();
      stream = "stderr";
    }
    if (data.empty()) {
      if (!c.request->follow || ended) {
        Finish(c, api::EndLine(Status::Ok()));
      }
      return;
    }
    Queue(c, api::DataLine({stream, std::move(data)}));
  }
}

void Server::StartWatch(Conn& c, const api::AgentRequest& r) {
  for (const std::string& id : r.ids) {
    Result<const JobEntry*> job = OwnJob(c, id);
    if (!job.ok()) {
      Finish(c, api::EndLine(job.status()));
      return;
    }
  }
  bool all_ended = true;
  for (const api::JobOnWorker& s : States(r.ids)) {
    Queue(c, api::StateLine(s));
    all_ended = all_ended && IsEnded(s.state);
  }
  if (all_ended) {
    Finish(c, api::EndLine(Status::Ok()));
    return;
  }
  c.request = r;
}

}  // namespace tpufleet::agent
