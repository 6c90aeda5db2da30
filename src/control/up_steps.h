// The steps of `up` for one node, and the driver that advances every node of an `up`
// from one loop; not for files other than up*.cc.
//
// NodeSteps brings one node id from its plan to ready as a sequence of resumable steps:
// load the record, delete a node that is gone (recreate), create it zone by zone, wait
// for the operation and the queued resource, wait for READY and the workers' host keys,
// set the ssh-keys metadata; then steps the driver batches for all nodes at once:
// rewrite the SSH files, check that every worker accepts the fleet key, check the node
// agent and install it where it is not current, make the spec's accounts through it
// (control/agent_install.h), run the setup script. A step is one short piece of work (a request, or its answer) that ends by
// naming the next step and when it is due: nothing inside a step sleeps. Every write to
// the store that up.h's crash-safety contract names comes before its request, as it did
// when each node had a thread, so a killed `up` resumes from the records.
//
// UpSteps drives the nodes of one `up` on an EventLoop (util/event_loop.h): a timer runs
// every node step that is due, then starts the SSH work of all nodes at each batched
// step as one fan-out job each, on a FanoutSession (ssh/fanout.h) of the same loop,
// and arms itself for the next step due. The jobs run while the loop goes on (a long
// setup holds up no other node's cloud polls); each job's end hands its nodes their
// runs. It owns no thread and never sleeps; the loop's owner turns the loop (`Up`:
// EventLoop::RunUntil). The session's later jobs reuse the connections of earlier ones,
// so a worker's login check and its setup cost one SSH handshake.
//
// Thread-safety: none; the loop's thread advances an UpSteps and its NodeSteps.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "control/agent_install.h"
#include "control/leftovers.h"
#include "control/progress.h"
#include "control/up.h"
#include "control/wait.h"
#include "control/world.h"
#include "core/node_state.h"
#include "core/up_plan.h"
#include "ssh/fanout.h"
#include "ssh/fleet_key.h"
#include "util/event_loop.h"

namespace tpufleet::up_internal {

/// A node is made again at most this often when it is preempted (or vanishes) on the way
/// up: capacity that is taken away at once is unlikely to stay on the next try.
inline constexpr int kPreemptedRetries = 3;
/// One login check (connect, log in, run `true`) may take this long before it counts as
/// a refusal and is tried again: a worker that has not let us in within 30 s is booting.
inline constexpr std::chrono::seconds kLoginCheckTimeout{30};
/// Of each worker's setup output the last this many bytes are kept (the message of a
/// failed setup shows its last lines): a chatty script costs no more memory than this.
inline constexpr size_t kSetupOutputKept = 64 * 1024;
/// The agent check (a hash, `sudo -n true`, a hello with its own 10 s limit) takes well
/// under a second on a live worker; a worker that takes a minute is not answering.
inline constexpr std::chrono::seconds kAgentCheckTimeout{60};
/// Streaming a few MiB to every worker and the install itself (which waits up to 10 s
/// for an old agent to stop and 15 s for the new one to answer) fit in this.
inline constexpr std::chrono::minutes kAgentInstallTimeout{5};
/// accounts.apply runs useradd and visudo per user: seconds, even for many users.
inline constexpr std::chrono::minutes kAccountsTimeout{2};
/// disks.mount may format a blank disk first (mkfs.ext4 initialises lazily: seconds).
inline constexpr std::chrono::minutes kMountsTimeout{10};

enum class NodeStep {
  kStart,      // load the record and act on the plan
  kOperation,  // a long-running operation (delete, create, ssh-keys) is polled
  kQueued,     // a queued resource waits for capacity
  kBooting,    // the node is polled until READY
  kHostKeys,   // the workers' host keys are polled until all are published
  kLeftover,   // what a stockout left behind is deleted before the next zone
  kSshFiles,   // batched: the SSH files are rewritten from the store
  kLogin,      // batched: every worker not yet in is asked to run `true`
  kAgent,      // batched: every worker says which agent it has and whether it answers
  kAgentInstall,  // batched: the CLI's agent is installed where it is not current
  kAccounts,   // batched: the agent makes the spec's users on every worker
  kMounts,     // batched: the agent mounts the spec's data disks on every worker
  kSetup,      // batched: the setup script runs on every worker that has not run it
  kDone,
};

/// True for the steps UpSteps batches over nodes; the others are NodeSteps::Advance's.
bool IsBatchStep(NodeStep step);

/// The last lines of a worker's output, each indented, for a failure message.
std::string LastLines(const std::string& output);

/// How one worker's script ended, whichever transport carried it.
struct WorkerRun {
  Status status;        // OK when the script ran (whatever its exit); else why it did not
  int exit_code = 0;    // the script's exit status when status is OK
  std::string output;   // stdout and stderr as they came, the last kSetupOutputKept bytes
};

class NodeSteps {
 public:
  /// `plan`, `key` (null for ssh-hosts fleets) and `agent` (the CLI's agent binary, or
  /// why there is none) must outlive the steps. The node's deadline (options.timeout)
  /// starts now.
  NodeSteps(World& world, const FleetSpec& fleet, const NodePlan& plan,
            CloudProvider& provider, const UpOptions& options, ProgressObserver& progress,
            const FleetKey* key, const Result<LocalAgent>& agent);
  NodeSteps(const NodeSteps&) = delete;
  NodeSteps& operator=(const NodeSteps&) = delete;

  NodeStep step() const { return step_; }
  Clock::MonoTime due() const { return due_; }
  bool ssh_hosts() const { return fleet_.provider == Provider::kSshHosts; }
  const NodeRecord& record() const { return rec_; }
  /// The outcome so far; final once step() is kDone.
  NodeOutcome outcome() const { return {plan_.node, status_, changed_, warnings_}; }

  /// Runs the node's current step. REQUIRES: due() <= now, !IsBatchStep(step()).
  void Advance(Clock::MonoTime now);

  // The batched steps: the driver does the work, the node takes the result.
  /// kSshFiles: `synced` is how rewriting the SSH files went.
  void AfterSshFiles(const Status& synced, Clock::MonoTime now);
  /// kLogin: the workers (indices into record().workers) still to be checked.
  std::vector<size_t> LoginPending() const;
  /// kLogin: one run per LoginPending() worker, in that order.
  void AfterLogin(const std::vector<WorkerRun>& runs, Clock::MonoTime now);
  /// kAgent: every worker, each to run AgentCheckScript.
  std::vector<size_t> AllWorkers() const;
  void AfterAgentCheck(const std::vector<WorkerRun>& runs, Clock::MonoTime now);
  /// kAgentInstall: the workers whose agent is not current.
  std::vector<size_t> AgentInstallPending() const { return agent_install_; }
  void AfterAgentInstall(const std::vector<WorkerRun>& runs, Clock::MonoTime now);
  /// kAccounts: the workers with an agent (all but ssh-hosts ones without sudo), and
  /// the accounts.apply request each gets: the spec's users and the stored
  /// collaborators of the node (control/users.h UsersOfNode).
  std::vector<size_t> AgentWorkers() const;
  std::string AccountsRequest() const;
  void AfterAccounts(const std::vector<WorkerRun>& runs, Clock::MonoTime now);
  /// kMounts: the disks.mount request of the node's data disks with a mount path (the
  /// same workers as kAccounts).
  std::string MountsRequest() const;
  void AfterMounts(const std::vector<WorkerRun>& runs, Clock::MonoTime now);
  /// kSetup: the workers that have not run the spec's setup script (this version of
  /// it), and the script as each worker's bash reads it on stdin.
  std::vector<size_t> SetupPending() const;
  std::string SetupScript() const;
  /// kSetup: one run per SetupPending() worker, in that order.
  void AfterSetup(const std::vector<WorkerRun>& runs, Clock::MonoTime now);

 private:
  enum class OpFor { kRemove, kCreate, kSshKeys, kStart };

  // Steps (up_steps.cc). A Status that is not OK ends this attempt (End).
  Status Begin();
  Status StartRemove();
  Status Removed();
  Status StartStopped();
  Status StartCreate();
  Status CreateNext();
  Status CreateIn(const std::string& zone);
  Status AdoptAfterConflict(const std::string& zone, const Status& conflict);
  Status ZoneFailed(const Status& last);
  Status CreateDone(const Status& done);
  Status WaitFor(const CloudOperation& op, OpFor what);
  Status PollOperation();
  Status OperationDone(const Status& result);
  void StartQueued(bool from_create);
  Status PollQueued();
  Status QueuedDone(const Status& result);
  void StartBooting();
  Status PollBooting();
  Status PollHostKeys();
  Status Ready(const std::vector<WorkerIdentity>& ids);
  Status PollLeftover();
  Status LeftoverDone(const Status& deleted);
  // Steps (up_ssh.cc).
  void StartLogin();
  void StartSetup();
  // The runs of a batched step on `workers` (the pending ones, in order): the first
  // failure ("WHAT on worker N of NODE: …", or "WHAT failed on … (exit N):" and the
  // output's last lines), and for each worker whose run exited 0, `done` updates its
  // record, which is saved with an event `event` (its detail: what `done` returns).
  Status TakeRuns(const std::vector<size_t>& workers, const std::vector<WorkerRun>& runs,
                  const std::string& what, const std::string& event,
                  const std::function<std::string(WorkerRecord&)>& done);
  // Steps (up_agent.cc).
  void StartAgent();
  void StartAccounts();
  void StartMounts();
  // The agent's answers on AgentWorkers(): the first failure, "WHAT on worker N of NODE".
  Status TakeAgentAnswers(const std::vector<WorkerRun>& runs, const std::string& what,
                          const std::function<Status(std::string_view)>& parse);
  bool AgentRecorded(const WorkerRecord& w) const;

  // Helpers (up_steps.cc).
  void End(const Status& status);
  void Go(NodeStep step) { Go(step, now_); }
  void Go(NodeStep step, Clock::MonoTime at) {
    step_ = step;
    due_ = at;
  }
  bool PollLater(NodeStep step);
  Status LoadRecord();
  void FillFromSpec();
  Status Adopt();
  Status Save();
  Status Event(const std::string& kind, const std::string& detail);
  void Report(NodePhase phase, const std::string& zone, std::string detail = "");
  std::string ReadyDetail() const;
  CreateNodeRequest Request(const std::string& zone) const;
  std::string DesiredSshKeys() const;
  LeftoverRecord LeftoverIn(const std::string& zone, bool queued,
                            const std::string& reason) const;
  std::vector<WorkerRecord> MergeWorkers(const CloudNode& node,
                                         const std::vector<WorkerIdentity>& ids) const;
  /// True when `node`'s workers are not at the record's addresses.
  bool WorkersMoved(const CloudNode& node) const;

  World& world_;
  const FleetSpec& fleet_;
  const NodeSpec& spec_;
  const NodePlan& plan_;
  CloudProvider& provider_;
  const UpOptions& options_;
  ProgressObserver& progress_;
  const FleetKey* key_;
  const Result<LocalAgent>& agent_;
  Poller poller_;  // every cloud wait of the node shares its backoff and deadline
  int worker_moves_ = 0;  // times the login's wait found the workers at new addresses

  NodeStep step_ = NodeStep::kStart;
  Clock::MonoTime due_;
  Clock::MonoTime now_;         // the time of the call being served
  PlanAction action_;           // the plan's, until a retry after a preemption
  bool resume_;                 // the first create may reuse the recorded request id
  int retries_ = 0;             // attempts made again after a preemption
  bool preempted_ = false;      // the node was preempted while this attempt waited for it
  bool vanished_ = false;       // the node disappeared while this attempt waited for it
  NodeState gone_state_;        // its state then: PREEMPTED or TERMINATED
  NodeRecord rec_;
  std::string zone_;
  bool changed_ = false;
  std::vector<std::string> warnings_;  // the outcome's
  Status status_;               // the outcome once kDone

  CloudOperation op_;                   // kOperation: the operation polled
  OpFor op_for_ = OpFor::kCreate;       // kOperation: what its end leads to
  std::vector<std::string> zones_;      // the zones this create tries, in order
  size_t zone_index_ = 0;               // the one being tried
  Status stockout_;                     // the last zone's stockout
  std::optional<Deletion> leftover_;    // kLeftover: the stockout's leftover deleted
  bool queued_from_create_ = false;     // kQueued: a create of ours (else: a plan's wait)
  bool queued_active_ = false;          // its queued resource was ACTIVE: the node was made
  NodeState last_state_;                // the last state reported while polling
  CloudNode node_;                      // the node as it was when READY
  std::optional<Poller> login_poller_;  // kLogin: the login_timeout budget
  std::vector<bool> login_ok_;          // kLogin: per worker, logged in
  std::vector<Status> login_last_;      // kLogin: per worker, the last refusal
  std::vector<size_t> agent_install_;   // kAgentInstall: the workers it runs on
  std::vector<UserSpec> accounts_;      // kAccounts: the node's users (UsersOfNode)
  std::vector<api::AccountRemoval> removals_;  // kAccounts: removals still pending
};

/// A worker of a node: an index into its record's workers.
struct WorkerRef {
  NodeSteps* node;
  size_t worker;
};

class UpSteps {
 public:
  /// One node per plan; at most options.max_parallel_nodes of them are worked on at once.
  /// The first steps are due at once. The CLI's agent binary (world.paths.agent_binary)
  /// is read and hashed here, once. REQUIRES: `loop` outlives the steps.
  UpSteps(World& world, const FleetSpec& fleet, const std::vector<NodePlan>& plans,
          CloudProvider& provider, const UpOptions& options, ProgressObserver& progress,
          const FleetKey* key, EventLoop& loop);
  ~UpSteps();
  UpSteps(const UpSteps&) = delete;
  UpSteps& operator=(const UpSteps&) = delete;

  /// True once every node is done (and no SSH job runs).
  bool done() const;
  /// When the steps' timer is armed for (nullopt: none is, as while SSH jobs run).
  std::optional<Clock::MonoTime> wake() const { return wake_; }
  /// One per plan, in plan order. REQUIRES: done().
  std::vector<NodeOutcome> Outcomes() const;

 private:
  struct Job;
  // What each worker of a job runs: `command` in its login shell, whose stdin gets
  // `stdin_header`, then the file at `stdin_path` (if any).
  struct JobInput {
    std::string command = "bash -s";
    std::string stdin_header;
    std::string stdin_path;
  };
  // Runs every step that is due at `now` (the SSH steps of all nodes batched) and arms
  // the timer for the next one.
  void Advance(Clock::MonoTime now);
  bool InJob(const NodeSteps* node) const;
  // The nodes at `step` that are due and in no SSH job, in plan order.
  std::vector<NodeSteps*> Due(NodeStep step, Clock::MonoTime now);
  // Starts `input` on the pending workers of `nodes` (`pending` says which), as one
  // job; when it ends, `after` hands each node its runs. Workers run on the fan-out
  // session with the fleet key and the pinned host key; but when `openssh_script` is
  // given (the login check), ssh-hosts machines run it with OpenSSH
  // (World::ssh's Start: all at once, watched by the loop), as they take only the
  // user's own keys until it has put the fleet key in their login's authorized_keys.
  void StartJob(const std::vector<NodeSteps*>& nodes,
                std::vector<size_t> (NodeSteps::*pending)() const,
                void (NodeSteps::*after)(const std::vector<WorkerRun>&, Clock::MonoTime),
                const JobInput& input, std::chrono::milliseconds timeout,
                const std::string& openssh_script = "");
  // The batched agent steps of the nodes due at `now`.
  void StartAgentJobs(Clock::MonoTime now);
  // The fan-out job's runs into the job's, `missing` for hosts that had no result.
  void TakeEngineRuns(Job* job, const Status& missing);
  // One part of the job ended; the last hands the nodes their runs.
  void PartDone(Job* job);

  World& world_;
  const FleetSpec& fleet_;
  const std::vector<NodePlan>& plans_;
  CloudProvider& provider_;
  const UpOptions& options_;
  ProgressObserver& progress_;
  const FleetKey* key_;
  Result<LocalAgent> agent_;  // the CLI's agent binary, or why there is none
  EventLoop& loop_;
  std::unique_ptr<FanoutSession> session_;          // world.local_fanout's, on loop_
  std::vector<std::unique_ptr<NodeSteps>> nodes_;   // null until admitted
  std::vector<std::unique_ptr<Job>> jobs_;          // the SSH jobs running
  EventLoop::Id timer_ = 0;                         // Advance's, armed for wake_
  std::optional<Clock::MonoTime> wake_;
};

}  // namespace tpufleet::up_internal
