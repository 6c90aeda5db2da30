// ServerClient: the CLI's side of a team server (`tpufleet --server URL …`, or
// TPUFLEET_SERVER): it sends a command's words to serve's POST /v1/command
// (api/remote_command.h) over util/http_client, with the bearer token, and gives what
// the command prints there as it prints it (the answer is a stream), then its exit
// status. Closing the connection (Run's `stop`: a Ctrl-C) interrupts the command there.
//
// Whom it talks to: the server's TLS certificate is pinned (known_servers.h), never
// checked against CAs or names. The first connection to a server records the
// certificate it presents (trust on first use, said on stderr with the fingerprint, to
// compare with the one serve printed at start); every later one refuses another
// certificate, before the token is sent. `--server-fingerprint SHA256:…` pins it ahead
// of the first use (no trust on first use), and replaces a pin the user has checked is
// stale. Plain http:// is for a loopback server only (127.0.0.1, [::1], localhost), as
// serve's --plain-http.
//
// The token: TPUFLEET_TOKEN, else the file TPUFLEET_TOKEN_FILE names, else the one kept
// for this server by `tpufleet join` (joined_servers.h), else
// $XDG_CONFIG_HOME/tpufleet/token (~/.config/tpufleet/token); a file must be the user's
// own and 0600. Never argv.
//
// Each failure is one message: the server cannot be reached (Unavailable), it refused
// the token (PermissionDenied), its certificate changed (FailedPrecondition, naming both
// fingerprints, the file and how to accept the new one).
//
// Thread-safety: one command at a time.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "api/invite.h"
#include "api/remote_command.h"
#include "util/http_client.h"
#include "util/status.h"

namespace tpufleet::remote {

/// A server silent this long while its command runs is gone (or the way to it is): it
/// sends a keep-alive line every 15 s (server/command_stream.h kKeepAliveInterval), so
/// four missed ones. A command itself may run as long as it likes (`logs -f`, `up`).
inline constexpr std::chrono::seconds kStreamIdleTimeout{60};

/// Where and how to reach a team server.
struct ServerOptions {
  std::string url;            // "https://lab.example:8471", without a path
  std::string server;         // "lab.example:8471": its line in known_servers
  bool tls = true;            // false: http:// on loopback
  std::string fingerprint;    // --server-fingerprint (or an invite's); "" when not given
  std::string fingerprint_source = "--server-fingerprint";  // for messages
  std::string token;
  std::string token_source;   // "TPUFLEET_TOKEN", or the file's path: for messages
  std::string known_servers;  // the file of pins
};

/// The options for `url` (--server or TPUFLEET_SERVER), `fingerprint`
/// (--server-fingerprint, may be "") and the environment's token and config paths.
/// InvalidArgument for a URL that is not https://HOST[:PORT] (or http:// on loopback)
/// or a fingerprint not written "SHA256:…"; FailedPrecondition when there is no token
/// or its file is not private.
Result<ServerOptions> ResolveServer(const std::string& url, const std::string& fingerprint,
                                    const std::map<std::string, std::string>& env);

/// ResolveServer without the token (`join` brings its own, in the invite).
Result<ServerOptions> ServerAt(const std::string& url, const std::string& fingerprint,
                               const std::map<std::string, std::string>& env);

/// How a command sent to the server ended.
struct RemoteRun {
  int exit_code = 0;
  std::string notice;  // "" or one line for stderr: a certificate pinned on first use
};

class ServerClient {
 public:
  /// `http` must outlive the client.
  ServerClient(HttpClient* http, ServerOptions options)
      : http_(http), options_(std::move(options)) {}
  ServerClient(const ServerClient&) = delete;
  ServerClient& operator=(const ServerClient&) = delete;

  /// Runs `request` (the words after `tpufleet`, without --server, and the files the
  /// command reads) on the server; each piece of its output goes to `print` as it
  /// arrives. `stop` (null: never), asked about once a second, ends the run when true:
  /// the connection closes, which interrupts the command on the server. Errors as the
  /// header says; InvalidArgument when the request is over api::kMaxCommandRequestBytes;
  /// Unavailable when the answer breaks off before the command's exit status (what came
  /// of the output was printed) or the server is silent for kStreamIdleTimeout.
  Result<RemoteRun> Run(const api::CommandRequest& request,
                        const api::CommandStreamReader::Output& print,
                        std::function<bool()> stop = nullptr);
  /// GET /v1/hosts: the workers this token's person may log in to. `notice` as
  /// RemoteRun's.
  Result<std::vector<api::WorkerHost>> Hosts(std::string* notice);

 private:
  // `req` (its url a path) sent with the token to the pinned server; a 200 answer, its
  // certificate pinned when it was not (said in `notice`); the errors the header names.
  Result<HttpResponse> Send(HttpRequest req, std::string* notice);
  // The fingerprint the server presents now, asked without the token; "" when unknown.
  std::string Presented();

  HttpClient* const http_;
  const ServerOptions options_;
};

}  // namespace tpufleet::remote
