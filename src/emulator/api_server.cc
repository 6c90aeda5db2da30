#include "emulator/api_server.h"

#include <algorithm>
#include <set>
#include <tuple>

#include "emulator/api_internal.h"
#include "emulator/schema.h"
#include "emulator/synthetic_hosts.h"
#include "emulator/system_params.h"
#include "util/log.h"
#include "util/strings.h"

namespace tpufleet::emulator {

// ---------------------------------------------------------------------------
// ApiServer: a thin facade over ApiServerImpl.

ApiServer::ApiServer(EmulatorConfig config, Clock& clock, WorkerHosts* hosts,
                     const Catalog& catalog)
    : impl_(std::make_unique<ApiServerImpl>(std::move(config), clock, hosts, catalog)) {}

ApiServer::~ApiServer() {
  impl_->work().Shutdown();
}

HttpResponse ApiServer::Handle(const HttpRequest& request) {
  // Google's system parameters (alt, fields, prettyPrint …) hold on every route.
  Result<SystemParams> params = ParseSystemParams(request);
  if (!params.ok()) {
    return ErrorResponse(InvalidArgument(params.status().message()));
  }
  return ApplySystemParams(*params, impl_->Handle(request));
}

void ApiServer::Tick() {
  impl_->Tick();
}

size_t ApiServer::RunPendingHostWork() {
  size_t n = 0;
  while (impl_->work().RunOne()) {
    ++n;
  }
  return n;
}

bool ApiServer::RunHostWorkOnce(std::chrono::milliseconds max_wait) {
  return impl_->work().WaitAndRunOne(max_wait);
}

void ApiServer::StopHostWork() {
  impl_->work().Shutdown();
}

size_t ApiServer::host_work_pending() const {
  return impl_->work().size();
}

void ApiServer::DestroyAllHosts() {
  impl_->DestroyAllHosts();
}

std::string ApiServer::StatusJson() {
  return impl_->StatusJson();
}

// ---------------------------------------------------------------------------

ApiServerImpl::ApiServerImpl(EmulatorConfig config, Clock& clock, WorkerHosts* hosts,
                             const Catalog& catalog)
    : config_(std::move(config)),
      clock_(clock),
      synthetic_(hosts == nullptr ? std::make_unique<SyntheticHosts>(config_.seed) : nullptr),
      hosts_(hosts != nullptr ? hosts : synthetic_.get()),
      catalog_(catalog),
      tokens_(config_.auth, clock),
      rng_(config_.seed),
      compute_ops_(config_.seed) {}

ApiServerImpl::~ApiServerImpl() = default;

std::vector<std::string> PathSegments(std::string_view path) {
  std::vector<std::string> out;
  for (std::string& s : Split(path, '/')) {
    if (!s.empty()) {
      out.push_back(std::move(s));
    }
  }
  return out;
}

namespace {

// "n1:stop" -> {"n1", "stop"}.
std::pair<std::string, std::string> SplitVerb(const std::string& seg) {
  size_t colon = seg.find(':');
  if (colon == std::string::npos) {
    return {seg, ""};
  }
  return {seg.substr(0, colon), seg.substr(colon + 1)};
}

// The 403 of a `denied` fault: the caller's role was taken away. The message is the
// TPU API's as users reported it ("Permission 'tpu.nodes.get' denied on
// 'projects/p/locations/z/nodes/n'", tensorflow/tpu#296); the ErrorInfo is the one
// Google's APIs add to an IAM refusal (not seen from the TPU API in a public sample).
// The permission is named from the path and method: tpu.<collection>.<list|get|create|
// delete|update|verb>.
RpcError IamDenied(const HttpRequest& req, const std::vector<std::string>& segs) {
  std::vector<std::string> rest(segs.begin() + 1, segs.end());
  std::string verb;
  if (!rest.empty()) {
    std::tie(rest.back(), verb) = SplitVerb(rest.back());
  }
  bool item = !rest.empty() && rest.size() % 2 == 0;
  std::string collection = rest.empty() ? "projects" : rest[rest.size() - (item ? 2 : 1)];
  if (verb.empty()) {
    verb = !item ? (req.method == "POST" ? "create" : "list")
           : req.method == "DELETE" ? "delete"
           : req.method == "PATCH"  ? "update"
                                    : "get";
  }
  std::string permission = "tpu." + collection + "." + verb;
  std::string resource = Join(rest, "/");
  return {RpcCode::kPermissionDenied,
          "Permission '" + permission + "' denied on '" + resource + "'",
          Json::array({ErrorInfoDetail("IAM_PERMISSION_DENIED", "iam.googleapis.com",
                                       {{"permission", permission}, {"resource", resource}})})};
}

HttpResponse RouteNotFound(const HttpRequest& req) {
  return ErrorResponse(
      {RpcCode::kNotFound,
       "The requested URL " + req.path + " (" + req.method + ") was not found on this server.",
       Json::array()});
}

}  // namespace

HttpResponse ApiServerImpl::Handle(const HttpRequest& req) {
  try {
    if (req.path == "/token" || req.path == "/oauth2/v4/token" || req.path == "/o/oauth2/token") {
      if (req.method != "POST") {
        return RouteNotFound(req);
      }
      TokenReply r = tokens_.Exchange(req.body);
      HttpResponse resp;
      resp.status = r.http_status;
      resp.body = r.body;
      resp.headers["Cache-Control"] = "no-cache, no-store, max-age=0, must-revalidate";
      return resp;
    }
    // Everything else needs a token, admin routes included, and before any routing so
    // that a stranger learns nothing, not even which paths exist.
    bool admin = StartsWith(req.path, "/emulator/");
    if (std::optional<RpcError> e = CheckAuth(req, admin)) {
      HttpResponse r = ErrorResponse(*e);
      r.headers["WWW-Authenticate"] = "Bearer realm=\"https://accounts.google.com/\"";
      return r;
    }
    return admin ? HandleAdmin(req) : HandleApi(req);
  } catch (const std::exception& e) {
    // nlohmann throws on type mismatches deep in a handler; answer as Google does for
    // a failure it did not foresee instead of letting the exception out of the module.
    Log(LogLevel::kWarn, std::string("emulator: ") + req.method + " " + req.path + ": " + e.what());
    return ErrorResponse({RpcCode::kInternal, "Internal error encountered.", Json::array()});
  }
}

void ApiServerImpl::Tick() {
  std::lock_guard<std::mutex> l(mu_);
  AdvanceLocked(clock_.MonotonicNow(), clock_.Now());
}

std::optional<RpcError> ApiServerImpl::CheckAuth(const HttpRequest& req, bool admin) const {
  std::string token = req.Query("access_token");
  std::string auth = req.Header("authorization");
  if (auth.size() > 7 && (StartsWith(auth, "Bearer ") || StartsWith(auth, "bearer "))) {
    token = auth.substr(7);
  }
  bool owner_accepted = admin || !config_.auth.require_issued_tokens;
  if (!token.empty() && ((owner_accepted && tokens_.IsOwner(token)) || tokens_.IsValid(token))) {
    return std::nullopt;
  }
  if (token.empty()) {
    return RpcError{
        RpcCode::kUnauthenticated,
        "Request is missing required authentication credential. Expected OAuth 2 access token, "
        "login cookie or other valid authentication credential. See "
        "https://developers.google.com/identity/sign-in/web/devconsole-project.",
        Json::array()};
  }
  return RpcError{
      RpcCode::kUnauthenticated,
      "Request had invalid authentication credentials. Expected OAuth 2 access token, login "
      "cookie or other valid authentication credential. See "
      "https://developers.google.com/identity/sign-in/web/devconsole-project.",
      Json::array({ErrorInfoDetail("ACCESS_TOKEN_TYPE_UNSUPPORTED", "googleapis.com",
                                   {{"service", "tpu.googleapis.com"}})})};
}

namespace {

// A project id as GCP spells them (lower-case letters, digits and hyphens, a letter
// first, no hyphen last), or a project number. Google also wants 6 to 30 characters;
// the emulator accepts shorter ids ("p") so tests stay short. Anything else would also
// break the workers' DNS names (ZONE.c.PROJECT.internal).
bool IsProjectId(const std::string& p) {
  if (p.empty() || p.size() > 30) {
    return false;
  }
  if (std::all_of(p.begin(), p.end(), [](char ch) { return ch >= '0' && ch <= '9'; })) {
    return true;
  }
  return p[0] >= 'a' && p[0] <= 'z' && p.back() != '-' &&
         std::all_of(p.begin(), p.end(), [](char ch) {
           return (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '-';
         });
}

}  // namespace

std::optional<RpcError> ApiServerImpl::CheckProjectLocked(const Call& c) {
  if (IsProjectId(c.project) &&
      (config_.projects.empty() || std::find(config_.projects.begin(), config_.projects.end(),
                                             c.project) != config_.projects.end())) {
    return std::nullopt;
  }
  return RpcError{
      RpcCode::kPermissionDenied, "Permission denied on resource project " + c.project + ".",
      Json::array({ErrorInfoDetail(
          "CONSUMER_INVALID", "googleapis.com",
          {{"service", "tpu.googleapis.com"}, {"consumer", "projects/" + c.project}})})};
}

bool ApiServerImpl::ZoneKnown(std::string_view zone) const {
  for (const Family& f : catalog_.families()) {
    if (std::find(f.zones.begin(), f.zones.end(), zone) != f.zones.end()) {
      return true;
    }
  }
  return false;
}

std::vector<const Family*> ApiServerImpl::FamiliesInZone(std::string_view zone) const {
  std::vector<const Family*> out;
  for (const Family& f : catalog_.families()) {
    if (std::find(f.zones.begin(), f.zones.end(), zone) != f.zones.end()) {
      out.push_back(&f);
    }
  }
  return out;
}

HttpResponse ApiServerImpl::HandleApi(const HttpRequest& req) {
  std::vector<std::string> segs = PathSegments(req.path);
  if (!segs.empty() && segs[0] == "compute") {
    return HandleCompute(req);  // compute_api.cc
  }
  std::lock_guard<std::mutex> l(mu_);
  Call c;
  c.req = &req;
  c.now = clock_.MonotonicNow();
  c.wall = clock_.Now();
  AdvanceLocked(c.now, c.wall);

  if (segs.empty() || (segs[0] != "v1" && segs[0] != "v2" && segs[0] != "v2alpha1")) {
    return RouteNotFound(req);
  }
  c.version = segs[0];
  if (faults_.Denied(c.now)) {
    return ErrorResponse(IamDenied(req, segs));
  }
  if (std::optional<int> code = faults_.DrawStorm(c.now)) {
    RpcError e{RpcCodeOfHttp(*code), "", Json::array()};
    bool read = req.method == "GET";
    switch (*code) {
      case 429:
        e.message =
            std::string("Quota exceeded for quota metric '") + (read ? "Read" : "Write") +
            " requests' and limit '" + (read ? "Read" : "Write") +
            " requests per minute' of service 'tpu.googleapis.com' for consumer 'project_number:" +
            ProjectNumber(segs.size() > 2 ? segs[2] : "") + "'.";
        e.details.push_back(ErrorInfoDetail(
            "RATE_LIMIT_EXCEEDED", "googleapis.com",
            {{"service", "tpu.googleapis.com"},
             {"quota_metric",
              std::string("tpu.googleapis.com/") + (read ? "read" : "write") + "_requests"},
             {"quota_limit",
              std::string(read ? "Read" : "Write") + "RequestsPerMinutePerProject"}}));
        break;
      case 500:
        e.message = "Internal error encountered.";
        break;
      case 503:
        e.message = "The service is currently unavailable.";
        break;
      case 504:
        e.message = "The request timed out. Please try again.";
        break;
      default:
        e.message = "Injected fault: HTTP " + std::to_string(*code) + ".";
        break;
    }
    HttpResponse r = ErrorResponse(e);
    if (Json j = Json::parse(r.body, nullptr, false); j.is_object()) {
      j["error"]["code"] = *code;
      r = JsonResponse(j, *code);
    }
    return r;
  }
  if (segs.size() < 4 || segs[1] != "projects" || segs[3] != "locations") {
    return RouteNotFound(req);
  }
  c.project = segs[2];
  if (std::optional<RpcError> e = CheckProjectLocked(c)) {
    return ErrorResponse(*e);
  }
  return RouteLocked(c, segs);
}

HttpResponse ApiServerImpl::RouteLocked(Call& c, const std::vector<std::string>& segs) {
  const HttpRequest& req = *c.req;
  const std::string& m = req.method;
  if (segs.size() == 4) {
    return m == "GET" ? ListLocations(c) : RouteNotFound(req);
  }
  auto [zone, zone_verb] = SplitVerb(segs[4]);
  c.zone = zone;
  c.parent = "projects/" + c.project + "/locations/" + c.zone;
  if (segs.size() == 5) {
    if (zone_verb.empty() && m == "GET") {
      return GetLocation(c);
    }
    if (zone_verb == "generateServiceIdentity" && m == "POST" && c.version != "v1") {
      if (!ZoneKnown(c.zone)) {
        return ErrorResponse({RpcCode::kPermissionDenied,
                              "Location " + c.zone + " is not found or access is unauthorized.",
                              Json::array()});
      }
      return GenerateServiceIdentity(c);
    }
    return RouteNotFound(req);
  }
  if (c.version == "v1" || !zone_verb.empty() || segs.size() > 7) {
    return RouteNotFound(req);
  }
  if (!ZoneKnown(c.zone)) {
    return ErrorResponse({RpcCode::kPermissionDenied,
                          "Location " + c.zone + " is not found or access is unauthorized.",
                          Json::array()});
  }
  // The collections (COLLECTION) and their resources (COLLECTION/ID[:VERB]), by method.
  struct CollectionRoute {
    std::string_view collection;
    std::string_view method;
    HttpResponse (ApiServerImpl::*handle)(const Call&);
  };
  static constexpr CollectionRoute kCollectionRoutes[] = {
      {"nodes", "GET", &ApiServerImpl::ListNodes},
      {"nodes", "POST", &ApiServerImpl::CreateNode},
      {"queuedResources", "GET", &ApiServerImpl::ListQueuedResources},
      {"queuedResources", "POST", &ApiServerImpl::CreateQueuedResource},
      {"operations", "GET", &ApiServerImpl::ListOperations},
      {"acceleratorTypes", "GET", &ApiServerImpl::ListAcceleratorTypes},
      {"runtimeVersions", "GET", &ApiServerImpl::ListRuntimeVersions},
  };
  struct ResourceRoute {
    std::string_view collection;
    std::string_view verb;  // "" for the resource itself
    std::string_view method;
    HttpResponse (ApiServerImpl::*handle)(const Call&, const std::string&);
  };
  static constexpr ResourceRoute kResourceRoutes[] = {
      {"nodes", "", "GET", &ApiServerImpl::GetNode},
      {"nodes", "", "DELETE", &ApiServerImpl::DeleteNode},
      {"nodes", "", "PATCH", &ApiServerImpl::PatchNode},
      {"nodes", "stop", "POST", &ApiServerImpl::StopNode},
      {"nodes", "start", "POST", &ApiServerImpl::StartNode},
      {"nodes", "getGuestAttributes", "POST", &ApiServerImpl::GetGuestAttributes},
      {"queuedResources", "", "GET", &ApiServerImpl::GetQueuedResource},
      {"queuedResources", "", "DELETE", &ApiServerImpl::DeleteQueuedResource},
      {"queuedResources", "reset", "POST", &ApiServerImpl::ResetQueuedResource},
      {"operations", "", "GET", &ApiServerImpl::GetOperation},
      {"operations", "", "DELETE", &ApiServerImpl::DeleteOperation},
      {"operations", "cancel", "POST", &ApiServerImpl::CancelOperation},
      {"acceleratorTypes", "", "GET", &ApiServerImpl::GetAcceleratorType},
      {"runtimeVersions", "", "GET", &ApiServerImpl::GetRuntimeVersion},
  };
  const std::string& collection = segs[5];
  if (segs.size() == 6) {
    for (const CollectionRoute& r : kCollectionRoutes) {
      if (r.collection == collection && r.method == m) {
        return (this->*r.handle)(c);
      }
    }
    return RouteNotFound(req);
  }
  auto [id, verb] = SplitVerb(segs[6]);
  for (const ResourceRoute& r : kResourceRoutes) {
    if (r.collection == collection && r.verb == verb && r.method == m) {
      return (this->*r.handle)(c, id);
    }
  }
  return RouteNotFound(req);
}

RpcOr<Json> ApiServerImpl::ParseBody(const Call& c) const {
  std::string_view body = Trim(c.req->body);
  if (body.empty()) {
    return Json::object();
  }
  Json j = Json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    return InvalidArgument("Invalid JSON payload received. Unexpected token.\n" +
                           std::string(body.substr(0, std::min<size_t>(body.size(), 40))));
  }
  if (!j.is_object()) {
    return InvalidArgument("Invalid JSON payload received. Expected an object.");
  }
  return j;
}

RpcOr<Json> ApiServerImpl::ParseBodyAs(const Call& c, std::string_view type,
                                       std::string_view at) const {
  EMULATOR_ASSIGN_OR_RETURN_RPC(Json body, ParseBody(c));
  return Canonicalize(body, type, at, c.version);
}

RpcOr<Json> ApiServerImpl::Page(const Call& c,
                                const std::vector<std::pair<std::string, Json>>& items,
                                std::string_view field, bool sorted) const {
  long long size = config_.default_page_size;
  if (std::string ps = c.req->Query("pageSize"); !ps.empty()) {
    if (!ParseInt(ps, &size) || size < 0) {
      return InvalidArgument("Invalid value at 'page_size' (TYPE_INT32), \"" + ps + "\"");
    }
    if (size == 0) {
      size = config_.default_page_size;
    }
  }
  size = std::min<long long>(size, config_.max_page_size);
  size_t start = 0;
  if (std::string token = c.req->Query("pageToken"); !token.empty()) {
    Result<std::string> key = DecodePageToken(token);
    if (!key.ok()) {
      return InvalidArgument("Invalid page token.");
    }
    bool found = false;
    for (size_t i = 0; i < items.size(); ++i) {
      if (items[i].first == *key || (sorted && items[i].first > *key)) {
        start = items[i].first == *key ? i + 1 : i;
        found = true;
        break;
      }
    }
    if (!found) {
      if (!sorted) {
        return InvalidArgument("Invalid page token.");
      }
      start = items.size();
    }
  }
  Json out = Json::object();
  Json list = Json::array();
  size_t end = std::min(items.size(), start + static_cast<size_t>(size));
  for (size_t i = start; i < end; ++i) {
    list.push_back(items[i].second);
  }
  if (!list.empty()) {
    out[std::string(field)] = std::move(list);
  }
  if (end < items.size() && end > start) {
    out["nextPageToken"] = EncodePageToken(items[end - 1].first);
  }
  return out;
}

}  // namespace tpufleet::emulator
