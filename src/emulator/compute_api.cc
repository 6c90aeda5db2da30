// The Compute Engine API v1 under /compute/v1/: routing, faults, and the operations
// routes (global and zonal list, get, wait, delete). Projects are compute_projects.cc.
//
// Paths (relative to /compute/v1/projects/{p}):
//   ""                                   GET   projects.get
//   setCommonInstanceMetadata            POST  projects.setCommonInstanceMetadata
//   global/operations[/{op}[/wait]]      GET, DELETE, POST wait
//   zones/{z}/operations[/{op}[/wait]]   the same, per zone
// Another collection (disks) adds its rows to kComputeRoutes and its handlers to
// ApiServerImpl; a handler that starts work answers with StartComputeOperationLocked's
// operation, rendered by ComputeOperations::Render, and finishes or fails it through
// compute_ops_ when the work is done.
//
// Faults apply as to the TPU API (it is the same project behind the same front end): a
// `denied` fault refuses every call with Compute's 403, and a `storm` answers with its
// HTTP status in Compute's envelope. They are drawn once per call, so operations.wait
// is not hit twice.
#include <algorithm>

#include "emulator/api_internal.h"
#include "util/strings.h"

namespace tpufleet::emulator {

namespace {

// operations.wait holds a request thread: Google returns "on a best-effort basis" by
// its 2-minute deadline, or sooner; the emulator returns by 30 s, so that a few waiting
// clients cannot hold every one of its request threads for long.
constexpr std::chrono::seconds kComputeWaitLimit{30};
// How often a waiting call looks again (real time with a real clock).
constexpr std::chrono::milliseconds kComputeWaitPoll{50};

ComputeError RouteNotFound(const HttpRequest& req) {
  return {404, "notFound",
          "The requested URL " + req.path + " (" + req.method + ") was not found on this server.",
          ""};
}

// The answer of a `storm` fault with HTTP status `code`, as Compute words each.
ComputeError StormError(int code, const std::string& project_number) {
  switch (code) {
    case 429:
      return {429, "rateLimitExceeded",
              "Quota exceeded for quota metric 'Queries' and limit 'Queries per minute' of "
              "service 'compute.googleapis.com' for consumer 'project_number:" +
                  project_number + "'.",
              ""};
    case 500:
      return {500, "backendError", "Internal error. Please try again or contact Google Support.",
              ""};
    case 503:
      return {503, "backendError", "The service is currently unavailable.", ""};
    case 504:
      return {504, "backendError", "The request timed out. Please try again.", ""};
    default:
      return {code, "backendError", "Injected fault: HTTP " + std::to_string(code) + ".", ""};
  }
}

// One route: a resource of the project ("" scope: the project itself), of its global
// scope, or of a zone, by the segments after the scope.
struct ComputeRoute {
  std::string_view scope;       // "", "global", "zones", or "scoped": global or zones
  std::string_view collection;  // "operations"; for the project: "" or its method
  int depth = 0;                // 0: the collection; 1: an item; 2: an item's verb
  std::string_view verb;        // at depth 2: "wait"
  std::string_view method;
  std::string_view action;      // of the IAM permission: compute.<collection>.<action>
  HttpResponse (ApiServerImpl::*handle)(const Call&, const std::string& id);
};


bool IsWait(const HttpRequest& req, const std::vector<std::string>& segs) {
  return req.method == "POST" && segs.size() >= 3 && segs.back() == "wait" &&
         segs[segs.size() - 3] == "operations";
}

}  // namespace

HttpResponse ApiServerImpl::HandleCompute(const HttpRequest& req) {
  std::vector<std::string> segs = PathSegments(req.path);
  bool wait = IsWait(req, segs);
  Clock::MonoTime deadline;
  for (bool first = true;; first = false) {
    HttpResponse r;
    Clock::MonoTime now;
    {
      std::lock_guard<std::mutex> l(mu_);
      Call c;
      c.req = &req;
      c.version = "compute/v1";
      c.now = now = clock_.MonotonicNow();
      c.wall = clock_.Now();
      AdvanceLocked(c.now, c.wall);
      if (first) {
        deadline = c.now + kComputeWaitLimit;
      }
      r = RouteComputeLocked(c, segs, first);
    }
    if (!wait || r.status != 200 || now >= deadline ||
        Json::parse(r.body, nullptr, false).value("status", "") == "DONE") {
      return r;
    }
    clock_.SleepFor(kComputeWaitPoll);
  }
}

HttpResponse ApiServerImpl::RouteComputeLocked(Call& c, const std::vector<std::string>& segs,
                                               bool first) {
  const HttpRequest& req = *c.req;
  if (segs.size() < 4 || segs[1] != "v1" || segs[2] != "projects") {
    return ErrorResponse(RouteNotFound(req));
  }
  c.project = segs[3];
  std::vector<std::string> tail(segs.begin() + 4, segs.end());
  std::string_view scope;
  if (!tail.empty() && tail[0] == "global") {
    scope = "global";
    tail.erase(tail.begin());
  } else if (tail.size() >= 2 && tail[0] == "zones") {
    scope = "zones";
    c.zone = tail[1];
    tail.erase(tail.begin(), tail.begin() + 2);
  }
  if ((!scope.empty() && tail.empty()) || tail.size() > 3) {
    return ErrorResponse(RouteNotFound(req));
  }
  std::string collection = tail.empty() ? "" : tail[0];
  int depth = tail.empty() ? 0 : static_cast<int>(tail.size()) - 1;
  std::string id = depth >= 1 ? tail[1] : "";
  std::string verb = depth == 2 ? tail[2] : "";
  // Member pointers: the table must live where the private handlers are visible.
  static constexpr ComputeRoute kComputeRoutes[] = {
      {"", "", 0, "", "GET", "get", &ApiServerImpl::GetComputeProject},
      {"", "setCommonInstanceMetadata", 0, "", "POST", "setCommonInstanceMetadata",
       &ApiServerImpl::SetCommonInstanceMetadata},
      {"scoped", "operations", 0, "", "GET", "list", &ApiServerImpl::ListComputeOperations},
      {"scoped", "operations", 1, "", "GET", "get", &ApiServerImpl::GetComputeOperation},
      {"scoped", "operations", 1, "", "DELETE", "delete", &ApiServerImpl::DeleteComputeOperation},
      {"scoped", "operations", 2, "wait", "POST", "get", &ApiServerImpl::GetComputeOperation},
      {"zones", "disks", 0, "", "GET", "list", &ApiServerImpl::ListDisks},
      {"zones", "disks", 0, "", "POST", "create", &ApiServerImpl::InsertDisk},
      {"zones", "disks", 1, "", "GET", "get", &ApiServerImpl::GetDisk},
      {"zones", "disks", 1, "", "DELETE", "delete", &ApiServerImpl::DeleteDisk},
      {"", "aggregated", 1, "", "GET", "list", &ApiServerImpl::AggregatedListDisks},
      {"zones", "diskTypes", 0, "", "GET", "list", &ApiServerImpl::ListDiskTypes},
      {"zones", "diskTypes", 1, "", "GET", "get", &ApiServerImpl::GetDiskType},
  };
  const ComputeRoute* route = nullptr;
  for (const ComputeRoute& r : kComputeRoutes) {
    if ((r.scope == scope || (r.scope == "scoped" && !scope.empty())) && r.collection == collection && r.depth == depth && r.verb == verb &&
        r.method == req.method) {
      route = &r;
      break;
    }
  }
  if (route == nullptr) {
    return ErrorResponse(RouteNotFound(req));
  }
  c.parent = "projects/" + c.project +
             (scope == "global" ? "/global" : scope == "zones" ? "/zones/" + c.zone : "");
  // compute.zoneOperations.get, compute.disks.list, compute.projects.get, …
  std::string permission_collection =
      scope.empty() ? "projects"
      : collection == "operations" ? (scope == "global" ? "globalOperations" : "zoneOperations")
                                   : collection;
  std::string permission = "compute." + permission_collection + "." + std::string(route->action);
  std::string resource = Join(std::vector<std::string>(segs.begin() + 2, segs.end()), "/");
  ComputeError forbidden{403, "forbidden",
                         "Required '" + permission + "' permission for '" +
                             resource + "'",
                         ""};
  if (CheckProjectLocked(c)) {
    forbidden.message = "Required '" + permission +
                        "' permission for 'projects/" + c.project + "'";
    return ErrorResponse(forbidden);
  }
  if (first && faults_.Denied(c.now)) {
    return ErrorResponse(forbidden);
  }
  if (std::optional<int> code = first ? faults_.DrawStorm(c.now) : std::nullopt) {
    return ErrorResponse(StormError(*code, ProjectNumber(c.project)));
  }
  if (scope == "zones" && !ZoneKnown(c.zone)) {
    return ErrorResponse(
        ComputeInvalid("Invalid value for field 'zone': '" + c.zone + "'. Unknown zone."));
  }
  return (this->*route->handle)(c, id);
}

ComputeOperation& ApiServerImpl::StartComputeOperationLocked(const Call& c, std::string_view zone,
                                                             std::string_view type,
                                                             std::string_view target,
                                                             std::string_view target_id) {
  ComputeOperation& op = compute_ops_.Start(c.project, zone, type, target, target_id, c.wall);
  op.client_operation_id = c.req->Query("requestId");
  return op;
}

ComputeOr<Json> ApiServerImpl::ParseComputeBody(const Call& c) const {
  RpcOr<Json> body = ParseBody(c);
  if (!body.ok()) {
    return ComputeError{400, "parseError", body.error().message, ""};
  }
  return body.value();
}

HttpResponse ApiServerImpl::ListComputeOperations(const Call& c, const std::string&) {
  std::string root = ComputeRoot(*c.req);
  std::vector<std::pair<std::string, Json>> items;
  for (const ComputeOperation* op : compute_ops_.List(c.parent)) {
    items.emplace_back(op->Path(), ComputeOperations::Render(*op, root));
  }
  EMULATOR_ASSIGN_OR_RESPOND(Json out, ComputePage(c, items));
  out["kind"] = "compute#operationList";
  out["id"] = c.parent + "/operations";
  out["selfLink"] = root + c.parent + "/operations";
  return JsonResponse(out);
}

HttpResponse ApiServerImpl::GetComputeOperation(const Call& c, const std::string& id) {
  ComputeOperation* op = compute_ops_.Find(c.parent, id);
  if (op == nullptr) {
    return ErrorResponse(ComputeNotFound(c.parent + "/operations/" + id));
  }
  return JsonResponse(ComputeOperations::Render(*op, ComputeRoot(*c.req)));
}

HttpResponse ApiServerImpl::DeleteComputeOperation(const Call& c, const std::string& id) {
  ComputeOperation* op = compute_ops_.Find(c.parent, id);
  if (op == nullptr) {
    return ErrorResponse(ComputeNotFound(c.parent + "/operations/" + id));
  }
  compute_ops_.Erase(op->Path());
  HttpResponse r;
  r.status = 204;
  return r;
}

}  // namespace tpufleet::emulator
