// `tpufleet ssh-proxy --state-dir DIR -- NODE N`: the ProxyCommand of the Host blocks
// tpufleet writes (control/ssh_sync.h). ssh runs it through the user's shell with the
// connection's data on its stdin and stdout, so nothing but that data may reach stdout.
#include <unistd.h>

#include <ostream>

#include "cli/command.h"
#include "cli/fleet_world.h"
#include "control/resolve.h"
#include "util/stream_relay.h"

namespace tpufleet::cli {

ExitStatus RunSshProxy(Invocation& inv) {
  const std::vector<std::string>& pos = inv.args.positional;
  int worker = 0;
  if (pos.size() != 2) {
    return UsageError(inv, "ssh-proxy takes a node and a worker index: "
                           "tpufleet ssh-proxy --state-dir DIR -- NODE N");
  }
  if (Status s = CheckProxyTarget(pos[0], pos[1], &worker); !s.ok()) {
    return UsageError(inv, s.message());
  }
  // The state dir that wrote the config, whatever this shell's environment says; its
  // owner is checked when the world opens, as for every command.
  if (std::optional<std::string> dir = inv.args.Get("state-dir"); dir && !dir->empty()) {
    inv.env["TPUFLEET_STATE_DIR"] = *dir;
  }
  Result<UniqueFd> socket = UnavailableError("not connected");
  {
    Result<std::unique_ptr<WorldHandle>> handle = OpenWorld(inv, false);
    if (!handle.ok()) {
      return Fail(inv, handle.status());
    }
    World& world = (*handle)->world();
    std::vector<std::string> notes;
    socket = ConnectToWorker(world.store, pos[0], worker, RealResolveSeams(world), &notes);
    for (const std::string& note : notes) {
      inv.err << "tpufleet: " << note << std::endl;
    }
  }  // the store is closed while the session lasts
  if (!socket.ok()) {
    return Fail(inv, socket.status());
  }
  Status relay = RelayStreams(STDIN_FILENO, STDOUT_FILENO, socket->get());
  // ssh ends the session by closing our stdin or stdout; neither is a failure.
  return relay.ok() || relay.code() != StatusCode::kUnavailable ? ExitStatus::kOk
                                                                 : Fail(inv, relay);
}

}  // namespace tpufleet::cli
