// ServeApi: the routes of `tpufleet serve`'s HTTP API, transport-agnostic (one request
// in, one response out), so unit tests and the HTTP binding (http_server.h) drive the
// same code. docs/serve.md is the API's reference.
//
//   GET /v1/status     api::ServeStatus: the serve process (the store's serve record),
//                      every node of the fleets it keeps (state, age, last
//                      time-to-recover), the last pass's warnings
//   GET /v1/events     api::Event list, oldest first; ?since=RFC3339|DURATION (10m: the
//                      last ten minutes) &fleet= &node= &kind= &limit= (at most 1000)
//   GET /v1/jobs       api::RestartableJob list: the jobs serve restarts
//   GET /metrics       Prometheus text (metrics.h)
//
// Every route needs `Authorization: Bearer TOKEN` (token.h), /metrics too: 401 without
// it or with another token (compared in constant time). Only GET (and HEAD, which httplib
// answers as GET without a body) is served: 405 for another method, 404 for another path.
// Errors are {"error": {"code", "message"}} (api::ToJson of an api::Error).
//
// Thread-safety: Handle may be called from many threads at once (the view and the store
// are thread-safe; the rest is read only after construction).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "reconcile/serve_view.h"
#include "store/store.h"
#include "util/clock.h"

namespace tpufleet::server {

/// Most events one /v1/events answers (the newest that match): a bounded body.
inline constexpr size_t kMaxEventsPerRequest = 1000;

struct ApiRequest {
  std::string method;                          // "GET"
  std::string path;                            // "/v1/status", without the query
  std::map<std::string, std::string> query;    // decoded
  std::map<std::string, std::string> headers;  // names in lower case
};

struct ApiResponse {
  int status = 200;
  std::string body;
  std::string content_type = "application/json";
  std::map<std::string, std::string> headers;  // extra headers
};

/// What the routes read. Pointers are borrowed; all must outlive the ServeApi.
struct ServeApiContext {
  std::string token;             // the bearer token every request must carry
  const ServeView* view = nullptr;
  Store* store = nullptr;        // nodes, events, jobs, the serve record
  Clock* clock = nullptr;        // ages and "seconds ago"
};

class ServeApi {
 public:
  explicit ServeApi(ServeApiContext context) : context_(std::move(context)) {}

  ApiResponse Handle(const ApiRequest& request) const;

 private:
  ApiResponse Status() const;
  ApiResponse Events(const ApiRequest& request) const;
  ApiResponse Jobs() const;

  const ServeApiContext context_;
};

/// An error response: `status` and {"error": {"code", "message"}}.
ApiResponse ErrorResponse(int status, const std::string& code, const std::string& message);

}  // namespace tpufleet::server
