#include "server/http_api.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <set>

#include "api/fleet.h"
#include "api/serve.h"
#include "core/fleet_spec.h"
#include "server/metrics.h"
#include "util/prometheus_text.h"
#include "util/secret.h"
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

// The Bearer token of `headers`, or "" when there is none.
std::string BearerToken(const std::map<std::string, std::string>& headers) {
  auto it = headers.find("authorization");
  if (it == headers.end()) {
    return "";
  }
  std::string_view v = Trim(it->second);
  constexpr std::string_view kScheme = "bearer ";
  if (v.size() <= kScheme.size() || AsciiLower(v.substr(0, kScheme.size())) != kScheme) {
    return "";
  }
  return std::string(Trim(v.substr(kScheme.size())));
}

}  // namespace

ApiResponse ErrorResponse(int status, const std::string& code, const std::string& message) {
  ApiResponse r = Json(api::ToJson(api::Error{code, message}));
  r.status = status;
  return r;
}

ApiResponse ServeApi::Handle(const ApiRequest& request) const {
  std::string presented = BearerToken(request.headers);
  if (presented.empty() || !ConstantTimeEquals(presented, context_.token)) {
    ApiResponse r = ErrorResponse(
        401, "unauthenticated",
        presented.empty() ? "this API needs `Authorization: Bearer TOKEN`, the token in "
                            "STATE/serve/token"
                          : "the token is not serve's (STATE/serve/token)");
    r.headers["WWW-Authenticate"] = "Bearer";
    return r;
  }
  bool known = request.path == "/v1/status" || request.path == "/v1/events" ||
               request.path == "/v1/jobs" || request.path == "/metrics";
  if (!known) {
    return ErrorResponse(404, "not_found",
                         "no such route; there are /v1/status, /v1/events, /v1/jobs, /metrics");
  }
  if (request.method != "GET" && request.method != "HEAD") {
    ApiResponse r = ErrorResponse(405, "method_not_allowed", request.path + " is read with GET");
    r.headers["Allow"] = "GET, HEAD";
    return r;
  }
  if (request.path == "/v1/status") {
    return Status();
  }
  if (request.path == "/v1/events") {
    return Events(request);
  }
  if (request.path == "/v1/jobs") {
    return Jobs();
  }
  ApiResponse r;
  r.body = MetricsText(context_.view->Snapshot());
  r.content_type = std::string(kPrometheusContentType);
  return r;
}

ApiResponse ServeApi::Status() const {
  Clock::WallTime now = context_.clock->Now();
  ServeSnapshot snap = context_.view->Snapshot();
  api::ServeStatus out;
  Result<std::optional<ServeRecord>> record = context_.store->Serve();
  if (!record.ok()) {
    return Failed(record.status());
  }
  if (*record) {
    const ServeRecord& r = **record;
    out.serve.pid = r.pid;
    out.serve.host = r.host;
    out.serve.fleets = r.fleets;
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
  out.warnings = snap.warnings;

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
  for (const NodeRecord& n : *nodes) {
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

ApiResponse ServeApi::Events(const ApiRequest& request) const {
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
  Result<std::vector<EventRecord>> events = context_.store->Events(q);
  if (!events.ok()) {
    return Failed(events.status());
  }
  std::vector<api::Event> out;
  for (const EventRecord& e : *events) {
    out.push_back({e.id, FormatTimestamp(e.time), e.fleet, e.node, e.kind, e.detail});
  }
  return Json(api::ToJson(out));
}

ApiResponse ServeApi::Jobs() const {
  Result<std::vector<JobRecord>> jobs = context_.store->Jobs("");
  if (!jobs.ok()) {
    return Failed(jobs.status());
  }
  std::vector<api::RestartableJob> out;
  for (const JobRecord& j : *jobs) {
    out.push_back({j.id, j.name, j.fleet, j.node, j.restart, j.max_restarts, j.restarts,
                   j.state, j.last_reason, Rfc3339(j.created_at), Rfc3339(j.updated_at)});
  }
  return Json(api::ToJson(out));
}

}  // namespace tpufleet::server
