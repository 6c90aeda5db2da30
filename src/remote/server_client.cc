#include "remote/server_client.h"

#include <nlohmann/json.hpp>

#include "remote/joined_servers.h"
#include "remote/known_servers.h"
#include "util/fingerprint.h"
#include "util/file.h"
#include "util/private_file.h"
#include "util/log.h"
#include "util/strings.h"

namespace tpufleet::remote {
namespace {

// A token is one line of a few dozen bytes.
constexpr size_t kMaxTokenFileBytes = 4096;
// The server's own errors are short; more is cut.
constexpr size_t kMaxServerMessage = 300;

// `text` in quotes, shown as text (it came from the command line or the environment).
std::string Quoted(const std::string& text) {
  return "\"" + TerminalText(text, /*keep_newlines=*/false) + "\"";
}

bool IsLoopbackHost(std::string_view host) {
  return host == "localhost" || host == "[::1]" || StartsWith(host, "127.");
}

// "https://HOST[:PORT][/]" split: {host (IPv6 bracketed, lower case), port}.
Result<std::pair<std::string, int>> HostAndPort(std::string_view rest, bool tls,
                                                const std::string& url) {
  auto bad = [&url] {
    return InvalidArgumentError("--server takes https://HOST:PORT (as `tpufleet serve` logs "
                                "it), not " + Quoted(url.substr(0, 200)));
  };
  if (!rest.empty() && rest.back() == '/') {
    rest.remove_suffix(1);
  }
  if (rest.empty() || rest.find_first_of("/?#@ ") != std::string_view::npos) {
    return bad();
  }
  size_t host_end = rest.front() == '[' ? rest.find(']') + 1 : rest.find(':');
  if (host_end == 0 || host_end == 1) {
    return bad();
  }
  std::string host = AsciiLower(rest.substr(0, std::min(host_end, rest.size())));
  int port = tls ? 443 : 80;
  if (host_end < rest.size()) {
    long long p = 0;
    if (rest[host_end] != ':' || !ParseInt(rest.substr(host_end + 1), &p) || p < 1 ||
        p > 65535) {
      return bad();
    }
    port = static_cast<int>(p);
  }
  return std::make_pair(host, port);
}

Result<std::pair<std::string, std::string>> Token(const std::map<std::string, std::string>& env,
                                                  const std::string& server) {
  auto get = [&env](const char* name) {
    auto it = env.find(name);
    return it == env.end() ? std::string() : it->second;
  };
  if (std::string token(Trim(get("TPUFLEET_TOKEN"))); !token.empty()) {
    return std::make_pair(token, std::string("TPUFLEET_TOKEN"));
  }
  std::string path = get("TPUFLEET_TOKEN_FILE");
  bool named = !path.empty();
  if (!named) {
    TPUFLEET_ASSIGN_OR_RETURN(std::optional<JoinedServer> joined, FindJoinedServer(env, server));
    if (joined) {
      return std::make_pair(joined->token, "the invite joined (" + joined->person + ")");
    }
    TPUFLEET_ASSIGN_OR_RETURN(std::string known, KnownServersPath(env));
    path = known.substr(0, known.rfind('/')) + "/token";
  }
  Result<std::string> text = ReadPrivateFile(path, kMaxTokenFileBytes);
  if (!text.ok() && text.status().code() == StatusCode::kNotFound && !named) {
    return FailedPreconditionError(
        "no token for the team server " + server + ": `tpufleet join INVITE` keeps the one of "
        "an invite; else set TPUFLEET_TOKEN, or TPUFLEET_TOKEN_FILE to a file holding it, or "
        "put it in " + path + " (mode 0600)");
  }
  if (!text.ok()) {
    return text.status().WithContext("reading the team server's token");
  }
  std::string token(Trim(*text));
  if (token.empty() || token.find_first_of(" \t\r\n") != std::string::npos) {
    return InvalidArgumentError(path + " does not hold a token (one line)");
  }
  return std::make_pair(token, path);
}

// The "message" of the server's {"error": {…}} answer, or its first bytes.
std::string ServerMessage(const HttpResponse& resp) {
  nlohmann::json j = nlohmann::json::parse(resp.body, nullptr, /*allow_exceptions=*/false);
  if (j.is_object() && j.contains("error") && j["error"].is_object() &&
      j["error"].value("message", nlohmann::json()).is_string()) {
    return j["error"]["message"].get<std::string>().substr(0, kMaxServerMessage);
  }
  return std::string(Trim(resp.body.substr(0, kMaxServerMessage)));
}

}  // namespace

Result<ServerOptions> ServerAt(const std::string& url, const std::string& fingerprint,
                               const std::map<std::string, std::string>& env) {
  ServerOptions o;
  std::string_view rest = url;
  if (StartsWith(rest, "https://")) {
    rest.remove_prefix(8);
  } else if (StartsWith(rest, "http://")) {
    rest.remove_prefix(7);
    o.tls = false;
  } else {
    return InvalidArgumentError("--server takes https://HOST:PORT (as `tpufleet serve` logs "
                                "it), not " + Quoted(url.substr(0, 200)));
  }
  TPUFLEET_ASSIGN_OR_RETURN(auto host_port, HostAndPort(rest, o.tls, url));
  if (!o.tls && !IsLoopbackHost(host_port.first)) {
    return InvalidArgumentError("--server " + url + ": plain http:// is for a server on this "
                                "machine only (127.0.0.1, [::1]); use https://");
  }
  if (!fingerprint.empty() && !IsSha256Fingerprint(fingerprint)) {
    return InvalidArgumentError("--server-fingerprint takes SHA256: and 43 base64 characters, "
                                "as `tpufleet serve` logs it, not " +
                                Quoted(fingerprint.substr(0, 100)));
  }
  if (!fingerprint.empty() && !o.tls) {
    return InvalidArgumentError("--server-fingerprint pins a TLS certificate: it needs https://");
  }
  o.server = host_port.first + ":" + std::to_string(host_port.second);
  o.url = std::string(o.tls ? "https://" : "http://") + o.server;
  o.fingerprint = fingerprint;
  TPUFLEET_ASSIGN_OR_RETURN(o.known_servers, KnownServersPath(env));
  return o;
}

Result<ServerOptions> ResolveServer(const std::string& url, const std::string& fingerprint,
                                    const std::map<std::string, std::string>& env) {
  TPUFLEET_ASSIGN_OR_RETURN(ServerOptions o, ServerAt(url, fingerprint, env));
  TPUFLEET_ASSIGN_OR_RETURN(auto token, Token(env, o.server));
  o.token = std::move(token.first);
  o.token_source = std::move(token.second);
  return o;
}

std::string ServerClient::Presented() {
  HttpRequest probe;
  probe.url = options_.url + "/v1/status";
  probe.pinned_cert = kAnyCertificate;
  probe.timeout = std::chrono::seconds(10);
  Result<HttpResponse> resp = http_->Send(probe);
  return resp.ok() ? resp->cert_fingerprint : "";
}

Result<HttpResponse> ServerClient::Send(HttpRequest req, std::string* notice) {
  std::optional<std::string> pinned;
  if (options_.tls) {
    TPUFLEET_ASSIGN_OR_RETURN(pinned,
                              PinnedFingerprint(options_.known_servers, options_.server));
  }
  // An explicit fingerprint wins over the file: the user checked it.
  std::string want = !options_.fingerprint.empty() ? options_.fingerprint
                                                   : pinned.value_or(kAnyCertificate);
  req.url = options_.url + req.url;
  req.headers["Authorization"] = "Bearer " + options_.token;
  req.pinned_cert = options_.tls ? want : "";
  Result<HttpResponse> resp = http_->Send(req);
  if (!resp.ok()) {
    if (resp.status().code() == StatusCode::kPermissionDenied && options_.tls) {
      std::string now = Presented();
      std::string where = !options_.fingerprint.empty()
                              ? options_.fingerprint_source
                              : options_.known_servers + " (the line " + options_.server + ")";
      return FailedPreconditionError(
          "the team server " + options_.url + " presents another TLS certificate, " +
          (now.empty() ? "unreadable" : now) + ", than the one pinned for it, " + want +
          ", in " + where + ". Nothing was sent. If its certificate was changed on purpose, "
          "check the new fingerprint with the server's admin (serve logs it at start), then "
          "run once with --server-fingerprint " + (now.empty() ? "SHA256:…" : now) +
          " to pin it.");
    }
    return UnavailableError("cannot reach the team server " + options_.url + ": " +
                            resp.status().message());
  }
  if (resp->status == 401 || resp->status == 403) {
    return PermissionDeniedError("the team server " + options_.url + " refused the token (from " +
                                 options_.token_source + "): " + ServerMessage(*resp));
  }
  if (resp->status != 200) {
    return UnavailableError("the team server " + options_.url + " answered HTTP " +
                            std::to_string(resp->status) + ": " + ServerMessage(*resp));
  }
  if (options_.tls && pinned != resp->cert_fingerprint) {
    TPUFLEET_TRY(PinFingerprint(options_.known_servers, options_.server, resp->cert_fingerprint));
    std::string given = " (as " + options_.fingerprint_source + " says)";
    *notice = pinned ? "replaced the pinned TLS certificate of " + options_.server + " with " +
                           resp->cert_fingerprint + " in " + options_.known_servers + given
                     : "first use of " + options_.server + ": pinned its TLS certificate " +
                           resp->cert_fingerprint + " in " + options_.known_servers +
                           (options_.fingerprint.empty()
                                ? "; compare it with the one `tpufleet serve` logged at start"
                                : given);
  }
  return resp;
}

Result<RemoteRun> ServerClient::Run(const api::CommandRequest& request,
                                    const api::CommandStreamReader::Output& print,
                                    std::function<bool()> stop) {
  HttpRequest req;
  req.method = "POST";
  req.url = "/v1/command";
  req.headers["Content-Type"] = "application/json";
  req.body = api::ToJson(request);
  if (req.body.size() > api::kMaxCommandRequestBytes) {
    return InvalidArgumentError("the command and its files come to " +
                                FormatBytes(req.body.size()) + " as JSON, more than the " +
                                FormatBytes(api::kMaxCommandRequestBytes) +
                                " a team server takes");
  }
  req.timeout = std::chrono::milliseconds(0);
  req.idle_timeout = kStreamIdleTimeout;
  api::CommandStreamReader reader(print);
  Status broken;  // a line the reader refused
  req.on_body = [&reader, &broken](std::string_view piece) {
    broken = reader.Feed(piece);
    return broken.ok();
  };
  req.stop = std::move(stop);
  RemoteRun run;
  Result<HttpResponse> resp = Send(std::move(req), &run.notice);
  if (!broken.ok()) {
    return UnavailableError("the team server " + options_.url + " sent a broken answer: " +
                            broken.message());
  }
  TPUFLEET_TRY(resp.status());
  Result<int> code = reader.Finish();
  if (!code.ok()) {
    return UnavailableError("the team server " + options_.url + ": " + code.status().message());
  }
  run.exit_code = *code;
  return run;
}

Result<std::vector<api::WorkerHost>> ServerClient::Hosts(std::string* notice) {
  HttpRequest req;
  req.url = "/v1/hosts";
  req.timeout = std::chrono::seconds(30);
  TPUFLEET_ASSIGN_OR_RETURN(HttpResponse resp, Send(std::move(req), notice));
  return api::ParseWorkerHosts(resp.body);
}

}  // namespace tpufleet::remote
