// `tpufleet emulator status`, `inject` and `token rotate`: the daemon's admin routes
// (/emulator/v1/…), called with its token (command.h).
#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>
#include <ostream>

#include "api/emulator.h"
#include "emulator/command_internal.h"
#include "emulator/faults.h"
#include "util/encoding.h"
#include "util/http_client.h"
#include "util/strings.h"
#include "util/text_table.h"

namespace tpufleet::emulator::command_internal {
namespace {

using nlohmann::json;
using Daemon = EmulatorDaemon;

// Admin requests are local and answer at once.
constexpr std::chrono::milliseconds kAdminTimeout{10000};

// One call to the daemon's admin routes, with its token (read and checked at each call:
// a command makes a handful).
Result<json> Admin(Inv& inv, const Daemon& d, const std::string& method,
                   const std::string& path, const std::string& body = "") {
  TPUFLEET_ASSIGN_OR_RETURN(std::string token, ReadEmulatorToken(d.token_file, inv.env));
  CurlHttpClient http;
  HttpRequest req;
  req.method = method;
  req.url = d.endpoint + path;
  req.body = body;
  req.timeout = kAdminTimeout;
  req.headers["Authorization"] = "Bearer " + token;
  if (!body.empty()) {
    req.headers["Content-Type"] = "application/json";
  }
  TPUFLEET_ASSIGN_OR_RETURN(HttpResponse resp, http.Send(req));
  json j = json::parse(resp.body, nullptr, false);
  if (resp.status != 200) {
    std::string message = j.is_object() && j.contains("error") && j["error"].is_object()
                              ? j["error"].value("message", resp.body)
                              : resp.body;
    return InvalidArgumentError(message);
  }
  if (j.is_discarded()) {
    return InternalError("the emulator answered " + path + " with something that is not JSON");
  }
  return j;
}

// The emulator's status, as its admin API sends it.
Result<api::EmulatorStatus> FetchStatus(Inv& inv, const Daemon& d) {
  TPUFLEET_ASSIGN_OR_RETURN(json status, Admin(inv, d, "GET", "emulator/v1/status"));
  return api::ParseEmulatorStatus(status.dump());
}

// The full resource name of the node the user named: a full name, or a node id that
// is unique among the emulator's nodes.
Result<std::string> ResolveNode(Inv& inv, const Daemon& d, const std::string& node) {
  if (StartsWith(node, "projects/")) {
    return node;
  }
  TPUFLEET_ASSIGN_OR_RETURN(api::EmulatorStatus status, FetchStatus(inv, d));
  std::vector<std::string> matches;
  std::vector<std::string> ids;
  for (const api::EmulatorNode& n : status.nodes) {
    const std::string& name = n.name;
    std::string id = name.substr(name.rfind('/') + 1);
    ids.push_back(id);
    if (id == node) {
      matches.push_back(name);
    }
  }
  if (matches.size() == 1) {
    return matches[0];
  }
  if (matches.empty()) {
    return NotFoundError("the emulator has no node \"" + node + "\"" + DidYouMean(node, ids));
  }
  return InvalidArgumentError("several nodes are named \"" + node + "\"; give the full name: " +
                              Join(matches, ", "));
}

}  // namespace

ActionResult Inject(Inv& inv) {
  const std::vector<std::string>& pos = inv.positional;
  // The fault kinds, and "clear", which ends faults.
  static const std::vector<std::string> kKinds = [] {
    std::vector<std::string> kinds = FaultKindNames();
    kinds.push_back("clear");
    return kinds;
  }();
  if (pos.size() < 2) {
    return Usage("inject needs a KIND: " + Join(kKinds, ", "));
  }
  const std::string& kind = pos[1];
  if (std::find(kKinds.begin(), kKinds.end(), kind) == kKinds.end()) {
    return Usage("unknown fault kind '" + kind + "'" + DidYouMean(kind, kKinds) +
                                    "; kinds: " + Join(kKinds, ", "));
  }
  std::string dir = StateDir(inv);
  std::optional<Daemon> d = RunningEmulator(dir);
  if (!d) {
    return NotRunning(inv, dir);
  }
  if (kind == "clear") {
    std::string path = pos.size() > 2 ? "emulator/v1/faults/" + UrlEscape(pos[2]) : "emulator/v1/faults";
    Result<json> r = Admin(inv, *d, "DELETE", path);
    if (!r.ok()) {
      return ActionResult(r.status());
    }
    inv.out << (inv.json ? r->dump(2) : std::string("Cleared.")) << "\n";
    return Status::Ok();
  }
  json fault = {{"kind", kind}};
  // Flags map one to one onto the admin API's fields (emulator/faults.h ParseFault).
  static const std::vector<std::pair<std::string, std::string>> kStringFields = {
      {"zone", "zone"}, {"region", "region"}, {"family", "family"},
      {"for", "duration"}, {"notice", "notice"}};
  for (const auto& [flag, field] : kStringFields) {
    if (auto v = inv.Get(flag)) {
      fault[field] = *v;
    }
  }
  for (const char* flag : {"rate", "factor"}) {
    if (auto v = inv.Get(flag)) {
      double number = 0;
      if (!ParseDouble(*v, &number)) {
        return Usage(std::string("--") + flag + " expects a number, got '" + *v + "'");
      }
      fault[flag] = number;
    }
  }
  // The admin API wants whole numbers for these (a worker index, a generator seed).
  for (const char* flag : {"seed", "worker", "device"}) {
    if (auto v = inv.Get(flag)) {
      long long number = 0;
      if (!ParseInt(*v, &number)) {
        return Usage(std::string("--") + flag + " expects a whole number, got '" +
                                        *v + "'");
      }
      fault[flag] = number;
    }
  }
  if (auto codes = inv.Get("codes")) {
    json list = json::array();
    for (const std::string& c : Split(*codes, ',')) {
      long long code = 0;
      if (!ParseInt(Trim(c), &code)) {
        return Usage("--codes expects HTTP codes like 429,503, got '" + *codes + "'");
      }
      list.push_back(code);
    }
    fault["httpCodes"] = list;
  }
  if (kind == "preempt" || kind == "maintenance" || kind == "cutoff" || kind == "device") {
    if (pos.size() != 3) {
      return Usage("inject " + kind + " needs the NODE it applies to");
    }
    Result<std::string> node = ResolveNode(inv, *d, pos[2]);
    if (!node.ok()) {
      return ActionResult(node.status());
    }
    fault["node"] = *node;
  } else if (pos.size() > 2) {
    return Usage("inject " + kind + " takes flags, not '" + pos[2] + "'");
  }
  Result<json> r = Admin(inv, *d, "POST", "emulator/v1/faults", fault.dump());
  if (!r.ok()) {
    return ActionResult(r.status());
  }
  if (inv.json) {
    inv.out << r->dump(2) << "\n";
  } else {
    inv.out << "Injected " << r->value("id", "?") << ": " << r->dump() << "\n"
            << "End it with: tpufleet emulator inject clear " << r->value("id", "") << "\n";
  }
  return Status::Ok();
}

ActionResult Token(Inv& inv) {
  const std::vector<std::string>& pos = inv.positional;
  if (pos.size() != 2 || pos[1] != "rotate") {
    return Usage("token takes one action: rotate (a new token in STATE/token; the old one "
                 "is refused from then on)");
  }
  std::string dir = StateDir(inv);
  std::optional<Daemon> d = RunningEmulator(dir);
  if (!d) {
    return NotRunning(inv, dir);
  }
  Result<json> r = Admin(inv, *d, "POST", "emulator/v1/token:rotate");
  if (!r.ok()) {
    return ActionResult(r.status());
  }
  if (inv.json) {
    inv.out << json{{"rotated", true}, {"token_file", d->token_file}}.dump(2) << "\n";
  } else {
    inv.out << "Rotated: " << d->token_file << " holds the new token; the old one gets 401 "
            << "UNAUTHENTICATED from now on.\n";
  }
  return Status::Ok();
}

ActionResult ShowStatus(Inv& inv) {
  std::string dir = StateDir(inv);
  std::optional<Daemon> d = RunningEmulator(dir);
  if (!d) {
    return NotRunning(inv, dir);
  }
  Result<api::EmulatorStatus> status = FetchStatus(inv, *d);
  if (!status.ok()) {
    return ActionResult(status.status());
  }
  api::EmulatorStatus& s = *status;
  if (inv.json) {
    s.daemon = ToApi(*d, dir);
    inv.out << api::ToJson(s) << "\n";
    return Status::Ok();
  }
  inv.out << "Emulator running (pid " << d->pid << "): " << d->endpoint << "\n\n";
  if (s.nodes.empty()) {
    inv.out << "No nodes.\n";
  } else {
    TextTable table({"NODE", "TYPE", "STATE", "WORKERS"});
    for (const api::EmulatorNode& n : s.nodes) {
      std::vector<std::string> addresses;
      for (const api::EmulatorWorker& w : n.workers) {
        addresses.push_back(w.address + (w.cut_off ? " (cut off)" : "") +
                            (w.devices < n.chips / static_cast<int>(n.workers.size())
                                 ? " (" + std::to_string(w.devices) + " devices)"
                                 : ""));
      }
      std::string state = n.state;
      if (!n.health.empty() && n.health != "HEALTHY") {
        state += " " + n.health;
      }
      table.AddRow({n.name, n.accelerator_type, state,
                    addresses.empty() ? "-" : Join(addresses, " ")});
    }
    table.Print(inv.out);
  }
  if (!s.queued_resources.empty()) {
    inv.out << "\nQueued resources:\n";
    for (const api::EmulatorQueuedResource& q : s.queued_resources) {
      inv.out << "  " << q.name << "  " << q.state << "\n";
    }
  }
  inv.out << "\nFaults: ";
  if (s.faults.empty()) {
    inv.out << "none\n";
  } else {
    inv.out << "\n";
    for (const api::EmulatorFault& f : s.faults) {
      inv.out << "  " << api::ToJsonLine(f) << "\n";
    }
  }
  return Status::Ok();
}

api::EmulatorDaemon ToApi(const Daemon& d, const std::string& dir) {
  api::EmulatorDaemon a;
  a.running = true;
  a.pid = d.pid;
  a.endpoint = d.endpoint;
  a.token_file = d.token_file;
  a.state_dir = dir;
  return a;
}

ActionResult NotRunning(Inv& inv, const std::string& dir) {
  if (inv.json) {
    api::EmulatorDaemon none;
    none.state_dir = dir;
    inv.out << api::ToJson(none) << "\n";
  }
  return FailedPreconditionError("no emulator is running (state dir " + dir +
                                 "); start one with: tpufleet emulator start");
}

}  // namespace tpufleet::emulator::command_internal
