// Reconciler: the heart of `tpufleet serve`. It keeps every fleet it is given at its spec,
// level-triggered, from one EventLoop (util/event_loop.h) with no thread per node.
//
// Each pass (every ReconcilerOptions::pass, and at once when an agent's notice changes):
//   1. reads the store's records;
//   2. lists each (provider, zone) of the fleets' nodes (and queued resources) once, the
//      zones that waited longest first, as far as the API budget allows (ApiPacer: a
//      calls-per-minute cap); a zone not listed keeps its record's word this pass;
//   3. builds core's NodeFacts for each node id of each spec (core/reconcile.h): the
//      record, what the list said, what its agents' notice.watch streams say
//      (NoticeWatch), the idle verdict of the last metrics round, the losses, ttl
//      warnings and deliberate deletes of its events; and the fleet's BudgetState from
//      the spend ledger (core/ledger.h), whose stretches it opens and closes as it sees
//      the nodes' billable states;
//   4. decides with DecideNode and acts: recover or create (Recovery: up's node steps on
//      this loop, then the node's restartable jobs), delete (a husk, ttl, idle, budget),
//      stop (idle, a single-host node: nodes.stop, then its record says STOPPED), warn
//      of a ttl (wall on the workers), hold (the budget); a node with an action in
//      flight is left to it;
//   5. keeps the restartable jobs of each node that is up, answering and not under
//      maintenance (the jobs round, reconciler_jobs.cc; core/job_keep.h decides): at
//      serve's first sight of the node, once a maintenance of it is over, and every
//      kJobCheckEvery, its agents are asked, and a job a reboot killed (or that a
//      remade node does not have) is restarted, a succeeded one's record ended;
//   6. writes the ServeRecord heartbeat and publishes the ServeView snapshot.
// Every decision comes from the store and the cloud, never from what an earlier pass
// remembered, so a serve killed at any point and started again converges: a recovery's
// steps resume from the records as a killed `up`'s do.
//
// A listing the API refuses (401, 403: a credential revoked, a role taken away) is one
// warning per pass, the same words while it lasts (serve logs it once, and "no longer: "
// when it ends), and the nodes that were not listed because of it are left alone: no
// delete, no create, on what the records alone say, until a listing succeeds again.
//
// Mutations take the state lock (World::state_lock) for their duration, one hold shared
// by every action in flight. While a CLI command holds it, the pass takes no action,
// warns "waiting for …" and tries again next pass.
//
// A metrics round (control/fleet_metrics.h: the idle verdicts of nodes with an idle
// policy, and the usage of every node whose agents all answer, added to the store for
// goodput, core/goodput.h) runs every ReconcilerOptions::metrics_every; it is one
// blocking fan-out call
// of at most kMetricsCallTimeout, made between the loop's turns. So are a jobs round's
// calls (a job list, and a restart's start on the node's workers).
//
// Thread-safety: the loop's thread calls everything but Snapshot, which any thread may
// call (the HTTP server's).
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "control/up.h"
#include "control/world.h"
#include "core/catalog.h"
#include "core/fleet_spec.h"
#include "core/ledger.h"
#include "core/reconcile.h"
#include "reconcile/api_pacer.h"
#include "reconcile/notices.h"
#include "reconcile/recovery.h"
#include "reconcile/serve_view.h"
#include "util/event_loop.h"

namespace tpufleet {

/// serve's default pass: a preemption the API reports (rather than the agents) is seen
/// within this, and 10 zones listed every pass stay under kDefaultApiCallsPerMinute.
inline constexpr std::chrono::seconds kDefaultPass{5};
/// How often the idle verdicts and the nodes' usage are asked for: idle policies are
/// minutes long, a round measures the agents' last minute, and it costs every watched
/// worker an agent call.
inline constexpr std::chrono::seconds kDefaultMetricsEvery{30};
/// A node whose action failed (a recovery that stocked out everywhere, a delete the API
/// refused) is not acted on again for this long: the pass goes on every 5 s, the
/// cloud's answer would not change that fast, and the API budget is better spent listing.
inline constexpr std::chrono::seconds kActionRetry{30};
/// How often the jobs round asks a node's agents about its restartable jobs when
/// nothing says it must sooner (a maintenance ended, serve started): a job killed by a
/// reboot serve did not see is restarted within this.
inline constexpr std::chrono::seconds kJobCheckEvery{20};
/// A jobs round that could not ask every worker of a node tries again this much later.
inline constexpr std::chrono::seconds kJobCheckRetry{3};
/// wall's message to logged-in users before a ttl delete gets this long on each worker.
inline constexpr std::chrono::seconds kWallTimeout{10};

struct ReconcilerOptions {
  std::chrono::seconds pass = kDefaultPass;          // between passes
  int api_calls_per_minute = kDefaultApiCallsPerMinute;  // ApiPacer's cap
  std::chrono::seconds metrics_every = kDefaultMetricsEvery;  // idle rounds
  std::chrono::seconds ttl_warning = kDefaultTtlWarning;      // wall before a ttl delete
  UpOptions up;                                      // the recoveries' node steps
  /// The heartbeat row: pid, host and started_at as the caller (serve's command) knows
  /// them; each pass writes it with the fleets and last_pass_at.
  ServeRecord serve;
};

/// One line of serve's log: which node (both "" for serve itself) and what happened,
/// "preempted (all 4 agents' notice; api READY) → recovering". The caller adds the time.
using ServeLog = std::function<void(const std::string& fleet, const std::string& node,
                                    const std::string& message)>;

class Reconciler final : public ServeView {
 public:
  /// `world` is the caller's; the reconciler wraps its providers to count and pace
  /// their calls. REQUIRES: world, catalog and loop outlive it.
  Reconciler(World& world, const Catalog& catalog, EventLoop& loop, ReconcilerOptions options,
             ServeLog log);
  ~Reconciler() override;
  Reconciler(const Reconciler&) = delete;
  Reconciler& operator=(const Reconciler&) = delete;

  /// The fleets to keep (at start, and at each reload); actions in flight keep the
  /// spec they started with.
  void SetFleets(std::vector<FleetSpec> fleets);
  /// Runs a pass now and then every options.pass, until destroyed.
  void Start();
  /// One pass now (what the timer runs). `serve --once`: Pass(), then turn the loop
  /// until !busy() (the actions it started have ended).
  void Pass();
  /// True while an action (a recovery, a delete, a stop) is in flight.
  bool busy() const { return !actions_.empty(); }

  ServeSnapshot Snapshot() const override { return view_.Snapshot(); }

 private:
  class Action;
  class Stepping;
  class Deleting;
  class Stopping;
  class Recovering;
  struct Listing;   // one (provider, zone)'s last list
  struct FleetPass;  // what one pass knows of one fleet

  // The pass's steps (reconciler.cc).
  void ListZones(std::vector<FleetPass>& fleets);
  NodeFacts Facts(const FleetPass& fp, const std::string& node, const NodeSpec& spec,
                  const CloudNode** cloud);
  void Heard(const std::string& fleet, const std::string& node);
  void Ledger(FleetPass& fp, const std::string& node, const NodeFacts& facts,
              const CloudNode* cloud);
  // Records the pass begun at (began, CPU time cpu) as the last one, then publishes.
  void EndPass(double cpu, Clock::MonoTime began);
  void Publish();
  // The metrics round (reconciler_metrics.cc).
  void MetricsRound();
  // Adds to the store what the agents of `node` said in a metrics round at `now`.
  void AddUsage(const std::string& fleet, const std::string& node,
                const std::vector<std::optional<WindowSummary>>& windows, Clock::WallTime now);
  // The jobs round of one node (reconciler_jobs.cc).
  void KeepJobs(const std::string& fleet, const std::string& node);
  // The actions (reconciler_actions.cc).
  void Act(const FleetPass& fp, const std::string& node, const NodeFacts& facts,
           const NodeDecision& d);
  Result<LockHold> Lock();
  // The state lock for an action on `node`, with its `kind` event recorded; nullopt,
  // with a warning, when either cannot be had (the pass tries again).
  std::optional<LockHold> Begin(const std::string& fleet, const std::string& node,
                                const std::string& kind, const std::string& detail);
  void StartRecovery(const FleetPass& fp, const std::string& node, const NodeFacts& facts,
                     const NodeDecision& d);
  void StartDelete(const FleetPass& fp, const std::string& node, const NodeFacts& facts,
                   const NodeDecision& d);
  void StartStop(const FleetPass& fp, const std::string& node, const NodeFacts& facts,
                 const NodeDecision& d);
  Status RecordStopped(const std::string& fleet, const std::string& node);
  void WarnTtl(const FleetPass& fp, const std::string& node, const NodeDecision& d);
  void Ended(const std::string& key, const Status& status);
  void Recovered(const RecoveryOutcome& outcome);
  Status Event(const std::string& fleet, const std::string& node, const std::string& kind,
               const std::string& detail);
  void Warn(const std::string& line);
  // A refused credential (reconciler_credentials.cc).
  void ListingFailed(const FleetPass& fp, const std::string& what, const Status& status);
  bool Refused(const FleetPass& fp, const NodeFacts& facts) const;

  World& base_;
  const Catalog& catalog_;
  EventLoop& loop_;
  const ReconcilerOptions options_;
  ServeLog log_;
  ApiPacer pacer_;
  CountingProviders providers_;
  World world_;  // base_ with providers_
  NoticeWatch notices_;
  PublishedServeView view_;

  std::vector<std::shared_ptr<const FleetSpec>> fleets_;
  std::map<std::string, Listing> listings_;      // by "provider zone [queued]"
  std::map<std::string, std::unique_ptr<Action>> actions_;  // by "fleet/node"
  std::map<std::string, Clock::MonoTime> retry_after_;      // by "fleet/node"
  std::map<std::string, std::string> last_reason_;          // by "fleet/node": logged once
  std::set<std::string> maintenance_;  // "fleet/node" under maintenance: the event recorded
  std::set<std::string> budget_reached_;  // fleets whose budget-reached event is recorded
  /// Fleets whose spec is recorded in the store since SetFleets (control/fleet_owner.h).
  std::set<std::string> recorded_fleets_;
  /// The last metrics round's idle verdicts, by "fleet/node".
  std::map<std::string, std::optional<Clock::WallTime>> idle_since_;
  std::map<std::string, bool> in_use_;
  /// Until when each node's usage is in the store, by "fleet/node".
  std::map<std::string, Clock::WallTime> usage_until_;
  std::optional<Clock::MonoTime> last_metrics_;
  /// When the jobs round may next ask a node's agents, by "fleet/node"; none: at once.
  std::map<std::string, Clock::MonoTime> jobs_due_;
  std::weak_ptr<void> lock_;                      // the hold the actions share
  std::vector<std::string> warnings_;            // this pass's
  std::set<const CloudProvider*> refused_;       // whose credentials a listing refused, this pass
  ServeSnapshot counters_;                       // the totals kept across passes
  EventLoop::Id timer_ = 0;
  EventLoop::Id soon_ = 0;                       // a pass asked for by a notice
};

}  // namespace tpufleet
