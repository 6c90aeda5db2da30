// `tpufleet ssh-proxy --state-dir DIR -- NODE N`: the ProxyCommand of the Host blocks
// tpufleet writes (control/ssh_sync.h); `--server URL` instead of --state-dir: of the ones
// `join` writes for a team server's workers (cli/server_ssh.h). ssh runs it through the
// user's shell with the connection's data on its stdin and stdout, so nothing but that
// data may reach stdout.
#include <unistd.h>

#include <ostream>

#include "cli/app.h"
#include "cli/command.h"
#include "cli/fleet_world.h"
#include "control/resolve.h"
#include "control/server_ssh.h"
#include "remote/server_client.h"
#include "remote/joined_servers.h"
#include "util/file.h"
#include "util/stream_relay.h"

namespace tpufleet::cli {
namespace {

// A connection to worker `worker` of `node` at the address the team server `url` (one
// `join` joined) gives now, its SSH names rewritten first when the address or host keys
// changed, so that ssh checks the key the server gave over its pinned connection.
Result<UniqueFd> ConnectThroughServer(Invocation& inv, const std::string& url,
                                      const std::string& node, int worker) {
  if (inv.app.server_http == nullptr) {
    return InternalError("this build of tpufleet has no HTTP client for --server");
  }
  TPUFLEET_ASSIGN_OR_RETURN(remote::ServerOptions options, remote::ResolveServer(url, "", inv.env));
  TPUFLEET_ASSIGN_OR_RETURN(std::optional<remote::JoinedServer> joined,
                            remote::FindJoinedServer(inv.env, options.server));
  if (!joined) {
    return FailedPreconditionError("not joined to " + options.url +
                                   ": `tpufleet join INVITE` writes these SSH names");
  }
  remote::ServerClient client(inv.app.server_http, options);
  std::string notice;
  TPUFLEET_ASSIGN_OR_RETURN(std::vector<api::WorkerHost> hosts, client.Hosts(&notice));
  if (!notice.empty()) {
    inv.err << "tpufleet: " << notice << std::endl;
  }
  TPUFLEET_ASSIGN_OR_RETURN(std::string program, ThisProgram());
  TPUFLEET_ASSIGN_OR_RETURN(std::string dir, ServerSshDir(inv.env, options.server));
  TPUFLEET_ASSIGN_OR_RETURN(bool changed, WriteServerSshFiles(dir, joined->url, joined->person, hosts, program));
  if (changed) {
    inv.err << "tpufleet: updated the SSH names of " << options.url << " (addresses or host "
            << "keys changed) in " << dir << std::endl;
  }
  for (const api::WorkerHost& h : hosts) {
    if (h.node == node && h.worker == worker) {
      return ConnectToWorkerHost(h);
    }
  }
  return NotFoundError("the team server " + options.url + " has no worker " +
                       std::to_string(worker) + " of " + node + " for " + joined->person +
                       " (gone, or not theirs to use)");
}

}  // namespace

ExitStatus RunSshProxy(Invocation& inv) {
  const std::vector<std::string>& pos = inv.args.positional;
  int worker = 0;
  if (pos.size() != 2) {
    return UsageError(inv, "ssh-proxy takes a node and a worker index: "
                           "tpufleet ssh-proxy --state-dir DIR -- NODE N (or --server URL)");
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
  if (std::optional<std::string> url = inv.args.Get("server"); url && !url->empty()) {
    socket = ConnectThroughServer(inv, *url, pos[0], worker);
  } else {
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
