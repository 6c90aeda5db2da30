#include "util/http_head_server.h"

#include <arpa/inet.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace tpufleet {
namespace {

constexpr int kListenBacklog = 64;

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

std::string_view HttpReason(int code) {
  switch (code) {
    case 200: return "OK";
    case 301: return "Moved Permanently";
    case 400: return "Bad Request";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 431: return "Request Header Fields Too Large";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    default: return "Error";
  }
}

std::string HttpAnswerText(int code, std::string_view content_type, const std::string& body,
                           std::string_view extra_headers) {
  std::string s = "HTTP/1.0 " + std::to_string(code) + " ";
  s.append(HttpReason(code)).append("\r\nContent-Type: ").append(content_type);
  s.append("\r\nContent-Length: ").append(std::to_string(body.size()));
  s.append("\r\nConnection: close\r\n").append(extra_headers).append("\r\n");
  return s + body;
}

HttpHeadServer::HttpHeadServer(EventLoop& loop, HttpHeadServerOptions options, OnHead on_head,
                               OnClose on_close)
    : loop_(loop),
      options_(options),
      on_head_(std::move(on_head)),
      on_close_(std::move(on_close)) {}

HttpHeadServer::~HttpHeadServer() {
  loop_.Remove(listen_watch_);
  for (auto& [id, c] : connections_) {
    loop_.Remove(c.watch);
    loop_.Remove(c.head_timeout);
    loop_.Remove(c.timeout);
  }
}

Status HttpHeadServer::Listen(const sockaddr_in& address) {
  char ip[INET_ADDRSTRLEN] = {};
  ::inet_ntop(AF_INET, &address.sin_addr, ip, sizeof ip);
  const std::string name = std::string(ip) + ":" + std::to_string(ntohs(address.sin_port));
  auto failed = [&](const char* what) {
    return UnavailableError(name + ": " + what + ": " + std::strerror(errno));
  };
  listen_fd_ = UniqueFd(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (listen_fd_.get() < 0) {
    return failed("socket");
  }
  int one = 1;
  ::setsockopt(listen_fd_.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a = address;
  if (::bind(listen_fd_.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    return UnavailableError(name + ": " + std::strerror(errno));
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

void HttpHeadServer::Accept() {
  while (connections_.size() < options_.max_connections) {
    sockaddr_in peer{};
    socklen_t len = sizeof peer;
    int fd = ::accept4(listen_fd_.get(), reinterpret_cast<sockaddr*>(&peer), &len,
                       SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      break;  // EAGAIN: no one else waits; anything else: the next turn tries again
    }
    uint64_t id = next_id_++;
    Connection& c = connections_[id];
    c.fd = UniqueFd(fd);
    c.peer = peer;
    c.watch = loop_.Watch(fd, POLLIN, [this, id](short revents, Clock::MonoTime) {
      if (revents & POLLOUT) {
        OnWritable(id);
      } else {
        OnReadable(id);
      }
    });
    c.head_timeout = loop_.After(options_.head_timeout, [this, id](Clock::MonoTime) {
      auto it = connections_.find(id);
      if (it != connections_.end() && !it->second.got_head && !it->second.answering) {
        Close(id);
      }
    });
    c.timeout = loop_.After(options_.exchange_timeout, [this, id](Clock::MonoTime) { Close(id); });
  }
  UpdateAccepting();
}

void HttpHeadServer::UpdateAccepting() {
  loop_.SetEvents(listen_watch_, connections_.size() < options_.max_connections ? POLLIN : 0);
}

void HttpHeadServer::OnReadable(uint64_t id) {
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
  if (c.got_head || c.answering) {
    return;  // what the client sends past its head is drained and dropped
  }
  c.head.append(buf, static_cast<size_t>(n));
  size_t end = HeadEnd(c.head);
  if (end == std::string::npos || end > options_.max_head) {
    if (c.head.size() > options_.max_head) {
      Answer(id, HttpAnswerText(431, "text/plain; charset=utf-8",
                                "request head over " + std::to_string(options_.max_head) +
                                    " bytes\n"));
    }
    return;  // more to come, or answered
  }
  std::string head = c.head.substr(0, end);
  c.head.clear();
  c.got_head = true;
  on_head_(id, head, c.peer);  // may answer, and so write and close, at once
}

void HttpHeadServer::Answer(uint64_t id, std::string answer) {
  auto it = connections_.find(id);
  if (it == connections_.end() || it->second.answering) {
    return;
  }
  it->second.answer = std::move(answer);
  it->second.answering = true;
  OnWritable(id);
}

void HttpHeadServer::OnWritable(uint64_t id) {
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

void HttpHeadServer::Close(uint64_t id) {
  auto it = connections_.find(id);
  if (it == connections_.end()) {
    return;
  }
  bool unanswered = it->second.got_head && !it->second.answering;
  loop_.Remove(it->second.watch);
  loop_.Remove(it->second.head_timeout);
  loop_.Remove(it->second.timeout);
  connections_.erase(it);
  UpdateAccepting();
  if (unanswered && on_close_) {
    on_close_(id);
  }
}

}  // namespace tpufleet
