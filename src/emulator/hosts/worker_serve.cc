// The metadata server's connections, for the worker's init (worker_init_internal.h):
// accepting, reading request heads, answering, parking long-polls until they expire.
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include "emulator/hosts/worker_init_internal.h"

namespace tpufleet::emulator::hosts::init {

void Worker::Accept() {
  while (true) {
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      return;
    }
    if (conns_.size() >= kMaxConnections) {
      ::close(fd);
      continue;
    }
    auto c = std::make_unique<Conn>();
    c->fd = fd;
    c->last_active = Mono::now();
    conns_.push_back(std::move(c));
  }
}

void Worker::Send(Conn& c, const HttpResponse& r, bool head_only) {
  bool keep_alive = c.request.keep_alive && !c.close_after_write;
  c.out += SerializeHttpResponse(r, keep_alive, head_only);
  if (!keep_alive) {
    c.close_after_write = true;
  }
  Flush(c);
}

void Worker::SendBadRequest(Conn& c) {
  c.request = HttpRequest();
  c.close_after_write = true;
  HttpResponse bad;
  bad.status = 400;
  bad.body = "Bad Request\n";
  Send(c, bad, false);
}

void Worker::Flush(Conn& c) {
  while (!c.out.empty()) {
    ssize_t n = ::send(c.fd, c.out.data(), c.out.size(), MSG_NOSIGNAL);
    if (n <= 0) {
      if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
        return;
      }
      c.close_after_write = true;
      c.out.clear();
      return;
    }
    c.out.erase(0, static_cast<size_t>(n));
  }
}

void Worker::ServeInput(Conn& c) {
  // Requests are answered one at a time: a parked long-poll holds back what follows.
  while (!c.parked && c.out.empty() && !c.close_after_write) {
    size_t end = c.in.find("\r\n\r\n");
    size_t skip = 4;
    if (end == std::string::npos) {
      end = c.in.find("\n\n");
      skip = 2;
    }
    if (end == std::string::npos) {
      if (c.in.size() > kMaxRequestHead) {
        SendBadRequest(c);
      }
      return;
    }
    std::string head = c.in.substr(0, end);
    c.in.erase(0, end + skip);
    Result<HttpRequest> req = ParseHttpRequestHead(head);
    if (!req.ok() || req->has_body) {
      SendBadRequest(c);
      return;
    }
    c.request = *req;
    auto now = Mono::now();
    MetadataServer::Answer a = server_.Handle(c.request, now);
    if (a.wait) {
      c.parked = true;
      c.wait_etag = a.wait_etag;
      c.wait_deadline = now + a.wait_timeout;
      return;
    }
    Send(c, a.response, c.request.method == "HEAD");
  }
}

void Worker::ExpireWaits(Mono::time_point now) {
  for (auto& c : conns_) {
    if (c->parked && now >= c->wait_deadline) {
      c->parked = false;
      Send(*c, server_.Render(c->request, now), c->request.method == "HEAD");
    }
  }
}

}  // namespace tpufleet::emulator::hosts::init
