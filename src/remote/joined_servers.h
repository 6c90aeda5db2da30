// The team servers this user joined with `tpufleet join FILE` (an invite, api/invite.h):
//
//   CONFIG/tpufleet/servers/HOST:PORT  {"url", "person", "token"}: who they are there and
//                                      the token ResolveServer presents to that server
//                                      when neither TPUFLEET_TOKEN nor TPUFLEET_TOKEN_FILE
//                                      is set
//   CONFIG/tpufleet/server             the URL of the server joined last: the default, for
//                                      commands given neither --server nor TPUFLEET_SERVER
//
// CONFIG is $XDG_CONFIG_HOME, else ~/.config (known_servers.h's). Only `join` writes
// these files, so a machine where no one joined (the server's own, an admin's) never
// sends a command elsewhere on its own. Both are credentials or say where credentials
// go: written 0600 in a 0700 directory, read only when private (util/private_file.h).
//
// Thread-safety: stateless functions; two joins at once: the last write wins.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "util/status.h"

namespace tpufleet::remote {

struct JoinedServer {
  std::string url;     // "https://HOST:PORT", as ResolveServer writes it
  std::string server;  // "HOST:PORT": its line in known_servers and its file's name
  std::string person;  // their name there (and Unix account on its workers)
  std::string token;
};

/// Keeps `joined` and makes it the default server.
Status SaveJoinedServer(const std::map<std::string, std::string>& env, const JoinedServer& joined);

/// The server "HOST:PORT" as joined; nullopt when it was not. InvalidArgument naming the
/// file when it is not one `join` wrote; FailedPrecondition when it is not private.
Result<std::optional<JoinedServer>> FindJoinedServer(const std::map<std::string, std::string>& env,
                                                     const std::string& server);

/// The default server's URL; nullopt when this user never joined one.
Result<std::optional<std::string>> DefaultServerUrl(const std::map<std::string, std::string>& env);

}  // namespace tpufleet::remote
