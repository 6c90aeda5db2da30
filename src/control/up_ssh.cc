// NodeSteps' SSH steps (login check, setup) and UpSteps, which batches them over nodes
// into fan-out jobs.
#include <algorithm>
#include <map>

#include "control/host_keys.h"
#include "control/node_accounts.h"
#include "control/ssh_sync.h"
#include "control/up_internal.h"
#include "control/up_steps.h"
#include "ssh/ssh_files.h"
#include "util/strings.h"

namespace tpufleet::up_internal {

std::string LastLines(const std::string& output) {
  constexpr size_t kLines = 10;  // enough for the error and what led to it
  std::vector<std::string> lines = Split(std::string(Trim(output)), '\n');
  size_t from = lines.size() > kLines ? lines.size() - kLines : 0;
  std::string out;
  for (size_t i = from; i < lines.size(); ++i) {
    out += "  " + lines[i] + (i + 1 < lines.size() ? "\n" : "");
  }
  return out;
}

namespace {

// Keeps each host's output (both streams, as they come, the last kSetupOutputKept
// bytes) and its result.
class KeepingSink final : public FanoutSink {
 public:
  explicit KeepingSink(size_t hosts) : runs_(hosts), done_(hosts, false) {}

  void OnOutput(size_t host, OutputStream, std::string_view data) override {
    std::string& out = runs_[host].output;
    out.append(data);
    if (out.size() > 2 * kSetupOutputKept) {  // trimmed now and then, not per write
      out.erase(0, out.size() - kSetupOutputKept);
    }
  }
  void OnResult(size_t host, const HostResult& result) override {
    WorkerRun& run = runs_[host];
    done_[host] = true;
    if (run.output.size() > kSetupOutputKept) {
      run.output.erase(0, run.output.size() - kSetupOutputKept);
    }
    switch (result.outcome) {
      case HostOutcome::kExited:
        run.exit_code = result.exit_code;
        return;
      case HostOutcome::kSignaled:
        run.status = UnavailableError("killed by SIG" + result.signal);
        return;
      case HostOutcome::kTimeout:
        run.status = TimeoutError(result.message);
        return;
      case HostOutcome::kHostKeyMismatch:  // no wait mends it: up stops that node at once
        run.status = FailedPreconditionError(result.message);
        return;
      case HostOutcome::kUnreachable:
      case HostOutcome::kAuthFailed:
      case HostOutcome::kCancelled:
        run.status = UnavailableError(result.message.empty()
                                          ? std::string(HostOutcomeName(result.outcome))
                                          : result.message);
        return;
    }
  }

  // The runs; a host that never had a result gets `missing`.
  std::vector<WorkerRun> Take(const Status& missing) {
    for (size_t i = 0; i < runs_.size(); ++i) {
      if (!done_[i]) {
        runs_[i].status = missing.ok() ? InternalError("no result") : missing;
      }
    }
    return std::move(runs_);
  }

 private:
  std::vector<WorkerRun> runs_;
  std::vector<bool> done_;
};

}  // namespace

void NodeSteps::AfterSshFiles(const Status& synced, Clock::MonoTime now) {
  now_ = now;
  if (!synced.ok()) {
    End(synced);
    return;
  }
  // Every worker the same VM that accepted us and ran setup before: nothing to wait
  // for, and a second `up` of a large fleet stays a few API reads.
  // A worker that ran another version of the setup script runs the spec's again.
  // So is every worker whose recorded agent is the CLI's.
  bool all_done = !rec_.workers.empty() &&
                  std::none_of(rec_.workers.begin(), rec_.workers.end(),
                               [&](const WorkerRecord& w) {
                                 return NeedsSetup(w, spec_.setup) || !AgentRecorded(w);
                               });
  if (all_done && !changed_) {
    // And the node's accounts as last applied, nothing pending (a changed list of the
    // spec's users or of the stored collaborators is applied, nothing recreated).
    Result<NodeAccounts> accounts =
        AgentWorkers().empty() ? Result<NodeAccounts>(NodeAccounts{{}, {}, true})
                               : NodeAccountsToApply(world_.store, fleet_, spec_, plan_.node);
    if (!accounts.ok()) {
      End(accounts.status());
      return;
    }
    if (accounts->applied) {
      End(Status::Ok());
      return;
    }
    changed_ = true;
  }
  StartLogin();
}

// Keys reach a new VM's accounts a little after READY (the guest agent): the login is
// tried until it works or login_timeout passes.
void NodeSteps::StartLogin() {
  Report(NodePhase::kConnecting, zone_, ReadyDetail());
  login_poller_.emplace(world_.clock, options_.poll_min, options_.poll_max,
                        std::min(options_.timeout, options_.login_timeout));
  login_ok_.assign(rec_.workers.size(), false);
  login_last_.assign(rec_.workers.size(), Status::Ok());
  Go(NodeStep::kLogin);
}

std::vector<size_t> NodeSteps::LoginPending() const {
  std::vector<size_t> out;
  for (size_t i = 0; i < login_ok_.size(); ++i) {
    if (!login_ok_[i]) {
      out.push_back(i);
    }
  }
  return out;
}

void NodeSteps::AfterLogin(const std::vector<WorkerRun>& runs, Clock::MonoTime now) {
  now_ = now;
  std::vector<size_t> pending = LoginPending();
  for (size_t i = 0; i < pending.size() && i < runs.size(); ++i) {
    const WorkerRun& r = runs[i];
    size_t w = pending[i];
    if (r.status.ok() && r.exit_code == 0) {
      login_ok_[w] = true;
      continue;
    }
    if (r.status.code() == StatusCode::kFailedPrecondition) {
      // The host key failed verification: no wait mends that.
      End(r.status.WithContext("worker " + std::to_string(rec_.workers[w].index) + " of " +
                               plan_.node + ": its host key is not the one pinned (expected " +
                               SshKeyLineFingerprint(rec_.workers[w].host_key) + ")"));
      return;
    }
    Status last = r.status.ok() ? UnavailableError("exit " + std::to_string(r.exit_code) +
                                                   ": " + std::string(Trim(r.output)))
                                : r.status;
    // Say why we are still waiting: a refused key or a host key mismatch is the user's
    // to fix, and they should not have to wait out the timeout to learn it.
    Report(NodePhase::kConnecting, zone_,
           "worker " + std::to_string(rec_.workers[w].index) + ": " +
               last.message().substr(0, last.message().find('\n')));
    login_last_[w] = std::move(last);
  }
  pending = LoginPending();
  if (pending.empty()) {
    StartAgent();
    return;
  }
  // A spot node can be preempted while we wait for it; then waiting is pointless.
  Result<CloudNode> n = provider_.GetNode(zone_, plan_.node);
  if (n.ok() && n->state.IsGone()) {
    preempted_ = true;
    gone_state_ = n->state;
    End(FailedPreconditionError("node " + plan_.node + " was " + n->state.Name() +
                                " while coming up"));
    return;
  }
  // Maintenance while we wait moves the workers: the old addresses never answer again.
  // The node is taken as it is now (its host keys, the record, the SSH files); a few
  // times at most, as each starts the login's wait anew.
  constexpr int kMaxWorkerMoves = 3;
  if (n.ok() && n->state.IsUsable() && worker_moves_ < kMaxWorkerMoves && WorkersMoved(*n)) {
    ++worker_moves_;
    Report(NodePhase::kConnecting, zone_, "the workers moved (maintenance): new addresses");
    node_ = std::move(*n);
    Go(NodeStep::kHostKeys);
    return;
  }
  std::optional<Clock::MonoTime> at = login_poller_->Next(now_);
  if (!at) {
    size_t w = pending.front();
    End(login_last_[w].WithContext("worker " + std::to_string(rec_.workers[w].index) +
                                   " of " + plan_.node + " does not accept SSH"));
    return;
  }
  Go(NodeStep::kLogin, *at);
}

void NodeSteps::StartSetup() {
  if (spec_.setup.empty()) {
    // Nothing to run: the login the check made is all a worker needs.
    for (WorkerRecord& w : rec_.workers) {
      w.setup_done = true;
      w.setup_digest = SetupDigest(spec_.setup);
    }
    End(Save());
    return;
  }
  size_t pending = SetupPending().size();
  if (pending == 0) {
    End(Status::Ok());
    return;
  }
  changed_ = true;
  Report(NodePhase::kSetup, zone_, std::to_string(pending) + " workers");
  Go(NodeStep::kSetup);
}

std::vector<size_t> NodeSteps::SetupPending() const {
  std::vector<size_t> out;
  for (size_t i = 0; i < rec_.workers.size(); ++i) {
    // Workers that never ran it, and those that ran another version (the spec's setup
    // was edited since): the spec's runs there now.
    if (NeedsSetup(rec_.workers[i], spec_.setup)) {
      out.push_back(i);
    }
  }
  return out;
}

// The script's own commands read /dev/null, so one that reads stdin cannot swallow the
// rest of the script.
std::string NodeSteps::SetupScript() const { return "{\n" + spec_.setup + "\n} </dev/null\n"; }

void NodeSteps::AfterSetup(const std::vector<WorkerRun>& runs, Clock::MonoTime now) {
  now_ = now;
  End(TakeRuns(SetupPending(), runs, "setup", "setup-done", [&](WorkerRecord& w) {
    w.setup_done = true;
    w.setup_digest = SetupDigest(spec_.setup);
    return "worker=" + std::to_string(w.index);
  }));
}

Status NodeSteps::TakeRuns(const std::vector<size_t>& workers, const std::vector<WorkerRun>& runs,
                           const std::string& what, const std::string& event,
                           const std::function<std::string(WorkerRecord&)>& done) {
  Status first;  // the first failure, in worker order
  for (size_t i = 0; i < workers.size() && i < runs.size(); ++i) {
    const WorkerRun& r = runs[i];
    WorkerRecord& w = rec_.workers[workers[i]];
    std::string which = "worker " + std::to_string(w.index) + " of " + plan_.node;
    Status s;
    if (!r.status.ok()) {
      s = r.status.WithContext(what + " on " + which);
    } else if (r.exit_code != 0) {
      s = FailedPreconditionError(what + " failed on " + which + " (exit " +
                                  std::to_string(r.exit_code) + "):\n" + LastLines(r.output));
    } else {
      std::string detail = done(w);
      s = world_.store.Transaction([&]() -> Status {
        TPUFLEET_TRY(Save());
        return Event(event, detail);
      });
    }
    if (first.ok()) {
      first = s;
    }
  }
  return first;
}

// ---------------------------------------------------------------------------------------
// UpSteps

// An SSH job under way: its nodes (in no other job meanwhile), the workers of each, and
// what hands them their runs.
struct UpSteps::Job {
  std::vector<NodeSteps*> nodes;
  std::vector<size_t> counts;  // workers per node, in nodes' order
  void (NodeSteps::*after)(const std::vector<WorkerRun>&, Clock::MonoTime);
  std::vector<WorkerRun> runs;        // one per worker, filled as its part ends
  std::vector<size_t> on_engine;      // runs[on_engine[i]] is the fan-out job's host i
  std::unique_ptr<KeepingSink> sink;  // the fan-out job's hosts
  int parts = 0;  // parts still running: the fan-out job, each OpenSSH run, StartJob
};

UpSteps::UpSteps(World& world, const FleetSpec& fleet, const std::vector<NodePlan>& plans,
                 CloudProvider& provider, const UpOptions& options, ProgressObserver& progress,
                 const FleetKey* key, EventLoop& loop)
    : world_(world), fleet_(fleet), plans_(plans), provider_(provider), options_(options),
      progress_(progress), key_(key), agent_(LoadLocalAgent(world.paths.agent_binary)),
      loop_(loop), session_(world.local_fanout.Open(loop)), nodes_(plans.size()) {
  wake_ = loop_.Now();
  timer_ = loop_.At(*wake_, [this](Clock::MonoTime now) {
    timer_ = 0;
    Advance(now);
  });
}

UpSteps::~UpSteps() {
  loop_.Remove(timer_);
  session_.reset();  // no job calls back after this
}

bool UpSteps::done() const {
  return jobs_.empty() && std::all_of(nodes_.begin(), nodes_.end(), [](const auto& n) {
           return n && n->step() == NodeStep::kDone;
         });
}

bool UpSteps::InJob(const NodeSteps* n) const {
  return std::any_of(jobs_.begin(), jobs_.end(), [&](const auto& j) {
    return std::find(j->nodes.begin(), j->nodes.end(), n) != j->nodes.end();
  });
}

std::vector<NodeSteps*> UpSteps::Due(NodeStep step, Clock::MonoTime now) {
  std::vector<NodeSteps*> out;
  for (const auto& n : nodes_) {
    if (n && !InJob(n.get()) && n->step() == step && n->due() <= now) {
      out.push_back(n.get());
    }
  }
  return out;
}

void UpSteps::StartJob(const std::vector<NodeSteps*>& nodes,
                       std::vector<size_t> (NodeSteps::*pending)() const,
                       void (NodeSteps::*after)(const std::vector<WorkerRun>&, Clock::MonoTime),
                       const JobInput& input, std::chrono::milliseconds timeout,
                       const std::string& openssh_script) {
  auto job = std::make_unique<Job>();
  Job* j = job.get();
  jobs_.push_back(std::move(job));
  j->nodes = nodes;
  j->after = after;
  // StartJob's own part, ended on the next turn: the job never ends inside Advance.
  j->parts = 1;
  FanoutJob spec;
  spec.key_path = world_.keys.PrivateKeyPath();
  spec.command = input.command;
  // A script reaches bash on stdin, as with `ssh HOST bash -s`: no shell parses it on
  // the way, and the remote one sees it exactly once.
  spec.stdin_header = input.stdin_header;
  spec.stdin_path = input.stdin_path;
  spec.command_timeout = timeout;
  for (NodeSteps* n : nodes) {
    std::vector<size_t> workers = (n->*pending)();
    j->counts.push_back(workers.size());
    const NodeRecord& rec = n->record();
    for (size_t i : workers) {
      const WorkerRecord& w = rec.workers[i];
      std::string alias = WorkerAlias(rec.name, w.index);
      size_t at = j->runs.size();
      j->runs.emplace_back();
      if (n->ssh_hosts() && !openssh_script.empty()) {
        // The user's own machine takes the user's own keys: OpenSSH, for the login check
        // that puts the fleet key in the login's authorized_keys (all of them at once, in
        // child processes the loop watches). From then on (setup) it is reached like any
        // worker, as exec reaches it.
        ++j->parts;
        world_.ssh.Start(loop_, alias, openssh_script, timeout,
                         [this, j, at](Result<ProgramResult> r) {
                           j->runs[at] = r.ok() ? WorkerRun{Status::Ok(), r->exit_code,
                                                            std::move(r->output)}
                                                : WorkerRun{r.status(), 0, ""};
                           PartDone(j);
                         });
        continue;
      }
      FanoutHost h;
      h.name = alias;
      h.address = w.address;
      h.port = rec.port == 0 ? 22 : rec.port;
      h.user = rec.login.empty() ? world_.login : rec.login;
      h.host_key = w.host_key;
      spec.hosts.push_back(std::move(h));
      j->on_engine.push_back(at);
    }
  }
  j->sink = std::make_unique<KeepingSink>(spec.hosts.size());
  if (!spec.hosts.empty()) {
    Status started = session_->Start(spec, *j->sink, [this, j] {
      TakeEngineRuns(j, Status::Ok());
      PartDone(j);
    });
    if (started.ok()) {
      ++j->parts;
    } else {
      TakeEngineRuns(j, started);  // every host gets why the job could not start
    }
  }
  loop_.After(std::chrono::nanoseconds(0), [this, j](Clock::MonoTime) { PartDone(j); });
}

void UpSteps::TakeEngineRuns(Job* j, const Status& missing) {
  std::vector<WorkerRun> got = j->sink->Take(missing);
  for (size_t i = 0; i < j->on_engine.size(); ++i) {
    j->runs[j->on_engine[i]] = std::move(got[i]);
  }
}

void UpSteps::PartDone(Job* j) {
  if (--j->parts > 0) {
    return;
  }
  Clock::MonoTime now = loop_.Now();
  auto it = std::find_if(jobs_.begin(), jobs_.end(), [&](const auto& p) { return p.get() == j; });
  std::unique_ptr<Job> job = std::move(*it);
  jobs_.erase(it);
  size_t at = 0;
  for (size_t k = 0; k < job->nodes.size(); ++k) {
    auto from = job->runs.begin() + static_cast<std::ptrdiff_t>(at);
    (job->nodes[k]->*(job->after))({from, from + static_cast<std::ptrdiff_t>(job->counts[k])},
                                   now);
    at += job->counts[k];
  }
  Advance(now);
}

void UpSteps::Advance(Clock::MonoTime now) {
  // Admit nodes in spec order while fewer than max_parallel_nodes are under way.
  size_t active = std::count_if(nodes_.begin(), nodes_.end(), [](const auto& n) {
    return n && n->step() != NodeStep::kDone;
  });
  size_t cap = static_cast<size_t>(std::max(1, options_.max_parallel_nodes));
  for (size_t i = 0; i < nodes_.size() && active < cap; ++i) {
    if (!nodes_[i]) {
      nodes_[i] = std::make_unique<NodeSteps>(world_, fleet_, plans_[i], provider_, options_,
                                              progress_, key_, agent_);
      ++active;
    }
  }
  // Each node's own steps, as long as the next one is due at once.
  for (const auto& n : nodes_) {
    while (n && n->step() != NodeStep::kDone && !IsBatchStep(n->step()) && n->due() <= now) {
      n->Advance(now);
    }
  }
  // The batched steps, for every node that reached them.
  if (std::vector<NodeSteps*> due = Due(NodeStep::kSshFiles, now); !due.empty()) {
    Status synced = SyncSshFiles(world_);
    for (NodeSteps* n : due) {
      n->AfterSshFiles(synced, now);
    }
  }
  if (std::vector<NodeSteps*> due = Due(NodeStep::kLogin, now); !due.empty()) {
    // ssh-hosts logins (the user's own key) get the fleet key in their authorized_keys.
    StartJob(due, &NodeSteps::LoginPending, &NodeSteps::AfterLogin, {"bash -s", "true", ""},
             kLoginCheckTimeout, key_ ? AuthorizeFleetKeyScript(key_->public_key) : "");
  }
  StartAgentJobs(now);
  // One job per setup script (the script is each job's stdin): the nodes of one entry
  // of the spec share theirs.
  std::map<std::string, std::vector<NodeSteps*>> by_script;
  for (NodeSteps* n : Due(NodeStep::kSetup, now)) {
    by_script[n->SetupScript()].push_back(n);
  }
  for (const auto& [script, due] : by_script) {
    StartJob(due, &NodeSteps::SetupPending, &NodeSteps::AfterSetup, {"bash -s", script, ""},
             options_.setup_timeout);
  }
  // The timer, for the next step due of a node in no job.
  std::optional<Clock::MonoTime> wake;
  active = 0;
  bool waiting = false;  // a node not admitted yet
  for (const auto& n : nodes_) {
    if (!n) {
      waiting = true;
    } else if (n->step() != NodeStep::kDone) {
      ++active;
      if (!InJob(n.get())) {
        wake = wake ? std::min(*wake, n->due()) : n->due();
      }
    }
  }
  if (waiting && active < cap) {
    wake = now;  // a slot is free: the next node starts on the next turn
  }
  loop_.Remove(timer_);
  timer_ = 0;
  wake_ = wake;
  if (wake) {
    timer_ = loop_.At(*wake, [this](Clock::MonoTime at) {
      timer_ = 0;
      Advance(at);
    });
  }
}

std::vector<NodeOutcome> UpSteps::Outcomes() const {
  std::vector<NodeOutcome> out;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    out.push_back(nodes_[i] ? nodes_[i]->outcome()
                            : NodeOutcome{plans_[i].node, InternalError("never started"), false, {}});
  }
  return out;
}

}  // namespace tpufleet::up_internal
