// NodeSteps' agent steps: after the login check and before setup, every worker's node
// agent is checked, the CLI's is installed where it is not current, and the spec's
// accounts are made through it (control/agent_install.h says what runs where).
//
// Each worker's agent is recorded in the store (WorkerRecord::agent_sha256, as
// AgentRecord: the binary's hash and the spec's Prometheus port) as soon as it is known
// to be current, so a killed `up` resumes without installing again, and an `up` with
// nothing to do (setup done, every recorded agent the CLI's with the spec's port) opens
// no SSH connection at all.
#include <map>

#include "control/up_internal.h"
#include "control/up_steps.h"
#include "control/node_accounts.h"
#include "control/users.h"

namespace tpufleet::up_internal {
namespace {

std::string Workers(size_t n) { return std::to_string(n) + (n == 1 ? " worker" : " workers"); }

// The record of a worker whose agent is `agent`, installed as `fleet` wants it.
std::string Recorded(const LocalAgent& agent, const FleetSpec& fleet) {
  return AgentRecord(agent.sha256, fleet.monitoring.prometheus_port);
}

}  // namespace

// The record says it: the CLI's agent (or, on an ssh-hosts machine whose login may not
// sudo, that none can be put there).
bool NodeSteps::AgentRecorded(const WorkerRecord& w) const {
  return agent_.ok() && (w.agent_sha256 == Recorded(*agent_, fleet_) ||
                         (ssh_hosts() && w.agent_sha256 == kAgentNotInstallable));
}

std::vector<size_t> NodeSteps::AllWorkers() const {
  std::vector<size_t> out(rec_.workers.size());
  for (size_t i = 0; i < out.size(); ++i) {
    out[i] = i;
  }
  return out;
}

std::vector<size_t> NodeSteps::AgentWorkers() const {
  std::vector<size_t> out;
  for (size_t i = 0; i < rec_.workers.size(); ++i) {
    if (rec_.workers[i].agent_sha256 != kAgentNotInstallable) {
      out.push_back(i);
    }
  }
  return out;
}

void NodeSteps::StartAgent() {
  if (!agent_.ok()) {
    End(agent_.status());
    return;
  }
  Report(NodePhase::kAgent, zone_, "checking " + Workers(rec_.workers.size()));
  Go(NodeStep::kAgent);
}

void NodeSteps::AfterAgentCheck(const std::vector<WorkerRun>& runs, Clock::MonoTime now) {
  now_ = now;
  agent_install_.clear();
  size_t no_sudo = 0;
  for (size_t i = 0; i < runs.size() && i < rec_.workers.size(); ++i) {
    WorkerRecord& w = rec_.workers[i];
    std::string which = "worker " + std::to_string(w.index) + " of " + plan_.node;
    if (!runs[i].status.ok()) {
      End(runs[i].status.WithContext("checking the agent on " + which));
      return;
    }
    Result<AgentCheck> check = ParseAgentCheck(runs[i].output);
    if (!check.ok()) {
      End(FailedPreconditionError("checking the agent on " + which + " failed (exit " +
                                  std::to_string(runs[i].exit_code) + "): " +
                                  check.status().message() + ":\n" +
                                  LastLines(runs[i].output)));
      return;
    }
    if (check->Current(agent_->sha256, fleet_.monitoring.prometheus_port)) {
      w.agent_sha256 = Recorded(*agent_, fleet_);
    } else if (check->sudo) {
      w.agent_sha256.clear();
      agent_install_.push_back(i);
    } else if (ssh_hosts()) {
      w.agent_sha256 = kAgentNotInstallable;
      ++no_sudo;
    } else {
      End(FailedPreconditionError(
          "the agent cannot be installed on " + which + ": its login " + rec_.login +
          " may not run `sudo -n` (a TPU VM gives it passwordless sudo; was it changed?)"));
      return;
    }
  }
  if (Status saved = Save(); !saved.ok()) {
    End(saved);
    return;
  }
  if (no_sudo > 0) {
    // One line, and on: an ssh-hosts machine is the user's, and so is its sudo.
    warnings_.push_back("the node agent is not installed on " + Workers(no_sudo) +
                        ": login " + rec_.login +
                        " has no passwordless sudo there, so `run`, `jobs` and `doctor` "
                        "do not work on them and the spec's users are not made");
  }
  if (agent_install_.empty()) {
    StartAccounts();
    return;
  }
  changed_ = true;
  Report(NodePhase::kAgent, zone_, "installing on " + Workers(agent_install_.size()));
  Go(NodeStep::kAgentInstall);
}

void NodeSteps::AfterAgentInstall(const std::vector<WorkerRun>& runs, Clock::MonoTime now) {
  now_ = now;
  Status first = TakeRuns(agent_install_, runs, "installing the agent", "agent-installed",
                          [&](WorkerRecord& w) {
                            w.agent_sha256 = Recorded(*agent_, fleet_);
                            return "worker=" + std::to_string(w.index) +
                                   " sha256=" + w.agent_sha256;
                          });
  if (!first.ok()) {
    End(first);
    return;
  }
  StartAccounts();
}

void NodeSteps::StartAccounts() {
  // Also with no users: the agent then removes the accounts it made for users the spec
  // (or `tpufleet users`) no longer lists.
  size_t workers = AgentWorkers().size();
  if (workers == 0) {
    StartSetup();
    return;
  }
  Result<NodeAccounts> accounts = NodeAccountsToApply(world_.store, fleet_, spec_, plan_.node);
  if (!accounts.ok()) {
    End(accounts.status());
    return;
  }
  accounts_ = std::move(accounts->users);
  removals_ = std::move(accounts->remove);
  size_t users = accounts_.size();
  if (users > 0) {
    Report(NodePhase::kAgent, zone_,
           "making " + std::to_string(users) + (users == 1 ? " account" : " accounts") + " on " +
               Workers(workers));
  }
  Go(NodeStep::kAccounts);
}

std::string NodeSteps::AccountsRequest() const {
  api::AgentRequest r = tpufleet::AccountsRequest(accounts_);
  r.remove = removals_;
  return api::ToLine(r) + "\n";
}

Status NodeSteps::TakeAgentAnswers(const std::vector<WorkerRun>& runs, const std::string& what,
                                   const std::function<Status(std::string_view)>& parse) {
  std::vector<size_t> workers = AgentWorkers();
  for (size_t i = 0; i < runs.size() && i < workers.size(); ++i) {
    const WorkerRun& r = runs[i];
    std::string which =
        "worker " + std::to_string(rec_.workers[workers[i]].index) + " of " + plan_.node;
    if (!r.status.ok()) {
      return r.status.WithContext(what + " on " + which);
    }
    if (Status s = parse(r.output); !s.ok()) {
      return s.WithContext(what + " on " + which);
    }
  }
  return Status::Ok();
}

void NodeSteps::AfterAccounts(const std::vector<WorkerRun>& runs, Clock::MonoTime now) {
  now_ = now;
  if (Status s = TakeAgentAnswers(runs, "making the accounts",
                                  [&](std::string_view output) {
                                    return ParseAccountsAnswer(output, removals_);
                                  });
      !s.ok()) {
    End(s);
    return;
  }
  // Every worker answered: an up that finds the same list again sends nothing.
  if (Status s = RecordAccountsApplied(world_.store, world_.clock, fleet_.name, plan_.node,
                                       accounts_);
      !s.ok()) {
    End(s);
    return;
  }
  StartMounts();
}

// Nodes with data disks only, so others cost no round trip; with no mount left, the
// request unmounts what the last one mounted.
void NodeSteps::StartMounts() {
  if (spec_.data_disks.empty() || AgentWorkers().empty()) {
    StartSetup();
    return;
  }
  if (size_t disks = MountsOf(spec_).size(); disks > 0) {
    Report(NodePhase::kAgent, zone_,
           "mounting " + std::to_string(disks) + (disks == 1 ? " disk" : " disks") + " on " +
               Workers(AgentWorkers().size()));
  }
  Go(NodeStep::kMounts);
}

std::string NodeSteps::MountsRequest() const { return MountsRequestLine(MountsOf(spec_)); }

void NodeSteps::AfterMounts(const std::vector<WorkerRun>& runs, Clock::MonoTime now) {
  now_ = now;
  if (Status s = TakeAgentAnswers(runs, "mounting the spec's disks", &ParseMountsAnswer);
      !s.ok()) {
    End(s);
    return;
  }
  StartSetup();
}

// ---------------------------------------------------------------------------------------
// UpSteps: one job per agent step for every node at it (accounts: per request, as the
// nodes' users may differ).

void UpSteps::StartAgentJobs(Clock::MonoTime now) {
  if (std::vector<NodeSteps*> due = Due(NodeStep::kAgent, now); !due.empty()) {
    StartJob(due, &NodeSteps::AllWorkers, &NodeSteps::AfterAgentCheck,
             {"bash -s", AgentCheckScript(), ""}, kAgentCheckTimeout);
  }
  if (std::vector<NodeSteps*> due = Due(NodeStep::kAgentInstall, now); !due.empty()) {
    // Nodes get there only with the binary in hand (StartAgent).
    StartJob(due, &NodeSteps::AgentInstallPending, &NodeSteps::AfterAgentInstall,
             {AgentInstallCommand(agent_->sha256, fleet_.monitoring.prometheus_port), "",
              agent_->path},
             kAgentInstallTimeout);
  }
  std::map<std::string, std::vector<NodeSteps*>> by_request;
  for (NodeSteps* n : Due(NodeStep::kAccounts, now)) {
    by_request[n->AccountsRequest()].push_back(n);
  }
  for (const auto& [request, due] : by_request) {
    StartJob(due, &NodeSteps::AgentWorkers, &NodeSteps::AfterAccounts,
             {AgentRootCallCommand(), request, ""}, kAccountsTimeout);
  }
  by_request.clear();
  for (NodeSteps* n : Due(NodeStep::kMounts, now)) {
    by_request[n->MountsRequest()].push_back(n);
  }
  for (const auto& [request, due] : by_request) {
    StartJob(due, &NodeSteps::AgentWorkers, &NodeSteps::AfterMounts,
             {AgentRootCallCommand(), request, ""}, kMountsTimeout);
  }
}

}  // namespace tpufleet::up_internal
