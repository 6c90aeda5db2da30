// `tpufleet doctor [TARGET...]`: one line per worker, failures first, each failed check
// with what to do (control/doctor.h does the asking).
#include <ostream>

#include "api/doctor.h"
#include "cli/command.h"
#include "cli/fleet_world.h"
#include "control/doctor.h"
#include "util/log.h"
#include "util/strings.h"

namespace tpufleet::cli {
namespace {

// "pod/w2: FAIL agent_version: runs 0123…, the CLI has 4567… -> old agent version: …";
// "pod/w0: ok (agent, agent_version, clock, …)".
std::string LineOf(const WorkerDiagnosis& d) {
  if (d.ok()) {
    std::vector<std::string> names;
    for (const api::DoctorCheck& c : d.checks) {
      names.push_back(c.name);
    }
    return d.worker.name + ": ok (" + Join(names, ", ") + ")";
  }
  std::vector<std::string> failed;
  for (const api::DoctorCheck& c : d.checks) {
    if (!c.ok) {
      failed.push_back(c.name + ": " + c.detail + (c.fix.empty() ? "" : " -> " + c.fix));
    }
  }
  return d.worker.name + ": FAIL " + Join(failed, "; ");
}

}  // namespace

ExitStatus RunDoctor(Invocation& inv) {
  Result<std::unique_ptr<WorldHandle>> handle = OpenWorld(inv, false);
  if (!handle.ok()) {
    return Fail(inv, handle.status());
  }
  World& world = (*handle)->world();
  std::vector<std::string> words = inv.args.positional;
  Result<std::vector<WorkerTarget>> targets =
      ResolveTargets(world.store, words.empty() ? std::vector<std::string>{"all"} : words);
  if (!targets.ok()) {
    return targets.status().code() == StatusCode::kInvalidArgument ||
                   targets.status().code() == StatusCode::kNotFound
               ? UsageError(inv, targets.status().message())
               : Fail(inv, targets.status());
  }
  Result<const Catalog*> catalog = inv.LoadCatalog();  // chips per host of each type
  if (!catalog.ok()) {
    return Fail(inv, catalog.status());
  }
  Result<std::vector<WorkerDiagnosis>> diagnosed = Doctor(world, **catalog, *targets);
  if (!diagnosed.ok()) {
    return Fail(inv, diagnosed.status());
  }
  size_t failed = 0;
  api::DoctorSummary summary;
  for (const WorkerDiagnosis& d : *diagnosed) {
    failed += d.ok() ? 0 : 1;
    summary.workers.push_back({d.worker.name, d.worker.node, d.worker.worker, d.ok(), d.checks});
    if (!inv.json) {
      // What workers and the cloud said: TerminalText, as everything else they say.
      inv.out << TerminalText(LineOf(d)) << "\n";
    }
  }
  summary.failed = failed;
  summary.ok = failed == 0;
  if (inv.json) {
    inv.out << api::ToJson(summary) << "\n";
  } else {
    inv.out << "\n"
            << diagnosed->size() - failed << " of " << diagnosed->size() << " workers healthy.\n";
  }
  return failed == 0 ? ExitStatus::kOk : ExitStatus::kFailure;
}

}  // namespace tpufleet::cli
