#include "agent/export/metrics_http.h"

#include <arpa/inet.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "agent/export/prometheus_text.h"
#include "util/strings.h"

namespace tpufleet::agent::exporter {
namespace {

struct Response {
  int code = 200;
  std::string body;
  std::string_view content_type = "text/plain; charset=utf-8";
  std::string_view extra_headers{};  // whole lines, each ending in \r\n
};

// The answer to a whole request head (its request line is all that matters).
Response Route(std::string_view head, const std::function<std::string()>& render) {
  std::string_view line = head.substr(0, head.find('\n'));
  if (!line.empty() && line.back() == '\r') {
    line.remove_suffix(1);
  }
  std::vector<std::string> parts = Split(line, ' ');
  bool well_formed = parts.size() == 3 && !parts[0].empty() && StartsWith(parts[1], "/") &&
                     StartsWith(parts[2], "HTTP/");
  for (size_t i = 0; well_formed && i < parts[0].size(); ++i) {
    well_formed = parts[0][i] >= 'A' && parts[0][i] <= 'Z';
  }
  if (!well_formed) {
    return {400, "not an HTTP request\n"};
  }
  std::string_view path = std::string_view(parts[1]).substr(0, parts[1].find('?'));
  if (path != "/metrics") {
    return {404, "not found: this server serves GET /metrics only\n"};
  }
  if (parts[0] != "GET") {
    return {405, "method not allowed: GET /metrics only\n", "text/plain; charset=utf-8",
            "Allow: GET\r\n"};
  }
  return {200, render(), kPrometheusContentType};
}

}  // namespace

Result<sockaddr_in> ParseListenAddress(const std::string& address) {
  auto bad = [&](std::string_view what) {
    return InvalidArgumentError("bad listen address \"" + address + "\": " + std::string(what) +
                                " (expected PORT or IPV4:PORT, such as 9100 or "
                                "127.0.0.1:9100)");
  };
  std::string ip = "0.0.0.0";
  std::string port_text = address;
  if (size_t colon = address.rfind(':'); colon != std::string::npos) {
    ip = address.substr(0, colon);
    port_text = address.substr(colon + 1);
  }
  long long port = 0;
  if (!ParseInt(port_text, &port) || port < 0 || port > 65535) {
    return bad("the port is not a number from 0 to 65535");
  }
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  if (::inet_pton(AF_INET, ip.c_str(), &a.sin_addr) != 1) {
    return bad("the address is not an IPv4 address");
  }
  return a;
}

MetricsHttpServer::MetricsHttpServer(EventLoop& loop, std::function<std::string()> render)
    : render_(std::move(render)),
      server_(loop, {kMaxConnections, kMaxRequestHead, kClientTimeout, kClientTimeout},
              [this](uint64_t id, std::string_view head, const sockaddr_in&) {
                Response r = Route(head, render_);
                server_.Answer(id, HttpAnswerText(r.code, r.content_type, r.body,
                                                  r.extra_headers));
              }) {}

Status MetricsHttpServer::Listen(const std::string& address) {
  TPUFLEET_ASSIGN_OR_RETURN(sockaddr_in a, ParseListenAddress(address));
  return server_.Listen(a);
}

}  // namespace tpufleet::agent::exporter
