#include "server/http_api.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <set>

#include "api/fleet.h"
#include "api/invite.h"
#include "api/remote_command.h"
#include "api/serve.h"
#include "control/visible.h"
#include "core/fleet_spec.h"
#include "server/audit.h"
#include "server/command_stream.h"
#include "server/dashboard.h"
#include "server/metrics.h"
#include "util/prometheus_text.h"
#include "util/strings.h"
#include "util/timestamp.h"

namespace tpufleet::server {
namespace {

ApiResponse Json(std::string body) {
  ApiResponse r;
  r.body = std::move(body) + "\n";
  return r;
}

ApiResponse Failed(const tpufleet::Status& s) {
  return ErrorResponse(500, std::string(StatusCodeName(s.code())), s.message());
}

std::string Rfc3339(Clock::WallTime t) {
  return t == Clock::WallTime{} ? "" : FormatTimestamp(t);
}

double SecondsBetween(Clock::WallTime from, Clock::WallTime to) {
  return std::chrono::duration<double>(to - from).count();
}

// The seconds=S of a `recovered` event's detail; nullopt when it has none.
std::optional<double> RecoverSeconds(const std::string& detail) {
  for (const std::string& pair : Split(detail, ' ')) {
    if (pair.rfind("seconds=", 0) == 0) {
      double v = 0;
      const char* begin = pair.data() + 8;
      auto [end, ec] = std::from_chars(begin, pair.data() + pair.size(), v);
      if (ec == std::errc() && end == pair.data() + pair.size()) {
        return v;
      }
    }
  }
  return std::nullopt;
}

}  // namespace

ApiResponse ErrorResponse(int status, const std::string& code, const std::string& message) {
  ApiResponse r = Json(api::ToJson(api::Error{code, message}));
  r.status = status;
  r.error_code = code;
  return r;
}

ApiResponse ServeApi::Handle(const ApiRequest& request) const {
  // The dashboard's own files hold no data: anyone may load the page, which then asks
  // for a token like any client.
  if (std::optional<ApiResponse> file = DashboardFile(request)) {
    return *file;
  }
  Result<Caller> caller = Authenticate(request.headers, context_.token, context_.store);
  if (!caller.ok() && caller.status().code() != StatusCode::kPermissionDenied) {
    return Failed(caller.status());
  }
  std::string action = request.method + " " + request.path;
  if (!caller.ok()) {
    ApiResponse r = ErrorResponse(401, "unauthenticated", caller.status().message());
    r.headers["WWW-Authenticate"] = "Bearer";
    Audit("?", action, "unauthenticated");
    return r;
  }
  ApiResponse r = Route(request, *caller, action);
  if (r.stream) {
    return r;  // a command: its stream writes the audit line once the command ended
  }
  // Prometheus scrapes /metrics with serve's own token every few seconds: logging each
  // would bury the people's requests under the operator's machine, who may do
  // everything anyway. Any other request is logged, the operator's too.
  if (request.path != "/metrics" || !caller->access.everything()) {
    Audit(caller->name, action,
          !r.audit_outcome.empty() ? r.audit_outcome
          : r.status < 300         ? "ok"
                           : (r.status < 500 ? "refused: " : "error: ") + std::to_string(r.status) +
                                 " " + r.error_code);
  }
  return r;
}

void ServeApi::Audit(const std::string& person, const std::string& action,
                     const std::string& outcome) const {
  // A context without a store or clock (a test of the transport alone, with serve's own
  // token) keeps no log, or stamps the system's time.
  if (context_.store != nullptr) {
    WriteAudit(*context_.store,
               context_.clock != nullptr ? context_.clock->Now() : std::chrono::system_clock::now(),
               person, action, outcome);
  }
}

ApiResponse ServeApi::Route(const ApiRequest& request, const Caller& caller,
                            std::string& action) const {
  if (request.path == "/v1/command") {
    return Command(request, caller, action);
  }
  bool known = request.path == "/v1/status" || request.path == "/v1/events" ||
               request.path == "/v1/jobs" || request.path == "/v1/hosts" ||
               request.path == "/metrics";
  if (!known) {
    return ErrorResponse(404, "not_found",
                         "no such route; there are /v1/status, /v1/events, /v1/jobs, /v1/hosts, "
                         "/metrics, /v1/command and the dashboard at /");
  }
  if (request.method != "GET" && request.method != "HEAD") {
    ApiResponse r = ErrorResponse(405, "method_not_allowed", request.path + " is read with GET");
    r.headers["Allow"] = "GET, HEAD";
    return r;
  }
  if (request.path == "/v1/status") {
    return Status(caller.access);
  }
  if (request.path == "/v1/events") {
    return Events(request, caller.access);
  }
  if (request.path == "/v1/jobs") {
    return Jobs(caller.access);
  }
  if (request.path == "/v1/hosts") {
    return Hosts(caller);
  }
  Result<bool> all = MaySeeAllFleets(*context_.store, caller.access);
  if (!all.ok()) {
    return Failed(all.status());
  }
  if (!*all) {
    return ErrorResponse(403, "permission_denied",
                         "/metrics spans every fleet: it is for serve's operator and the "
                         "admins of every fleet; " + caller.name + " is not one");
  }
  ApiResponse r;
  r.body = MetricsText(context_.view->Snapshot());
  r.content_type = std::string(kPrometheusContentType);
  return r;
}

ApiResponse ServeApi::Status(const Access& access) const {
  Clock::WallTime now = context_.clock->Now();
  ServeSnapshot snap = context_.view->Snapshot();
  api::ServeStatusReport out;
  Result<std::optional<ServeRecord>> record = context_.store->Serve();
  if (!record.ok()) {
    return Failed(record.status());
  }
  if (*record) {
    const ServeRecord& r = **record;
    out.serve.pid = r.pid;
    out.serve.host = r.host;
    std::copy_if(r.fleets.begin(), r.fleets.end(), std::back_inserter(out.serve.fleets),
                 [&](const std::string& f) { return access.RoleIn(f).has_value(); });
    out.serve.started = Rfc3339(r.started_at);
  }
  out.serve.last_pass = Rfc3339(snap.last_pass);
  if (snap.last_pass != Clock::WallTime{}) {
    out.serve.last_pass_seconds_ago = SecondsBetween(snap.last_pass, now);
  }
  out.serve.passes = snap.passes;
  out.serve.api_calls = snap.api_calls;
  out.serve.preemptions = snap.preemptions;
  out.serve.recoveries = snap.recoveries;
  // A pass's warnings name any node of any fleet: for those who may see them all.
  Result<bool> all = MaySeeAllFleets(*context_.store, access);
  if (!all.ok()) {
    return Failed(all.status());
  }
  if (*all) {
    out.warnings = snap.warnings;
  }

  // The last time-to-recover of each node: the newest `recovered` event per node.
  EventQuery recovered;
  recovered.kind = "recovered";
  Result<std::vector<EventRecord>> events = context_.store->Events(recovered);
  if (!events.ok()) {
    return Failed(events.status());
  }
  std::map<std::pair<std::string, std::string>, double> last_recover;
  for (const EventRecord& e : *events) {  // oldest first: the newest stays
    if (std::optional<double> s = RecoverSeconds(e.detail)) {
      last_recover[{e.fleet, e.node}] = *s;
    }
  }
  std::set<std::string> fleets(out.serve.fleets.begin(), out.serve.fleets.end());
  Result<std::vector<NodeRecord>> nodes = context_.store->Nodes("");
  if (!nodes.ok()) {
    return Failed(nodes.status());
  }
  for (const NodeRecord& n : VisibleNodes(access, *std::move(nodes))) {
    if (fleets.count(n.fleet) == 0) {
      continue;
    }
    api::ServeNode node{n.name, n.fleet, n.zone, n.type, n.capacity,
                        n.state.Name(),
                        std::max<int64_t>(0, static_cast<int64_t>(
                                                 SecondsBetween(n.created_at, now))),
                        std::nullopt};
    if (auto it = last_recover.find({n.fleet, n.name}); it != last_recover.end()) {
      node.last_recover_seconds = it->second;
    }
    out.nodes.push_back(std::move(node));
  }
  return Json(api::ToJson(out));
}

ApiResponse ServeApi::Events(const ApiRequest& request, const Access& access) const {
  EventQuery q;
  auto param = [&](const char* name) {
    auto it = request.query.find(name);
    return it == request.query.end() ? std::string() : it->second;
  };
  q.fleet = param("fleet");
  q.node = param("node");
  q.kind = param("kind");
  q.limit = kMaxEventsPerRequest;
  if (std::string limit = param("limit"); !limit.empty()) {
    size_t n = 0;
    auto [end, ec] = std::from_chars(limit.data(), limit.data() + limit.size(), n);
    if (ec != std::errc() || end != limit.data() + limit.size() || n == 0 ||
        n > kMaxEventsPerRequest) {
      return ErrorResponse(400, "invalid_argument",
                           "limit must be a number from 1 to " +
                               std::to_string(kMaxEventsPerRequest));
    }
    q.limit = n;
  }
  if (std::string since = param("since"); !since.empty()) {
    if (Result<Clock::WallTime> t = ParseTimestamp(since); t.ok()) {
      q.since = *t;
    } else if (Result<std::chrono::seconds> d = ParseDuration(since); d.ok()) {
      q.since = context_.clock->Now() - *d;
    } else {
      return ErrorResponse(400, "invalid_argument",
                           "since must be a time (2026-01-01T00:00:00Z) or a duration (10m), "
                           "not " + QuoteForMessage(since.substr(0, 64)));
    }
  }
  Result<std::vector<EventRecord>> events = VisibleEvents(*context_.store, access, q);
  if (!events.ok()) {
    return Failed(events.status());
  }
  std::vector<api::Event> out;
  for (const EventRecord& e : *events) {
    out.push_back({e.id, FormatTimestamp(e.time), e.fleet, e.node, e.kind, e.detail});
  }
  return Json(api::ToJson(out));
}

ApiResponse ServeApi::Command(const ApiRequest& request, const Caller& caller,
                              std::string& action) const {
  if (request.method != "POST") {
    ApiResponse r = ErrorResponse(405, "method_not_allowed", "/v1/command is sent with POST");
    r.headers["Allow"] = "POST";
    return r;
  }
  if (!context_.run_command) {
    return ErrorResponse(404, "not_found", "this serve runs no commands");
  }
  Result<api::CommandRequest> command = api::ParseCommandRequest(request.body);
  if (!command.ok()) {
    return ErrorResponse(400, "invalid_argument", command.status().message());
  }
  action = AuditAction(command->argv);
  if (command->max_age_seconds && Cacheable(command->argv)) {
    return CachedCommand(*command, caller);
  }
  // A followed log waits for lines far more than it works: it has slots of its own, so
  // that people watching their jobs leave the others free.
  bool follows = FollowsLog(command->argv);
  std::shared_ptr<std::atomic<int>> slots = follows ? following_ : running_;
  if (!TakeSlot(*slots, follows ? kMaxFollowedLogs : kMaxRunningCommands)) {
    return Busy(follows);
  }
  auto run = [this, request = *std::move(command), caller](
                 std::ostream& out, std::ostream& err, const std::atomic<bool>& interrupt) {
    return context_.run_command(request, caller, out, err, interrupt);
  };
  auto ended = [this, person = caller.name, action, slots](int exit_code) {
    slots->fetch_sub(1);
    Audit(person, action, exit_code == 0 ? "ok" : "exit " + std::to_string(exit_code));
  };
  ApiResponse r;
  r.content_type = "application/x-ndjson";
  r.stream = std::make_shared<CommandStream>(std::move(run), std::move(ended));
  return r;
}

bool FollowsLog(const std::vector<std::string>& argv) {
  return !argv.empty() && argv[0] == "logs" &&
         std::any_of(argv.begin() + 1, argv.end(),
                     [](const std::string& w) { return w == "-f" || w == "--follow"; });
}

bool ServeApi::TakeSlot(std::atomic<int>& slots, int most) {
  if (slots.fetch_add(1) >= most) {
    slots.fetch_sub(1);
    return false;
  }
  return true;
}

ApiResponse ServeApi::Busy(bool follows) {
  return ErrorResponse(503, "unavailable",
                       follows
                           ? "this server follows " + std::to_string(kMaxFollowedLogs) +
                                 " logs at once, the most it follows; try again once one ended"
                           : "this server runs " + std::to_string(kMaxRunningCommands) +
                                 " commands at once, the most it runs; try again once one ended");
}

ApiResponse ServeApi::CachedCommand(const api::CommandRequest& command,
                                    const Caller& caller) const {
  auto make = [&]() -> std::optional<api::CommandResult> {
    if (!TakeSlot(*running_, kMaxRunningCommands)) {
      return std::nullopt;
    }
    // Run as a streamed command is, and read whole: the same bound on its output.
    CommandStream stream(
        [&](std::ostream& out, std::ostream& err, const std::atomic<bool>& interrupt) {
          return context_.run_command(command, caller, out, err, interrupt);
        },
        [running = running_](int) { running->fetch_sub(1); });
    std::string body;
    while (std::optional<std::string> piece = stream.Next()) {
      body += *piece;
    }
    stream.End();
    Result<api::CommandResult> result = api::ParseCommandResult(body);
    return result.ok() ? *std::move(result)
                       : api::CommandResult{1, "", result.status().message() + "\n"};
  };
  std::optional<AnswerCache::Answer> answer = cache_->Get(
      caller.access, command.argv, std::chrono::seconds(*command.max_age_seconds),
      *context_.clock, make);
  if (!answer) {
    return Busy(false);
  }
  ApiResponse r;
  if (answer->result.exit_code != 0) {
    r.audit_outcome = "exit " + std::to_string(answer->result.exit_code);
  }
  r.content_type = "application/x-ndjson";
  r.body = api::ToJson(answer->result);
  // How old the answer is (RFC 9111's Age): 0 when it was made for this request.
  std::chrono::seconds age =
      std::chrono::duration_cast<std::chrono::seconds>(context_.clock->Now() - answer->made);
  r.headers["Age"] = std::to_string(std::max<int64_t>(0, age.count()));
  return r;
}

ApiResponse ServeApi::Hosts(const Caller& caller) const {
  Result<std::vector<NodeRecord>> nodes = context_.store->Nodes("");
  if (!nodes.ok()) {
    return Failed(nodes.status());
  }
  std::vector<api::WorkerHost> out;
  for (const NodeRecord& n : *nodes) {
    if (!caller.access.MayUseNode(n)) {
      continue;
    }
    for (const WorkerRecord& w : n.workers) {
      if (!w.address.empty()) {
        out.push_back({n.fleet, n.name, w.index, w.address, n.port == 0 ? 22 : n.port,
                       w.host_key});
      }
    }
  }
  return Json(api::ToJson(out));
}

ApiResponse ServeApi::Jobs(const Access& access) const {
  Result<std::vector<JobRecord>> jobs = context_.store->Jobs("");
  if (!jobs.ok()) {
    return Failed(jobs.status());
  }
  std::vector<api::RestartableJob> out;
  for (const JobRecord& j : VisibleJobs(access, *std::move(jobs))) {
    out.push_back({j.id, j.name, j.fleet, j.node, j.restart, j.max_restarts, j.restarts,
                   j.state, j.last_reason, Rfc3339(j.created_at), Rfc3339(j.updated_at)});
  }
  return Json(api::ToJson(out));
}

}  // namespace tpufleet::server
