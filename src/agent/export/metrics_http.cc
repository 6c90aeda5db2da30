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

constexpr int kListenBacklog = 64;

struct Response {
  int code = 200;
  std::string body;
  std::string_view content_type = "text/plain; charset=utf-8";
  std::string_view extra_headers{};  // whole lines, each ending in \r\n
};

std::string_view Reason(int code) {
  switch (code) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 431: return "Request Header Fields Too Large";
    default: return "Error";
  }
}

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

std::string Format(const Response& r) {
  std::string s = "HTTP/1.0 " + std::to_string(r.code) + " ";
  s.append(Reason(r.code)).append("\r\nContent-Type: ").append(r.content_type);
  s.append("\r\nContent-Length: ").append(std::to_string(r.body.size()));
  s.append("\r\nConnection: close\r\n").append(r.extra_headers).append("\r\n");
  return s + r.body;
}

// Where a head ends (after its blank line), or npos while it has not.
size_t HeadEnd(const std::string& head) {
  size_t crlf = head.find("\r\n\r\n");
  size_t lf = head.find("\n\n");
  if (crlf != std::string::npos && (lf == std::string::npos || crlf < lf)) {
    return crlf + 4;
  }
  return lf == std::string::npos ? lf : lf + 2;
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
    : loop_(loop), render_(std::move(render)) {}

MetricsHttpServer::~MetricsHttpServer() {
  loop_.Remove(listen_watch_);
  for (auto& [id, c] : connections_) {
    loop_.Remove(c.watch);
    loop_.Remove(c.timeout);
  }
}

Status MetricsHttpServer::Listen(const std::string& address) {
  TPUFLEET_ASSIGN_OR_RETURN(sockaddr_in a, ParseListenAddress(address));
  auto failed = [&](const char* what) {
    return UnavailableError(address + ": " + what + ": " + std::strerror(errno));
  };
  listen_fd_ = UniqueFd(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (listen_fd_.get() < 0) {
    return failed("socket");
  }
  int one = 1;
  ::setsockopt(listen_fd_.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(listen_fd_.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    return UnavailableError(address + ": " + std::strerror(errno));
  }
  if (::listen(listen_fd_.get(), kListenBacklog) != 0) {
    return failed("listen");
  }
  socklen_t len = sizeof a;
  if (::getsockname(listen_fd_.get(), reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    return failed("getsockname");
  }
  port_ = ntohs(a.sin_port);
  listen_watch_ = loop_.Watch(listen_fd_.get(), POLLIN, [this](short, Clock::MonoTime) {
    Accept();
  });
  return Status::Ok();
}

void MetricsHttpServer::Accept() {
  while (connections_.size() < kMaxConnections) {
    int fd = ::accept4(listen_fd_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      break;  // EAGAIN: no one else waits; anything else: the next turn tries again
    }
    uint64_t id = next_id_++;
    Connection& c = connections_[id];
    c.fd = UniqueFd(fd);
    c.watch = loop_.Watch(fd, POLLIN, [this, id](short revents, Clock::MonoTime) {
      if (revents & POLLOUT) {
        OnWritable(id);
      } else {
        OnReadable(id);
      }
    });
    c.timeout = loop_.After(kClientTimeout, [this, id](Clock::MonoTime) { Close(id); });
  }
  UpdateAccepting();
}

void MetricsHttpServer::UpdateAccepting() {
  loop_.SetEvents(listen_watch_, connections_.size() < kMaxConnections ? POLLIN : 0);
}

void MetricsHttpServer::OnReadable(uint64_t id) {
  auto it = connections_.find(id);
  if (it == connections_.end()) {
    return;
  }
  Connection& c = it->second;
  char buf[4096];
  ssize_t n = ::recv(c.fd.get(), buf, sizeof buf, 0);
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
    return;
  }
  if (n <= 0) {  // the client is gone, or (answered) has read all and closed
    Close(id);
    return;
  }
  if (c.answering) {
    return;  // the answer is out; what the client still sends is drained and dropped
  }
  c.head.append(buf, static_cast<size_t>(n));
  size_t end = HeadEnd(c.head);
  Response r;
  if (end == std::string::npos || end > kMaxRequestHead) {
    if (c.head.size() <= kMaxRequestHead) {
      return;  // more to come
    }
    r = {431, "request head over " + std::to_string(kMaxRequestHead) + " bytes\n"};
  } else {
    r = Route(std::string_view(c.head).substr(0, end), render_);
  }
  c.head.clear();
  c.answer = Format(r);
  c.answering = true;
  OnWritable(id);
}

void MetricsHttpServer::OnWritable(uint64_t id) {
  auto it = connections_.find(id);
  if (it == connections_.end()) {
    return;
  }
  Connection& c = it->second;
  while (!c.answer.empty()) {
    ssize_t n = ::send(c.fd.get(), c.answer.data(), c.answer.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n < 0 && errno == EAGAIN) {
      loop_.SetEvents(c.watch, POLLOUT);
      return;
    }
    if (n < 0) {
      Close(id);
      return;
    }
    c.answer.erase(0, static_cast<size_t>(n));
  }
  // All written. Closing now, with bytes of the client's still unread, would reset the
  // connection and could lose the answer on its way: say "no more" and read until the
  // client closes (bounded by the timeout).
  ::shutdown(c.fd.get(), SHUT_WR);
  loop_.SetEvents(c.watch, POLLIN);
}

void MetricsHttpServer::Close(uint64_t id) {
  auto it = connections_.find(id);
  if (it == connections_.end()) {
    return;
  }
  loop_.Remove(it->second.watch);
  loop_.Remove(it->second.timeout);
  connections_.erase(it);
  UpdateAccepting();
}

}  // namespace tpufleet::agent::exporter
