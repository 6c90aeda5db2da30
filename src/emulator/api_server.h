// ApiServer: the emulator's Cloud TPU API v2, transport-agnostic. Handle() takes one
// HTTP request and returns the response the real tpu.googleapis.com would give, so the
// HTTP binding (http_server.h) only copies bytes and unit tests need no sockets.
//
// What it serves (shared/reference/tpu-api.md §2, §10–11):
//   /v2/projects/{p}/locations[/{zone}]            locations (also under /v1: the gax
//                                                  LocationsClient asks there), and
//                                                  {zone}:generateServiceIdentity
//   /v2/…/{zone}/nodes[/{n}[:stop|:start|:getGuestAttributes]]
//   /v2/…/{zone}/queuedResources[/{q}[:reset]]
//   /v2/…/{zone}/operations[/{o}[:cancel]]
//   /v2/…/{zone}/acceleratorTypes[/{t}], runtimeVersions[/{v}]   (from the catalog)
//   POST /token, /oauth2/v4/token                  the OAuth2 token endpoint (token.h)
//   /emulator/v1/…                                 admin: status and faults (below)
// /v2alpha1 paths are served like /v2 (gcloud alpha uses them).
//
// State lives here, under one mutex: nodes, queued resources, operations, faults, per
// project and zone. Mutating calls answer at once with a long-running Operation; the
// work then progresses with time. Tick() (and every Handle) advances each pending
// transition whose time has come: CREATING → READY once EmulatorConfig::timings.create
// has passed *and* the node's workers have booted; STOPPING → STOPPED; DELETING →
// gone; a queued resource ACCEPTED → WAITING_FOR_RESOURCES → PROVISIONING → ACTIVE;
// preemption and maintenance events. An operation is done when its transition is.
//
// WorkerHosts calls (Boot of a big node takes seconds) are never made under the mutex
// nor while answering a request: they are queued (host_work.h) and run by whoever
// drives the server — HttpServer's threads via RunHostWorkOnce, a unit test via
// RunPendingHostWork — and report back when done.
//
// Authentication (config.h AuthConfig): every route but the token endpoint needs a
// bearer token, the owner's secret or one the token endpoint issued; without one it is
// 401 UNAUTHENTICATED in Google's envelope, before any routing.
//
// Admin endpoints (not Google's; loopback only, the same tokens):
//   GET    /emulator/v1/status       {"nodes":[…], "queuedResources":[…], "faults":[…],
//                                     "usage":[…], "hostWorkPending":N, "now":"…"}
//   GET    /emulator/v1/faults       {"faults":[…]}
//   POST   /emulator/v1/faults       body: a fault (faults.h ParseFault) → the fault
//                                     with its "id"
//   DELETE /emulator/v1/faults/{id}  ends that fault → {}
//   DELETE /emulator/v1/faults       ends every fault → {"cleared": N}
//   POST   /emulator/v1/token:rotate a new owner secret, published where the daemon
//                                     keeps it (STATE/token), never in the answer;
//                                     the old one gets 401 from then on → {"rotated":true}
//
// Thread-safety: Handle, Tick and the host-work methods may be called from any thread
// at once. The Clock, WorkerHosts and Catalog passed in must outlive the server.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "core/catalog.h"
#include "emulator/config.h"
#include "emulator/http_types.h"
#include "emulator/worker_hosts.h"
#include "util/clock.h"

namespace tpufleet::emulator {

class ApiServerImpl;

class ApiServer {
 public:
  /// `hosts` may be null: the server then runs API-only with SyntheticHosts
  /// (synthetic_hosts.h). `catalog` is copied.
  ApiServer(EmulatorConfig config, Clock& clock, WorkerHosts* hosts, const Catalog& catalog);
  ~ApiServer();
  ApiServer(const ApiServer&) = delete;
  ApiServer& operator=(const ApiServer&) = delete;

  /// Answers one request. Never throws; malformed input gets Google's error envelope.
  HttpResponse Handle(const HttpRequest& request);

  /// Advances every pending transition whose time has come (see above).
  void Tick();

  /// Runs queued WorkerHosts calls in the calling thread until none can run; returns
  /// how many ran. For unit tests, which then call Tick or Handle to see the results.
  size_t RunPendingHostWork();
  /// Waits up to `max_wait` for one queued WorkerHosts call and runs it; false when
  /// none came or after StopHostWork. For the serving threads of HttpServer.
  bool RunHostWorkOnce(std::chrono::milliseconds max_wait);
  /// Wakes the threads waiting in RunHostWorkOnce for good.
  void StopHostWork();
  /// WorkerHosts calls queued or running.
  size_t host_work_pending() const;

  /// Queues Destroy for the workers of every node (at shutdown, so no worker host
  /// outlives the emulator). The nodes stay in the API's state.
  void DestroyAllHosts();

  /// The body of GET /emulator/v1/status.
  std::string StatusJson();

 private:
  std::unique_ptr<ApiServerImpl> impl_;
};

}  // namespace tpufleet::emulator
