// The Reconciler's pass: records, paced listings, facts, the ledger, the heartbeat and
// the snapshot. What it does about a decision is reconciler_actions.cc's; its jobs and
// metrics rounds are reconciler_jobs.cc's and reconciler_metrics.cc's.
#include "reconcile/reconciler.h"

#include <time.h>

#include <algorithm>

#include "control/fleet_owner.h"
#include "control/fleet_status.h"
#include "core/up_plan.h"
#include "reconcile/reconciler_internal.h"
#include "util/strings.h"

namespace tpufleet {
namespace {

double ProcessCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

// Whether an event's key=value detail has `pair` ("reason=ttl").
bool Says(const EventRecord& e, const std::string& pair) {
  std::vector<std::string> parts = Split(e.detail, ' ');
  return std::find(parts.begin(), parts.end(), pair) != parts.end();
}

// Why the node was deleted on purpose with no create since (NodeFacts::retired), from
// its events, newest first: serve's own delete-requested says why; a `deleted` with no
// serve reason before it was `down`'s.
std::string Retired(const std::vector<EventRecord>& events) {
  bool deleted = false;
  for (auto e = events.rbegin(); e != events.rend(); ++e) {
    if (e->kind == "create-requested") {
      return "";
    }
    if (e->kind == "deleted") {
      deleted = true;
    } else if (e->kind == "delete-requested") {
      for (const char* why : {"ttl", "idle", "budget"}) {
        if (Says(*e, std::string("reason=") + why)) {
          return why;
        }
      }
      return "";  // a husk: its recovery (or the budget's hold) follows
    }
  }
  return deleted ? "down" : "";
}

// Every worker recorded and set up (WorkerRecord::setup_done): up's steps ran to their end.
bool SetUp(const NodeRecord& r) {
  return !r.workers.empty() && std::all_of(r.workers.begin(), r.workers.end(),
                                           [](const WorkerRecord& w) { return w.setup_done; });
}

}  // namespace

Reconciler::Reconciler(World& world, const Catalog& catalog, EventLoop& loop,
                       ReconcilerOptions options, ServeLog log)
    : base_(world), catalog_(catalog), loop_(loop), options_(std::move(options)),
      log_(std::move(log)), pacer_(world.clock, options_.api_calls_per_minute),
      providers_(world.providers, pacer_),
      world_{world.store, world.clock,     providers_,      world.ssh,
             world.fanout, world.local_fanout, world.keys, world.ssh_files,
             world.forwarder, world.paths, world.login, world.state_lock},
      notices_(world_, loop, [this](const std::string& f, const std::string& n) { Heard(f, n); }) {}

Reconciler::~Reconciler() {
  loop_.Remove(timer_);
  loop_.Remove(soon_);
}

void Reconciler::SetFleets(std::vector<FleetSpec> fleets) {
  fleets_.clear();
  recorded_fleets_.clear();
  for (FleetSpec& f : fleets) {
    fleets_.push_back(std::make_shared<const FleetSpec>(std::move(f)));
  }
}

void Reconciler::Start() {
  Pass();
  timer_ = loop_.Every(options_.pass, [this](Clock::MonoTime) { Pass(); });
}

void Reconciler::Heard(const std::string& fleet, const std::string& node) {
  if (soon_ == 0) {
    log_(fleet, node, "an agent's notice changed: deciding now");
    soon_ = loop_.After(std::chrono::nanoseconds::zero(), [this](Clock::MonoTime) {
      soon_ = 0;
      Pass();
    });
  }
}

void Reconciler::Warn(const std::string& line) {
  warnings_.push_back(line);
}

Status Reconciler::Event(const std::string& fleet, const std::string& node,
                         const std::string& kind, const std::string& detail) {
  return world_.store.AddEvent({0, world_.clock.Now(), fleet, node, kind, detail});
}

void Reconciler::Pass() {
  double cpu = ProcessCpuSeconds();
  Clock::MonoTime began = world_.clock.MonotonicNow();
  warnings_.clear();
  Result<std::vector<NodeRecord>> all = world_.store.Nodes("");
  if (!all.ok()) {
    Warn("cannot read the state store: " + all.status().message());
    EndPass(cpu, began);
    return;
  }
  std::vector<FleetPass> fps;
  for (const std::shared_ptr<const FleetSpec>& spec : fleets_) {
    if (spec->provider == Provider::kSshHosts) {
      continue;  // serve never creates or deletes those machines
    }
    Result<CloudProvider*> provider = world_.providers.ForFleet(*spec);
    if (!provider.ok()) {
      Warn(spec->name + ": " + provider.status().message());
      continue;
    }
    FleetPass fp;
    fp.spec = spec;
    fp.provider = *provider;
    for (const NodeRecord& r : *all) {
      if (r.fleet == spec->name) {
        fp.records.push_back(r);
      }
    }
    fp.zones = PlanZones(*spec, fp.records);
    fps.push_back(std::move(fp));
  }
  ListZones(fps);

  Clock::WallTime now = world_.clock.Now();
  std::vector<NodeRecord> watched;
  ServeSnapshot counts;
  for (FleetPass& fp : fps) {
    const FleetSpec& fleet = *fp.spec;
    if (!recorded_fleets_.count(fleet.name)) {
      if (Status s = RecordFleet(world_.store, fleet, world_.login, now); s.ok()) {
        recorded_fleets_.insert(fleet.name);
      } else {
        Warn(fleet.name + ": cannot record the fleet's owner and budget: " + s.message());
      }
    }
    std::optional<Clock::WallTime> since;
    if (!fleet.budget || !fleet.budget->usd_total) {
      since = UtcDayStart(now);  // only today's spend matters (and is shown)
    }
    Result<std::vector<SpendRecord>> spend = world_.store.Spend(fleet.name, since);
    if (!spend.ok()) {
      Warn(fleet.name + ": cannot read the spend ledger: " + spend.status().message());
      continue;  // no budget known: no create, no delete this pass
    }
    fp.budget = CheckBudget(fleet.budget, *spend, now);
    for (const SpendRecord& s : *spend) {
      if (!s.end) {
        fp.open.push_back(s);
      } else if (Clock::WallTime& last = fp.last_end[s.node]; *s.end > last) {
        last = *s.end;
      }
    }
    if (since) {
      for (const NodeSpec& ns : fleet.nodes) {
        for (const std::string& name : ns.names) {
          fp.last_end.try_emplace(name, *since);  // what came before was not read
        }
      }
    }
    if (fp.budget.reached) {
      // The warning stays the same while the limit holds (serve logs what is new); the
      // amounts go into the event, once per time the limit is reached.
      Warn(fleet.name + ": budget reached (" + fp.budget.why.substr(0, fp.budget.why.find(':')) +
           "): creating nothing");
      if (budget_reached_.insert(fleet.name).second) {
        if (Status s = Event(fleet.name, "", "budget-reached", fp.budget.why); !s.ok()) {
          Warn(fleet.name + ": cannot record the budget event: " + s.message());
        }
        log_(fleet.name, "", "budget reached: " + fp.budget.why);
      }
    } else {
      budget_reached_.erase(fleet.name);
    }
    counts.spend_usd[fleet.name] = fp.budget.spent_day;
    for (const NodeSpec& ns : fleet.nodes) {
      for (const std::string& name : ns.names) {
        std::string key = NodeKey(fleet.name, name);
        const CloudNode* cloud = nullptr;
        NodeFacts facts = Facts(fp, name, ns, &cloud);
        Ledger(fp, name, facts, cloud);
        if (auto acting = actions_.find(key); acting != actions_.end()) {
          ++counts.nodes_by_state[fleet.name][acting->second->shown];
          continue;
        }
        if (Refused(fp, facts)) {  // as its record says, its agents still heard
          if (facts.record) {
            ++counts.nodes_by_state[fleet.name][facts.record->state.Name()];
            if (facts.record->state.IsUsable() && !facts.record->workers.empty()) {
              watched.push_back(*facts.record);
            }
          }
          continue;
        }
        // A node made but never set up (its create or recovery cut short: a killed serve
        // or `up`) is finished by up's steps, which adopt it or wait for it.
        // So is one whose steps failed after its create (a setup cut by a storm or a
        // cut-off worker): its workers are recorded, not all set up.
        bool unfinished = facts.record && cloud && !cloud->state.IsGone() &&
                          cloud->state != NodeState::kDeleting && facts.retired.empty() &&
                          (facts.record->state.IsInFlight() || !SetUp(*facts.record));
        if (facts.record && cloud && !unfinished) {
          // status shows what serve last saw; the workers' streams, jobs and logins
          // follow a worker to its new address after a maintenance.
          NodeRecord r = *facts.record;
          bool moved = cloud->state.IsUsable() && TakeAddresses(*cloud, r);
          if (moved || r.state != cloud->state || r.data_disks != cloud->data_disks) {
            r.state = cloud->state;
            r.health = cloud->health;
            r.data_disks = cloud->data_disks;
            r.updated_at = now;
            if (Status s = world_.store.PutNode(r); !s.ok()) {
              Warn(name + ": cannot update its record: " + s.message());
            } else {
              facts.record = r;
            }
          }
        }
        NodeDecision d;
        if (unfinished) {
          d.action = NodeAction::kCreate;
          d.capacity = ns.capacity;
          d.reason = "listed " + cloud->state.Name() + " but never set up (a create cut "
                     "short): finishing it";
        } else {
          d = DecideNode(facts, fp.budget, now, options_.ttl_warning);
        }
        if (last_reason_[key] != d.reason && !d.reason.empty()) {
          log_(fleet.name, name, d.reason);
        }
        last_reason_[key] = d.reason;
        if (d.maintenance.empty()) {
          maintenance_.erase(key);
        } else if (jobs_due_.erase(key), maintenance_.insert(key).second) {
          if (Status s = Event(fleet.name, name, "maintenance", "signal=" + d.maintenance);
              !s.ok()) {
            Warn(name + ": cannot record its maintenance: " + s.message());
          }
        }
        Act(fp, name, facts, d);
        if (auto acting = actions_.find(key); acting != actions_.end()) {
          ++counts.nodes_by_state[fleet.name][acting->second->shown];
          continue;
        }
        NodeState state = cloud ? cloud->state
                                : (facts.record ? facts.record->state : NodeState::kNone);
        if (facts.listed && !cloud && !facts.queued_resource) {
          state = NodeState::kNone;
        }
        if (state != NodeState::kNone) {
          ++counts.nodes_by_state[fleet.name][state.Name()];
        }
        if (facts.record && state.IsUsable() && !facts.record->workers.empty()) {
          watched.push_back(*facts.record);
        }
        // Its jobs, once every worker's agent answers (a worker still booting would
        // hold the loop for a connect timeout).
        if (cloud && state.IsUsable() && d.action == NodeAction::kNone && d.maintenance.empty() &&
            facts.workers > 0 && facts.workers_preempted == 0 &&
            notices_.Of(fleet.name, name).answering == facts.workers) {
          KeepJobs(fleet.name, name);
        }
      }
    }
  }
  notices_.Watch(watched);
  Clock::MonoTime mono = world_.clock.MonotonicNow();
  if (!last_metrics_ || mono - *last_metrics_ >= options_.metrics_every) {
    last_metrics_ = mono;
    MetricsRound();
  }
  ServeRecord beat = options_.serve;
  for (const std::shared_ptr<const FleetSpec>& f : fleets_) {
    beat.fleets.push_back(f->name);
  }
  beat.last_pass_at = world_.clock.Now();
  if (Status s = world_.store.PutServe(beat); !s.ok()) {
    Warn("cannot write serve's heartbeat: " + s.message());
  }
  counters_.nodes_by_state = std::move(counts.nodes_by_state);
  counters_.spend_usd = std::move(counts.spend_usd);
  ++counters_.passes;
  counters_.last_pass = beat.last_pass_at;
  EndPass(cpu, began);
}

// Lists the zones that waited longest first, while the API budget allows.
void Reconciler::ListZones(std::vector<FleetPass>& fps) {
  struct Want {
    FleetPass* fp;
    std::string zone;
    bool queued;
    std::string key;
  };
  std::vector<Want> wants;
  std::set<std::string> seen;
  for (FleetPass& fp : fps) {
    for (bool queued : {false, true}) {
      for (const std::string& zone : queued ? fp.zones.queued : fp.zones.nodes) {
        std::string key = fp.ListingKey(zone, queued);
        if (seen.insert(key).second) {
          wants.push_back({&fp, zone, queued, key});
        }
      }
    }
  }
  for (auto& [key, l] : listings_) {
    l.this_pass = false;
  }
  refused_.clear();
  std::stable_sort(wants.begin(), wants.end(), [&](const Want& a, const Want& b) {
    return listings_[a.key].listed < listings_[b.key].listed;
  });
  for (const Want& w : wants) {
    if (!pacer_.MayCall()) {
      break;
    }
    Listing& l = listings_[w.key];
    if (w.queued) {
      Result<std::vector<CloudQueuedResource>> got = w.fp->provider->ListQueuedResources({w.zone});
      if (!got.ok()) {
        ListingFailed(*w.fp, "queued resources in " + w.zone, got.status());
        continue;
      }
      l.queued = std::move(*got);
    } else {
      Result<std::vector<CloudNode>> got = w.fp->provider->ListNodes({w.zone});
      if (!got.ok()) {
        ListingFailed(*w.fp, w.zone, got.status());
        continue;
      }
      l.nodes = std::move(*got);
      l.before = l.at;
      l.at = world_.clock.Now();
    }
    l.this_pass = true;
    l.listed = world_.clock.MonotonicNow();
  }
}

NodeFacts Reconciler::Facts(const FleetPass& fp, const std::string& node, const NodeSpec& spec,
                            const CloudNode** cloud) {
  const FleetSpec& fleet = *fp.spec;
  NodeFacts f;
  f.spec = &spec;
  for (const NodeRecord& r : fp.records) {
    if (r.name == node) {
      f.record = r;
    }
  }
  std::vector<std::string> zones = spec.zones;
  if (f.record && !f.record->zone.empty()) {
    zones = {f.record->zone};
  }
  f.listed = true;
  for (const std::string& zone : zones) {
    auto l = listings_.find(fp.ListingKey(zone, false));
    if (l == listings_.end() || !l->second.this_pass) {
      f.listed = false;
      continue;
    }
    for (const CloudNode& n : l->second.nodes) {
      if (n.id == node) {
        *cloud = &n;
        auto label = n.labels.find(kFleetLabel);
        f.cloud = CloudSighting{n.id, n.zone, n.state,
                                label == n.labels.end() ? "" : label->second};
        f.cloud_health = n.health;
      }
    }
    // Its queued resource as last listed, this pass or an earlier one (the pacer may
    // list a zone's nodes and its queued resources in different passes): without it, a
    // node its queued resource no longer holds (SUSPENDED) would look vanished.
    auto q = listings_.find(fp.ListingKey(zone, true));
    if (q != listings_.end() && q->second.listed != Clock::MonoTime{}) {
      for (const CloudQueuedResource& r : q->second.queued) {
        if (r.id == node) {
          f.queued_resource = CloudSighting{r.id, r.zone, r.state, fleet.name};
        }
      }
    }
  }
  NodeNotices heard = notices_.Of(fleet.name, node);
  f.workers = heard.workers;
  f.workers_preempted = heard.preempted;
  f.workers_maintenance = heard.maintenance;
  f.workers_unreachable = heard.unreachable;
  std::string key = NodeKey(fleet.name, node);
  if (auto it = idle_since_.find(key); it != idle_since_.end()) {
    f.idle_since = it->second;
    f.in_use = in_use_[key];
  }
  EventQuery q;
  q.fleet = fleet.name;
  q.node = node;
  q.limit = 200;  // a node's recent history: what the rules below look back on
  Result<std::vector<EventRecord>> events = world_.store.Events(q);
  if (events.ok()) {
    Clock::WallTime now = world_.clock.Now();
    for (const EventRecord& e : *events) {
      if (spec.spot_fallback && (e.kind == "preempted" || e.kind == "stockout") &&
          e.time >= now - spec.spot_fallback->within) {
        ++f.recent_losses;
      }
      if (e.kind == "ttl-warned" && f.record && e.time >= f.record->created_at) {
        f.ttl_warned = true;
      }
    }
    f.retired = Retired(*events);
  }
  return f;
}

// Opens and closes the node's ledger stretches as its listed state changes.
void Reconciler::Ledger(FleetPass& fp, const std::string& node, const NodeFacts& facts,
                        const CloudNode* cloud) {
  if (!facts.listed) {
    return;  // nothing new was seen of it
  }
  Clock::WallTime now = world_.clock.Now();
  // When the node's new state began, if not now. A node made since the list before
  // (gone and made again between two passes, or new) began at its create, the API's
  // createTime, which is what the cloud bills from; the one it replaced was gone by then.
  Clock::WallTime start = now;
  std::optional<Clock::WallTime> made;
  if (cloud && cloud->create_time && *cloud->create_time < now) {
    // To the store's microsecond, so that a stretch begun at it compares equal to it
    // when read back (the API gives nanoseconds).
    made = std::chrono::floor<std::chrono::microseconds>(*cloud->create_time);
  }
  auto open = std::find_if(fp.open.begin(), fp.open.end(),
                           [&](const SpendRecord& s) { return s.node == node; });
  if (open != fp.open.end()) {
    if (cloud && open->state == cloud->state.Name() && open->cloud_name == cloud->cloud_name) {
      return;
    }
    if (made && *made > open->start) {
      start = *made;  // made again since this stretch opened
    }
    open->end = start;
    if (Result<int64_t> put = world_.store.PutSpend(*open); !put.ok()) {
      Warn(node + ": cannot close its ledger stretch: " + put.status().message());
      return;
    }
    fp.open.erase(open);
  } else if (made) {
    // Never before the list that did not show it (none yet: serve just started, and
    // the node may be days old), nor before its last stretch ended.
    auto listing = listings_.find(fp.ListingKey(cloud->zone, false));
    if (listing != listings_.end() && listing->second.before) {
      start = std::max(*made, *listing->second.before);
      if (auto last = fp.last_end.find(node); last != fp.last_end.end()) {
        start = std::min(std::max(start, last->second), now);
      }
    }
  }
  if (!cloud) {
    return;  // gone: it bills no more
  }
  SpendRecord s;
  s.fleet = fp.spec->name;
  s.node = node;
  s.cloud_name = cloud->cloud_name;
  s.zone = cloud->zone;
  s.type = cloud->type;
  s.capacity = std::string(CapacityName(cloud->capacity));
  s.state = cloud->state.Name();
  s.usd_per_hour = PriceFor(catalog_, cloud->type, cloud->zone, cloud->capacity);
  s.start = start;
  s.owner = FleetOwner(*fp.spec, world_.login);
  if (Result<int64_t> id = world_.store.PutSpend(s); id.ok()) {
    s.id = *id;
    fp.open.push_back(s);
  } else {
    Warn(node + ": cannot open its ledger stretch: " + id.status().message());
  }
}

void Reconciler::EndPass(double cpu, Clock::MonoTime began) {
  counters_.last_pass_cpu_seconds = ProcessCpuSeconds() - cpu;
  counters_.last_pass_wall_seconds =
      std::chrono::duration<double>(world_.clock.MonotonicNow() - began).count();
  Publish();
}

void Reconciler::Publish() {
  ServeSnapshot s = counters_;
  s.api_calls = pacer_.calls();
  s.warnings = warnings_;
  view_.Publish(std::move(s));
}

}  // namespace tpufleet
