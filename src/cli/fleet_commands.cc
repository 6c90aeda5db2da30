// up, status, down and import: the commands that act on a fleet through `control`.
#include <algorithm>
#include <istream>
#include <mutex>
#include <ostream>

#include "api/fleet.h"
#include "cli/app.h"
#include "cli/command.h"
#include "cli/fleet_world.h"
#include "cli/job_output.h"
#include "cli/json_reports.h"
#include "cli/progress_view.h"
#include "cli/table.h"
#include "control/down.h"
#include "control/fleet_metrics.h"
#include "control/fleet_status.h"
#include "control/import.h"
#include "control/up.h"
#include "control/visible.h"
#include "util/strings.h"

namespace tpufleet::cli {
namespace {

ProgressView::Mode ModeFor(const Invocation& inv) {
  if (inv.json) {
    return ProgressView::Mode::kQuiet;
  }
  return inv.terminal.out_is_terminal ? ProgressView::Mode::kLive : ProgressView::Mode::kLines;
}

// Prints the failures after a run; returns whether all succeeded.
bool ReportOutcomes(Invocation& inv, const std::vector<NodeOutcome>& outcomes) {
  bool all_ok = true;
  for (const NodeOutcome& o : outcomes) {
    for (const std::string& w : o.warnings) {
      if (!inv.json) {
        inv.err << "tpufleet: warning: " << TerminalText(o.node + ": " + w) << "\n";
      }
    }
    if (!o.status.ok()) {
      all_ok = false;
      if (!inv.json) {
        inv.err << "tpufleet: " << TerminalText(o.node + ": " + o.status.message()) << "\n";
      }
    }
  }
  return all_ok;
}

// Names come from the cloud: TerminalText, as for every such text printed for people.
std::string LeftoverWhat(const LeftoverRecord& x) {
  return TerminalText(std::string(x.queued ? "queued resource " : "node ") + x.name + " in " +
                      x.zone + " (left by a " + x.reason + " create)");
}

// Says what became of the leftovers tried and which untracked nodes were seen; returns
// whether every leftover tried is gone.
bool ReportLeftovers(Invocation& inv, const std::vector<LeftoverOutcome>& tried,
                     const std::vector<UntrackedNode>& untracked) {
  bool all_gone = true;
  for (const LeftoverOutcome& o : tried) {
    all_gone = all_gone && o.status.ok();
    if (inv.json) {
      continue;
    }
    if (o.status.ok()) {
      inv.out << "deleted leftover " << LeftoverWhat(o.leftover) << ".\n";
    } else {
      inv.err << "tpufleet: leftover " << LeftoverWhat(o.leftover)
              << " could not be deleted and still bills: " << TerminalText(o.status.message())
              << "; the next up or down tries again\n";
    }
  }
  if (!inv.json) {
    for (const UntrackedNode& u : untracked) {
      inv.err << "tpufleet: " << TerminalText(UntrackedMessage(u)) << "\n";
    }
  }
  return all_gone;
}

ExitStatus PrintPlan(Invocation& inv, const UpPlan& plan) {
  const std::vector<NodePlan>& plans = plan.nodes;
  api::UpPlan wire = ToApi(plan);
  if (inv.json) {
    inv.out << api::ToJson(wire) << "\n";
    return ExitStatus::kOk;
  }
  TextTable t({"NODE", "ACTION", "ZONE", "TYPE", "CAPACITY", "USD/HOUR", "NOTE"});
  for (const NodePlan& p : plans) {
    std::string zones = p.zones.empty() ? "-" : p.zones.front();
    if (p.action == PlanAction::kCreate && p.zones.size() > 1) {
      zones += " (then " + Join({p.zones.begin() + 1, p.zones.end()}, ", ") + ")";
    }
    bool spot = p.spec->capacity == Capacity::kSpot;
    t.AddRow({p.node, std::string(PlanActionName(p.action)), zones,
              p.spec->type.empty() ? "-" : p.spec->type, std::string(CapacityName(p.spec->capacity)),
              p.usd_per_hour > 0 ? (spot ? "<= " : "") + FormatUsd(p.usd_per_hour) : "-",
              p.detail.empty() ? p.state.Name() : p.detail});
  }
  t.Print(inv.out);
  for (const LeftoverRecord& x : plan.leftovers) {
    inv.out << "leftover: " << LeftoverWhat(x) << " is still to delete; up deletes it first.\n";
  }
  for (const UntrackedNode& u : plan.untracked) {
    inv.out << TerminalText(UntrackedMessage(u)) << "\n";
  }
  double total = wire.usd_per_hour;
  inv.out << "\nThe fleet costs " << (total > 0 ? FormatUsd(total) : "-")
          << " per hour at list prices (spot: at most). Nothing was changed (--dry-run).\n";
  return ExitStatus::kOk;
}

}  // namespace

Result<std::unique_ptr<WorldHandle>> OpenWorld(Invocation& inv, bool exclusive) {
  if (!inv.app.open_world) {
    return InternalError("this build of tpufleet has no fleet state (no world factory)");
  }
  return inv.app.open_world(inv, exclusive);
}

ExitStatus RunUp(Invocation& inv) {
  if (inv.args.positional.size() != 1) {
    return UsageError(inv, "up needs exactly one fleet spec, e.g. tpufleet up fleet.yaml");
  }
  std::optional<std::chrono::seconds> timeout =
      DurationFlag(inv, "timeout", UpOptions{}.timeout);
  if (!timeout) {
    return ExitStatus::kUsage;
  }
  Result<FleetSpec> spec = inv.LoadFleetSpec(inv.args.positional[0]);
  if (!spec.ok()) {
    return Fail(inv, spec.status());
  }
  // A fleet nobody administers yet is the operator's to bring up.
  if (Status s = RequireAdminOf(inv, spec->name, "up"); !s.ok()) {
    return Fail(inv, s);
  }
  Result<const Catalog*> catalog = inv.LoadCatalog();
  if (!catalog.ok()) {
    return Fail(inv, catalog.status());
  }
  bool dry_run = inv.args.Has("dry-run");
  Result<std::unique_ptr<WorldHandle>> handle = OpenWorld(inv, !dry_run);
  if (!handle.ok()) {
    return Fail(inv, handle.status());
  }
  World& world = (*handle)->world();
  if (dry_run) {
    Result<UpPlan> plans = PlanUp(*spec, **catalog, world);
    if (!plans.ok()) {
      return Fail(inv, plans.status());
    }
    return PrintPlan(inv, *plans);
  }

  UpOptions options;
  options.timeout = *timeout;
  // A team server's caller applies the spec as themselves; its operator and a local
  // user as the local login.
  if (!inv.access.everything()) {
    options.person = inv.access.who();
  }
  // An ssh-hosts host key not in the user's known_hosts: pinned with --yes, asked about
  // at a terminal, refused otherwise (the node's failure says how to pin it).
  std::mutex ask_mu;
  if (inv.args.Has("yes")) {
    options.confirm_host_key = [&inv, &ask_mu](const HostKeyQuestion& q) {
      std::lock_guard<std::mutex> l(ask_mu);
      inv.err << "Pinning the host key of " << q.address << " (" << q.node << ":" << q.worker
              << "), " << q.fingerprint << ", as --yes says.\n";
      return true;
    };
  } else if (inv.terminal.in != nullptr) {
    options.confirm_host_key = [&inv, &ask_mu](const HostKeyQuestion& q) {
      std::lock_guard<std::mutex> l(ask_mu);
      inv.err << "\nThe host key of " << q.address << " port " << q.port << " (" << q.node
              << ":" << q.worker << ") is not in your known_hosts.\nIt offers "
              << q.fingerprint << ". Check it with the machine's admin, or on the machine "
              << "with `ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub`.\nPin it? [y/N] "
              << std::flush;
      std::string answer;
      std::getline(*inv.terminal.in, answer);
      return Trim(answer) == "y" || Trim(answer) == "yes";
    };
  }
  ProgressView view(inv.out, ModeFor(inv));
  Result<UpReport> report = Up(*spec, **catalog, world, options, view);
  if (!report.ok()) {
    return Fail(inv, report.status());
  }
  bool all_ok = ReportOutcomes(inv, report->nodes);
  all_ok = ReportLeftovers(inv, report->leftovers, report->untracked) && all_ok;
  if (inv.json) {
    inv.out << api::ToJson(ToApi(*report, spec->name, world.paths.ssh_dir + "/config")) << "\n";
  } else {
    size_t changed = 0;
    size_t ready = 0;
    for (const NodeOutcome& o : report->nodes) {
      changed += o.changed ? 1 : 0;
      ready += o.status.ok() ? 1 : 0;
    }
    inv.out << "\n" << ready << " of " << report->nodes.size() << " nodes ready"
            << (changed == 0 ? "; nothing changed" : "; " + std::to_string(changed) + " changed")
            << ".\n";
    for (const std::string& name : report->not_in_spec) {
      inv.out << "note: " << name << " is in fleet " << spec->name
              << " but no longer in the spec; `tpufleet down " << name << "` deletes it.\n";
    }
    for (const LeftoverRecord& x : report->leftovers_left) {
      inv.out << "note: leftover " << LeftoverWhat(x)
              << " is still to be deleted; the next up or down tries again.\n";
    }
    if (ready > 0 && inv.served) {
      inv.out << "SSH names for new nodes: `tpufleet join` again where you joined this team "
                 "server (docs/users.md).\n";
    } else if (ready > 0) {
      const std::string& first = report->nodes.front().node;
      inv.out << "Log in with `ssh " << first << "` (worker 0; " << first
              << "-wN is worker N); the names come from " << world.paths.ssh_dir
              << "/config.\n";
    }
  }
  return all_ok ? ExitStatus::kOk : ExitStatus::kFailure;
}

// status asks the nodes' agents for their verdicts with these: an agent answers metrics
// from the snapshot it holds in milliseconds, over a connection the holder keeps warm;
// a node that does not answer this quickly is "unknown" rather than make status wait.
// `status --json` makes no round at all: it stays the answer from local state.
constexpr std::chrono::milliseconds kStatusConnectTimeout{1000};
constexpr std::chrono::milliseconds kStatusMetricsTimeout{1500};

// Each node's verdict, by name, from one short metrics round to the workers of the
// nodes whose agent `up` installed; none (and no round) when no node has one.
std::map<std::string, Diagnosis> NodeVerdicts(Invocation& inv, World& world,
                                              const FleetStatusReport& views) {
  std::map<std::string, Diagnosis> verdicts;
  std::vector<std::string> names;
  for (const NodeView& v : views.nodes) {
    bool agent = !v.record.workers.empty();
    for (const WorkerRecord& w : v.record.workers) {
      agent = agent && !w.agent_sha256.empty() && w.agent_sha256 != "-" && !w.address.empty();
    }
    if (agent) {
      names.push_back(v.record.name);
    }
  }
  if (names.empty()) {
    return verdicts;
  }
  Result<std::vector<WorkerTarget>> workers = ResolveTargets(world.store, names);
  MetricsOptions options;
  options.connect_timeout = kStatusConnectTimeout;
  options.timeout = kStatusMetricsTimeout;
  Result<FleetMetrics> fleet =
      workers.ok() ? SampleFleet(world, *workers, options) : Result<FleetMetrics>(workers.status());
  if (!fleet.ok()) {
    inv.err << "tpufleet: warning: no verdicts: " << TerminalText(fleet.status().message())
            << "\n";
    return verdicts;
  }
  for (const GroupMetrics& g : fleet->nodes) {
    verdicts[g.name] = g.diagnosis;
  }
  return verdicts;
}

// The last line of `status`: whether a serve keeps the state, and how old the states
// shown are when none does: "serve: running (pid 42, last pass 3s ago)", "serve: not
// running; states as of 5m ago (`tpufleet status --refresh` asks the cloud)".
std::string ServeLine(const FleetStatusReport& report, bool refreshed) {
  const ServeState& s = report.serve;
  std::string pass = s.record ? "last pass " + FormatDuration(s.since_last_pass) + " ago" : "";
  if (s.running) {
    return "serve: running (pid " + std::to_string(s.record->pid) + ", " + pass + ")";
  }
  std::string line = s.record ? "serve: not running (pid " + std::to_string(s.record->pid) +
                                    " ended without a word, " + pass + ")"
                              : "serve: not running";
  if (refreshed) {
    return line + "; states as of now";
  }
  return line + "; states as of " + FormatDuration(report.states_age) +
         " ago (`tpufleet status --refresh` asks the cloud)";
}

ExitStatus RunStatus(Invocation& inv) {
  Result<const Catalog*> catalog = inv.LoadCatalog();
  if (!catalog.ok()) {
    return Fail(inv, catalog.status());
  }
  Result<std::unique_ptr<WorldHandle>> handle = OpenWorld(inv, false);
  if (!handle.ok()) {
    return Fail(inv, handle.status());
  }
  StatusOptions options{inv.args.positional, inv.args.Has("refresh"), inv.access};
  Result<FleetStatusReport> views = FleetStatus((*handle)->world(), **catalog, options);
  if (!views.ok()) {
    return Fail(inv, views.status());
  }
  bool show_workers = !inv.args.positional.empty() || inv.args.Has("workers");
  if (inv.json) {
    inv.out << api::ToJson(ToApi(*views)) << "\n";
    return ExitStatus::kOk;
  }
  if (views->nodes.empty() && views->leftovers.empty() && views->untracked.empty()) {
    inv.out << "No nodes. Bring a fleet up with `tpufleet up FLEET.yaml`.\n";
    return ExitStatus::kOk;
  }
  std::map<std::string, Diagnosis> verdicts = NodeVerdicts(inv, (*handle)->world(), *views);
  std::vector<std::string> header = {"NODE",   "FLEET",   "PROVIDER", "ZONE", "TYPE", "CAPACITY",
                                     "STATE",  "HEALTH",  "WORKERS",  "AGE",  "COST"};
  if (!verdicts.empty()) {
    header.insert(header.begin() + 8, "VERDICT");
  }
  // TTR, the last time-to-recover, only when a node has recovered.
  bool recovered = std::any_of(views->nodes.begin(), views->nodes.end(),
                               [](const NodeView& v) { return v.time_to_recover_seconds; });
  if (recovered) {
    header.push_back("TTR");
  }
  TextTable t(header);
  std::vector<std::string> errors;
  for (const NodeView& v : views->nodes) {
    const NodeRecord& r = v.record;
    std::string cost = v.cost_usd ? (v.cost_is_upper_bound ? "<= " : "") + FormatUsd(*v.cost_usd)
                                  : "-";
    std::vector<std::string> row = {
        r.name, r.fleet, r.provider, r.zone.empty() ? "-" : r.zone,
        r.type.empty() ? "-" : r.type, r.capacity.empty() ? "-" : r.capacity,
        v.state.empty() ? "-" : v.state, r.health.empty() ? "-" : r.health,
        std::to_string(r.workers.size()), FormatDuration(v.age), cost};
    if (recovered) {
      row.push_back(v.time_to_recover_seconds ? FormatSeconds(*v.time_to_recover_seconds) : "-");
    }
    if (!verdicts.empty()) {
      auto it = verdicts.find(r.name);
      row.insert(row.begin() + 8,
                 it == verdicts.end() ? "-" : std::string(VerdictName(it->second.verdict)));
    }
    t.AddRow(std::move(row));
    if (!v.refresh_error.empty()) {
      errors.push_back(r.name + ": could not refresh: " + v.refresh_error);
    }
  }
  t.Print(inv.out);
  if (show_workers) {
    inv.out << "\n";
    TextTable w({"WORKER", "SSH NAME", "ADDRESS", "HOSTNAME", "SETUP"});
    for (const NodeView& v : views->nodes) {
      for (const WorkerRecord& wr : v.record.workers) {
        w.AddRow({v.record.name + "/w" + std::to_string(wr.index),
                  v.record.name + "-w" + std::to_string(wr.index), wr.address,
                  wr.hostname.empty() ? "-" : wr.hostname, wr.setup_done ? "done" : "-"});
      }
    }
    w.Print(inv.out);
  }
  if (std::any_of(views->nodes.begin(), views->nodes.end(),
                  [](const NodeView& v) { return !v.record.data_disks.empty(); })) {
    inv.out << "\nData disks:\n";
    TextTable d({"NODE", "DISK", "MODE", "SOURCE"});
    for (const NodeView& v : views->nodes) {
      for (const NodeDisk& disk : v.record.data_disks) {
        d.AddRow({v.record.name, disk.Name(), disk.mode, disk.source});
      }
    }
    d.Print(inv.out);
  }
  if (!views->leftovers.empty()) {
    inv.out << "\nLeftovers: made by tpufleet, unwanted, still to delete (up and down retry):\n";
    TextTable l({"LEFTOVER", "FLEET", "ZONE", "TYPE", "CAPACITY", "AGE", "COST", "LAST ERROR"});
    for (const LeftoverView& v : views->leftovers) {
      const LeftoverRecord& x = v.record;
      std::string cost = v.cost_usd ? (v.cost_is_upper_bound ? "<= " : "") +
                                           FormatUsd(*v.cost_usd)
                                     : "-";
      l.AddRow({x.name + (x.queued ? " (queued)" : ""), x.fleet, x.zone,
                x.type.empty() ? "-" : x.type, x.capacity.empty() ? "-" : x.capacity,
                FormatDuration(v.age), cost, x.last_error.empty() ? "-" : x.last_error});
    }
    l.Print(inv.out);
  }
  if (!views->untracked.empty()) {
    inv.out << "\n";
    for (const UntrackedNode& u : views->untracked) {
      inv.out << TerminalText(UntrackedMessage(u)) << "\n";
    }
  }
  for (const std::string& e : errors) {
    inv.err << "tpufleet: " << TerminalText(e) << "\n";
  }
  inv.out << "\n" << ServeLine(*views, inv.args.Has("refresh")) << "\n";
  return errors.empty() ? ExitStatus::kOk : ExitStatus::kFailure;
}

ExitStatus RunDown(Invocation& inv) {
  bool all = inv.args.Has("all");
  if (all == !inv.args.positional.empty()) {
    return UsageError(inv, "down takes node names or --all, e.g. tpufleet down trainer");
  }
  Result<std::unique_ptr<WorldHandle>> handle = OpenWorld(inv, true);
  if (!handle.ok()) {
    return Fail(inv, handle.status());
  }
  World& world = (*handle)->world();
  Result<std::vector<NodeRecord>> records = world.store.Nodes("");
  if (!records.ok()) {
    return Fail(inv, records.status());
  }
  // A node the caller may not see does not exist for them (control/visible.h); one of a
  // fleet they do not administer is refused, before anything is deleted.
  std::vector<NodeRecord> visible = VisibleNodes(inv.access, *std::move(records));
  std::vector<NodeRecord> targets;
  for (const std::string& name : inv.args.positional) {
    auto it = std::find_if(visible.begin(), visible.end(),
                           [&](const NodeRecord& r) { return r.name == name; });
    if (it == visible.end()) {
      std::vector<std::string> names;
      for (const NodeRecord& r : visible) {
        names.push_back(r.name);
      }
      return Fail(inv, NotFoundError("no node named " + QuoteForMessage(name) +
                                     DidYouMean(name, names)));
    }
    if (Status s = RequireAdminOf(inv, it->fleet, "down of " + name); !s.ok()) {
      return Fail(inv, s);
    }
    targets.push_back(*it);
  }
  // Through a team server, --all and the leftovers are those of the fleets the caller
  // administers (docs/serve.md); here and for the operator, every fleet's.
  std::optional<std::vector<std::string>> fleets;
  if (!inv.access.everything()) {
    fleets.emplace();
    for (const std::string& f : inv.access.Fleets()) {
      if (inv.access.IsAdminOf(f)) {
        fleets->push_back(f);
      }
    }
    if (all && fleets->empty()) {
      return Fail(inv, PermissionDeniedError(
                           "down --all deletes the nodes of the fleets you administer; " +
                           inv.access.who() + " administers none"));
    }
  }
  auto mine = [&fleets](const std::string& fleet) {
    return !fleets || std::find(fleets->begin(), fleets->end(), fleet) != fleets->end();
  };
  if (all) {
    for (const NodeRecord& r : visible) {
      if (mine(r.fleet)) {
        targets.push_back(r);
      }
    }
  }
  Result<std::vector<LeftoverRecord>> leftovers = world.store.Leftovers("");
  if (!leftovers.ok()) {
    return Fail(inv, leftovers.status());
  }
  if (targets.empty() && std::none_of(leftovers->begin(), leftovers->end(),
                                      [&](const LeftoverRecord& x) { return mine(x.fleet); })) {
    inv.out << (inv.json ? api::ToJson(api::DownReport{}) + "\n" : "No nodes to delete.\n");
    return ExitStatus::kOk;
  }
  // Leftovers are deleted without asking: nobody wants them, and they bill.
  if (!targets.empty() && !inv.args.Has("yes")) {
    std::vector<std::string> names;
    for (const NodeRecord& r : targets) {
      names.push_back(r.name);
    }
    if (inv.terminal.in == nullptr) {
      return UsageError(inv, "down deletes " + Join(names, ", ") +
                                 (inv.served ? "; a team server has no terminal to ask at"
                                             : "; not at a terminal") +
                                 ", so pass --yes to confirm");
    }
    inv.err << "Delete " << Join(names, ", ") << "? Their disks and data go with them. [y/N] "
            << std::flush;
    std::string answer;
    std::getline(*inv.terminal.in, answer);
    if (Trim(answer) != "y" && Trim(answer) != "yes") {
      inv.err << "Nothing deleted.\n";
      return ExitStatus::kFailure;
    }
  }
  ProgressView view(inv.out, ModeFor(inv));
  DownReport report = Down(world, targets, DownOptions{}, view, fleets);
  if (!report.leftovers_status.ok()) {
    return Fail(inv, report.leftovers_status);
  }
  bool all_ok = ReportOutcomes(inv, report.nodes);
  all_ok = ReportLeftovers(inv, report.leftovers, {}) && all_ok;
  if (inv.json) {
    inv.out << api::ToJson(ToApi(report)) << "\n";
  }
  return all_ok ? ExitStatus::kOk : ExitStatus::kFailure;
}

ExitStatus RunImport(Invocation& inv) {
  // It reads a GCP project with the cloud credentials of whoever runs it: through a team
  // server, the server's, which are the operator's alone.
  if (!inv.access.everything()) {
    return Fail(inv, PermissionDeniedError("import is the team server's operator's: it uses "
                                           "the server's cloud credentials; " +
                                           inv.access.who() + " is not the operator"));
  }
  std::optional<std::string> project = inv.args.Get("project");
  std::optional<std::string> zones = inv.args.Get("zones");
  if (!project || !zones) {
    return UsageError(inv, "import needs --project P and --zones Z1[,Z2…]");
  }
  ImportRequest request;
  request.project = *project;
  request.zones = Split(*zones, ',');
  request.nodes = inv.args.positional;
  request.provider = inv.args.Get("provider").value_or("gcp-tpu");
  request.fleet = inv.args.Get("fleet").value_or("imported");
  if (request.provider != "gcp-tpu" && request.provider != "emulator") {
    return UsageError(inv, "--provider: expected gcp-tpu or emulator, got " +
                               QuoteForMessage(request.provider));
  }
  if (Status s = CheckNodeName(request.fleet); !s.ok()) {
    return UsageError(inv, "--fleet: " + s.message());
  }
  Result<std::unique_ptr<WorldHandle>> handle = OpenWorld(inv, true);
  if (!handle.ok()) {
    return Fail(inv, handle.status());
  }
  ProgressView view(inv.out, ModeFor(inv));
  Result<std::vector<NodeOutcome>> outcomes = Import((*handle)->world(), request, view);
  if (!outcomes.ok()) {
    return Fail(inv, outcomes.status());
  }
  bool all_ok = ReportOutcomes(inv, *outcomes);
  if (inv.json) {
    inv.out << api::ToJson(api::ImportReport{ToApi(*outcomes)}) << "\n";
  } else if (outcomes->empty()) {
    inv.out << "No nodes found in " << *zones << ".\n";
  }
  return all_ok ? ExitStatus::kOk : ExitStatus::kFailure;
}

}  // namespace tpufleet::cli
