// Resolve: a worker's name keeps working when its address changes (a stop and start,
// maintenance). The address in tpufleet's state is tried first; when it does not
// answer, the node is refreshed from its provider (RefreshNodes: as `status --refresh`
// does it, the store and the SSH files updated) and the new address tried.
//
// Two users:
//  - `tpufleet ssh-proxy NODE N`, the ProxyCommand of the SSH config's Host blocks
//    (ssh_sync.h), so plain `ssh NODE`, `tpufleet ssh`, scp, VS Code and a
//    reconnecting `forward` follow the worker (ConnectToWorker);
//  - exec and cp, whose workers that could not be reached are tried again at their new
//    address after one refresh (RunResolving).
//
// No state lock is taken: the proxy runs under `up` too (its ssh), and the refresh's
// writes go onto the records as they are when written (fleet_status.h).
//
// Thread-safety: as World's members.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "control/targets.h"
#include "control/world.h"
#include "ssh/fanout.h"
#include "util/status.h"
#include "util/unique_fd.h"

namespace tpufleet {

/// How long the proxy waits for a worker's known address before asking the cloud
/// whether it moved: a worker that is there answers a TCP connect within milliseconds,
/// a moved one not at all, and the question costs one API call.
inline constexpr std::chrono::seconds kKnownAddressTimeout{3};
/// How long it then waits for the address the cloud gave: ssh's own ConnectTimeout.
inline constexpr std::chrono::seconds kResolvedAddressTimeout{10};

/// What ConnectToWorker does to the world, replaceable in tests.
struct ResolveSeams {
  /// ConnectTcp (ssh/runner.h).
  std::function<Result<UniqueFd>(const std::string& address, int port,
                                 std::chrono::milliseconds timeout)>
      connect;
  /// The node's record after a refresh from the cloud (RefreshNodes).
  std::function<Result<NodeRecord>(const std::string& node)> refresh;
};

/// The seams over `world`: ConnectTcp, and RefreshNodes for one node.
ResolveSeams RealResolveSeams(World& world);

/// A connection to the SSH port of worker `worker` of `node`: the stored address within
/// kKnownAddressTimeout; when that fails (or there is none yet), the address after one
/// refresh, within kResolvedAddressTimeout. A refused connection is returned as it is:
/// the machine at the address answered, so the worker has not moved (its sshd is not up
/// yet, as while `up` waits for it), and the cloud is not asked. `notes` gets a line when it asked the cloud.
/// NotFound for an unknown node or worker; FailedPrecondition when the refreshed node
/// is not running (gone, stopped, preempted: connecting cannot help); else the connect
/// error, with the refresh's when that failed too.
Result<UniqueFd> ConnectToWorker(Store& store, const std::string& node, int worker,
                                 const ResolveSeams& seams, std::vector<std::string>* notes);

/// "NODE N" as ssh-proxy takes them: an alias-safe node name and a worker index.
/// InvalidArgument otherwise.
Status CheckProxyTarget(const std::string& node, const std::string& worker, int* index);

/// Runs `job` (made by JobFor for `workers`, host i being workers[i]) on world.fanout,
/// as world.fanout.Run would; but a host that was never reached (NeverConnected) is
/// held back, and after the run its node is refreshed once: the hosts whose address
/// changed run again at the new one (their results are those of that run), the others
/// keep their first result. With fail_fast the first run has already stopped the
/// others, so nothing runs again; the refresh still corrects the store for the next
/// command. `refresh` is RefreshNodes over `world` when empty (tests pass their own).
Status RunResolving(
    World& world, const std::vector<WorkerTarget>& workers, const FanoutJob& job,
    FanoutSink& sink,
    const std::function<Result<std::vector<NodeRecord>>(const std::vector<std::string>&)>&
        refresh = {});

}  // namespace tpufleet
