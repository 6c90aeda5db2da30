// LoopbackSocket: a TCP socket bound to 127.0.0.1 on a port the kernel picked, for tests
// that need a port with a known behaviour: listening (connections wait in the backlog
// and are never greeted, like a hung server), or only bound, whose port nothing listens
// on once the socket is gone (ClosedLoopbackPort). EchoService is a listening one that
// answers (the service a forward reaches); Exchange is its client.
//
// Thread-safety: one owner.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <thread>

#include "util/unique_fd.h"

namespace tpufleet {

struct LoopbackSocket {
  explicit LoopbackSocket(bool listen) : fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
        (!listen || ::listen(fd.get(), 64) == 0) &&
        ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&a), &len) == 0) {
      port = ntohs(a.sin_port);
    }
  }

  UniqueFd fd;
  int port = 0;  // 0 when the socket could not be set up
};

/// A port on 127.0.0.1 that was free a moment ago and that nothing listens on.
inline int ClosedLoopbackPort() {
  return LoopbackSocket(false).port;
}

/// A service on 127.0.0.1 (a worker's TensorBoard, say) that answers the first read of
/// one connection with "echo:" and what it read, then closes it. The destructor stops it
/// and joins its thread, also when no connection came.
class EchoService {
 public:
  EchoService() : socket_(/*listen=*/true), thread_([this] { Serve(); }) {}
  ~EchoService() {
    ::shutdown(socket_.fd.get(), SHUT_RDWR);  // wakes the accept if nobody came
    thread_.join();
  }
  EchoService(const EchoService&) = delete;
  EchoService& operator=(const EchoService&) = delete;

  int port() const { return socket_.port; }

 private:
  void Serve() {
    UniqueFd conn(::accept4(socket_.fd.get(), nullptr, nullptr, SOCK_CLOEXEC));
    char buf[256];
    ssize_t n = conn.get() >= 0 ? ::read(conn.get(), buf, sizeof buf) : -1;
    if (n > 0) {
      std::string reply = "echo:" + std::string(buf, static_cast<size_t>(n));
      ssize_t written = ::write(conn.get(), reply.data(), reply.size());
      (void)written;  // the client's read says whether it came
    }
  }

  LoopbackSocket socket_;
  std::thread thread_;
};

/// Connects to 127.0.0.1:`port`, sends `data`, and returns what comes back until the
/// other side closes; "<…>" with the reason when the connection or the write fails.
inline std::string Exchange(int port, const std::string& data) {
  UniqueFd client(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  to.sin_port = htons(static_cast<uint16_t>(port));
  if (::connect(client.get(), reinterpret_cast<sockaddr*>(&to), sizeof to) != 0 ||
      ::write(client.get(), data.data(), data.size()) != static_cast<ssize_t>(data.size())) {
    return "<connect or write failed: " + std::string(std::strerror(errno)) + ">";
  }
  std::string got;
  char buf[256];
  ssize_t n;
  while ((n = ::read(client.get(), buf, sizeof buf)) > 0) {
    got.append(buf, static_cast<size_t>(n));
  }
  return got;
}

}  // namespace tpufleet
