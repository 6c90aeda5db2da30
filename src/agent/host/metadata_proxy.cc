#include "agent/host/metadata_proxy.h"

#include <arpa/inet.h>

#include <cstdio>

#include "agent/host/metadata_filter.h"
#include "agent/host/user_db.h"
#include "util/file.h"
#include "util/strings.h"

namespace tpufleet::agent::host {
namespace {

constexpr std::string_view kRefusalType = "text/plain; charset=utf-8";
// /proc/net/tcp of a busy host: 150 bytes a socket, tens of thousands of sockets.
constexpr size_t kMaxProcNetBytes = 16u << 20;

bool HopByHop(const std::string& name) {
  std::string n = AsciiLower(name);
  return n == "connection" || n == "keep-alive" || n == "proxy-connection" || n == "te" ||
         n == "upgrade";
}

// The uid column of the socket whose local address is `local` ("0100007F:1F90" as
// /proc/net/tcp writes it) in a /proc/net/tcp or tcp6 text; -1 when none.
long long UidOfSocket(const std::string& text, const std::string& local) {
  for (const std::string& line : Split(text, '\n')) {
    std::vector<std::string> f;
    for (std::string& field : Split(line, ' ')) {
      if (!field.empty()) {
        f.push_back(std::move(field));
      }
    }
    long long uid = 0;
    if (f.size() > 7 && f[1].size() >= local.size() &&
        f[1].compare(f[1].size() - local.size(), local.size(), local) == 0 &&
        ParseInt(f[7], &uid)) {
      return uid;
    }
  }
  return -1;
}

}  // namespace

MetadataProxy::MetadataProxy(EventLoop& loop, std::string metadata_url, HostPaths host)
    : loop_(loop),
      metadata_url_(std::move(metadata_url)),
      host_(std::move(host)),
      server_(loop,
              {kMaxProxyConnections, kMaxProxyHead, kProxyHeadTimeout,
               kProxyHeadTimeout + kProxyLongPollTimeout},
              [this](uint64_t id, std::string_view head, const sockaddr_in& peer) {
                OnHead(id, head, peer);
              },
              [this](uint64_t id) { upstream_.erase(id); }) {}

Status MetadataProxy::Listen(int port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return server_.Listen(a);
}

std::string MetadataProxy::AccountOf(const sockaddr_in& peer) const {
  char local[32];
  std::snprintf(local, sizeof local, "%08X:%04X", peer.sin_addr.s_addr, ntohs(peer.sin_port));
  // An IPv4 socket's end, or an IPv6 socket's with the IPv4-mapped address (…FFFF0000…):
  // either way its local address ends with the same text.
  for (const char* table : {"/net/tcp", "/net/tcp6"}) {
    Result<std::string> text = ReadFile(host_.proc + table, kMaxProcNetBytes);
    long long uid = text.ok() ? UidOfSocket(*text, local) : -1;
    if (uid >= 0) {
      return UserName(ReadPasswd(host_.etc), static_cast<uid_t>(uid));
    }
  }
  return "this account";
}

void MetadataProxy::OnHead(uint64_t id, std::string_view head, const sockaddr_in& peer) {
  auto refuse = [&](const MetadataVerdict& v) {
    server_.Answer(id, HttpAnswerText(v.code, kRefusalType, RefusalText(v, AccountOf(peer)),
                                      "Metadata-Flavor: Google\r\n"));
  };
  Result<ProxiedHead> parsed = ParseProxiedHead(head);
  if (!parsed.ok()) {
    refuse({false, 400, "requests that are not HTTP (" + parsed.status().message() + ")"});
    return;
  }
  MetadataVerdict verdict = DecideMetadataRequest(*parsed);
  if (!verdict.allow) {
    refuse(verdict);
    return;
  }
  HttpRequest request;
  request.url = metadata_url_ + parsed->target;
  for (const auto& [name, value] : parsed->headers) {
    if (!HopByHop(name)) {
      request.headers[name] = value;
    }
  }
  bool long_poll = AsciiLower(parsed->target).find("wait_for_change") != std::string::npos;
  request.timeout = long_poll ? kProxyLongPollTimeout : kProxyRequestTimeout;
  request.max_response_bytes = kMaxProxiedAnswerBytes;
  auto& upstream = upstream_[id];
  upstream = std::make_unique<LoopHttpGet>(loop_);
  upstream->Start(std::move(request), [this, id, peer](Result<HttpResponse> answer) {
    if (!answer.ok()) {
      server_.Answer(id, HttpAnswerText(answer.status().code() == StatusCode::kTimeout ? 504 : 502,
                                        kRefusalType,
                                        "tpufleet: the metadata guard could not get an answer "
                                        "from the metadata server: " +
                                            answer.status().message() + "\n"));
    } else if (CarriesCredential(answer->body)) {
      MetadataVerdict v{false, 403, "an access token"};
      server_.Answer(id, HttpAnswerText(403, kRefusalType, RefusalText(v, AccountOf(peer)),
                                        "Metadata-Flavor: Google\r\n"));
    } else {
      std::string headers;
      std::string type = "application/text";
      for (const auto& [name, value] : answer->headers) {
        if (name == "content-type") {
          type = value;
        } else if (name != "content-length" && name != "transfer-encoding" && !HopByHop(name)) {
          headers += name + ": " + value + "\r\n";
        }
      }
      server_.Answer(id, HttpAnswerText(answer->status, type, answer->body, headers));
    }
    // The LoopHttpGet is done with itself before it calls this (a copy of it runs).
    upstream_.erase(id);
  });
}

}  // namespace tpufleet::agent::host
