// ServeApi: the routes of `tpufleet serve`'s HTTP API, transport-agnostic (one request
// in, one response out, its body whole or an ApiStream), so unit tests and the HTTP
// binding (http_server.h) drive the same code. docs/serve.md is the API's reference.
//
//   GET /v1/status     api::ServeStatusReport: the serve process (the store's serve record),
//                      every node of the fleets it keeps (state, age, last
//                      time-to-recover), the last pass's warnings
//   GET /v1/events     api::Event list, oldest first; ?since=RFC3339|DURATION (10m: the
//                      last ten minutes) &fleet= &node= &kind= &limit= (at most 1000)
//   GET /v1/jobs       api::RestartableJob list: the jobs serve restarts
//   GET /v1/hosts      api::WorkerHost list (api/invite.h): the workers of the nodes the
//                      caller may use (Access::MayUseNode; the operator: all) with an
//                      address, their SSH port and pinned host key, for a collaborator's
//                      SSH names (`tpufleet join`, `ssh-proxy --server`)
//   GET /metrics       Prometheus text (metrics.h)
//   POST /v1/command   api::CommandRequest in; out, as the command prints it, the
//                      stream api/remote_command.h describes (ApiResponse::stream): a
//                      CLI command run here (ServeApiContext::run_command) on a thread of
//                      its own, for `tpufleet --server URL`. A client that goes away
//                      interrupts the command (command_stream.h). At most
//                      kMaxRunningCommands run at once, and kMaxFollowedLogs
//                      `logs -f`: 503 unavailable past that. With max_age_seconds, a
//                      report (answer_cache.h) is answered whole, perhaps from an
//                      answer made for the same person a moment ago (its Age header
//                      says how long ago).
//
//   GET /, /ui/…       the dashboard's files (dashboard.h), to anyone: they hold no data
//
// Every other route needs `Authorization: Bearer TOKEN` (token.h), /metrics too: 401 without
// it or with another token; who is calling is auth.h's one answer. What a route shows
// is what the caller may see (control/visible.h): a member's /v1/status lists the nodes
// they may see (and no pass warnings), /v1/events those nodes' events and their fleets'
// own, /v1/jobs their own jobs; /metrics is 403 permission_denied but for the operator
// and the admins of every fleet. Every request is written to the audit log (audit.h),
// a bad token's as person "?" and outcome "unauthenticated", but the operator's
// /metrics scrapes. The other routes are
// read with GET (and HEAD, which httplib answers as GET without a body): 405 for another
// method, 404 for another path.
// Errors are {"error": {"code", "message"}} (api::ToJson of an api::Error).
//
// Thread-safety: Handle may be called from many threads at once (the view and the store
// are thread-safe; the rest is read only after construction).
#pragma once

#include <atomic>
#include <functional>
#include <iosfwd>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "api/remote_command.h"
#include "reconcile/serve_view.h"
#include "server/answer_cache.h"
#include "server/auth.h"
#include "store/store.h"
#include "util/clock.h"

namespace tpufleet::server {

/// Most events one /v1/events answers (the newest that match): a bounded body.
inline constexpr size_t kMaxEventsPerRequest = 1000;
/// Commands run at once for clients. A command holds its request's thread for as long
/// as it runs, so this is kept below the HTTP server's threads (http_server.h
/// kRequestThreads), whose rest answer the other routes however many commands run.
inline constexpr int kMaxRunningCommands = 8;
/// `logs -f` (FollowsLog) followed at once, besides those: each holds a thread until its
/// job ends or its reader goes, but works only when a line comes.
inline constexpr int kMaxFollowedLogs = 32;

/// Whether the command `argv` is `logs … -f|--follow …`.
bool FollowsLog(const std::vector<std::string>& argv);

struct ApiRequest {
  std::string method;                          // "GET"
  std::string path;                            // "/v1/status", without the query
  std::map<std::string, std::string> query;    // decoded
  std::map<std::string, std::string> headers;  // names in lower case
  std::string body = {};                       // POST /v1/command's
};

/// A body made while it is sent (POST /v1/command's). The binding calls Next until it
/// gives nullopt (or the client is gone), then End once, whatever happened.
/// Thread-safety: Next and End from one thread at a time.
class ApiStream {
 public:
  virtual ~ApiStream() = default;
  /// The next bytes of the body, waiting a moment (command_stream.h
  /// kPartialLineFlush at most) for them: "" when none came; nullopt once the body is
  /// complete.
  virtual std::optional<std::string> Next() = 0;
  /// The body is not read further (complete, the client gone, the server stopping):
  /// stops what makes it and returns once that ended.
  virtual void End() = 0;
};

struct ApiResponse {
  int status = 200;
  std::string body;
  std::shared_ptr<ApiStream> stream = nullptr;  // set: the body, sent chunked; `body` unused
  std::string content_type = "application/json";
  std::map<std::string, std::string> headers;  // extra headers
  std::string error_code;  // an error's {"error": {"code"}} ("" when OK), for the audit log
  std::string audit_outcome;  // the audit line's outcome when not the status's ("exit 1")
};

/// What the routes read. Pointers are borrowed; all must outlive the ServeApi.
struct ServeApiContext {
  std::string token;             // the bearer token every request must carry
  const ServeView* view = nullptr;
  Store* store = nullptr;        // nodes, events, jobs, the serve record
  Clock* clock = nullptr;        // ages, "seconds ago", the audit log's times
  /// Runs a CLI command (its words and the files it reads) for `caller`, printing to
  /// `out` and `err`, and gives its exit status (app/serve_engine.cc:
  /// cli/remote_command.h's RunServedCommand); it should end soon once `interrupt` turns
  /// true. Null: POST /v1/command is 404. Called on threads of its own, several at once.
  std::function<int(const api::CommandRequest& request, const Caller& caller,
                    std::ostream& out, std::ostream& err, const std::atomic<bool>& interrupt)>
      run_command = nullptr;
};

class ServeApi {
 public:
  explicit ServeApi(ServeApiContext context) : context_(std::move(context)) {}

  ApiResponse Handle(const ApiRequest& request) const;

 private:
  // The answer to an authenticated `caller`; `action` is what the audit line says, when
  // the route knows better than the method and path (a command's stream writes its own
  // line, with how the command ended).
  ApiResponse Route(const ApiRequest& request, const Caller& caller, std::string& action) const;
  // One line of the audit log (audit.h).
  void Audit(const std::string& person, const std::string& action,
             const std::string& outcome) const;
  ApiResponse Status(const Access& access) const;
  ApiResponse Events(const ApiRequest& request, const Access& access) const;
  ApiResponse Jobs(const Access& access) const;
  ApiResponse Hosts(const Caller& caller) const;
  ApiResponse Command(const ApiRequest& request, const Caller& caller, std::string& action) const;
  // A command asked with max_age_seconds (answer_cache.h): run on this thread, its answer
  // whole, or one kept.
  ApiResponse CachedCommand(const api::CommandRequest& command, const Caller& caller) const;
  // One of `most` slots counted by `slots`, or false when they are all taken.
  static bool TakeSlot(std::atomic<int>& slots, int most);
  static ApiResponse Busy(bool follows);  // 503: every slot (of followed logs) taken

  const ServeApiContext context_;
  // Commands running now (their streams', until the command ended): kMaxRunningCommands.
  std::shared_ptr<std::atomic<int>> running_ = std::make_shared<std::atomic<int>>(0);
  // `logs -f` following now: kMaxFollowedLogs.
  std::shared_ptr<std::atomic<int>> following_ = std::make_shared<std::atomic<int>>(0);
  std::shared_ptr<AnswerCache> cache_ = std::make_shared<AnswerCache>();
};

/// An error response: `status` and {"error": {"code", "message"}}.
ApiResponse ErrorResponse(int status, const std::string& code, const std::string& message);

}  // namespace tpufleet::server
