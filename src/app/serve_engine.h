// tpufleet's ServeEngine (cli/serve_command.h): what `tpufleet serve` runs once its specs
// are read. Over one world of the state directory (FleetWorlds, not exclusive: serve
// takes STATE/lock only around each action, through a StateDirLocker):
//   - STATE/serve.lock, held for the engine's life (one serve per state);
//   - the Reconciler (reconcile/reconciler.h) on an EventLoop of its own thread;
//   - the HTTP API (server/http_server.h) on --listen, behind STATE/serve/token, over
//     TLS with serve's own certificate or the one given (server/tls_identity.h);
//   - the serve record (store's ServeRecord) the reconciler writes every pass, cleared
//     when the engine stops;
//   - on a PostgreSQL store (--store), the election (store/postgres_leader.h): the serve
//     that holds the lead runs the reconciler; the others serve the API from the store
//     and try for the lead every kLeaderPoll. A leader that loses it stops itself.
//
// Thread-safety: the command's thread calls SetFleets, RunOnce, Start and Stop; the
// reconciler runs on the engine's loop thread (SetFleets hands the specs over to it).
#pragma once

#include <memory>

#include "app/fleet_world.h"
#include "cli/serve_command.h"

namespace tpufleet::app {

/// Builds the engine for `inv` (its environment names the state dir). FailedPrecondition
/// when another serve keeps this state; the token's and the listening socket's errors.
Result<std::unique_ptr<cli::ServeEngine>> MakeServeEngine(FleetWorlds& worlds,
                                                          cli::Invocation& inv,
                                                          cli::ServeSettings settings);

}  // namespace tpufleet::app
