// LoopbackSocket: a TCP socket bound to 127.0.0.1 on a port the kernel picked, for tests
// that need a port with a known behaviour: listening (connections wait in the backlog
// and are never greeted, like a hung server), or only bound, whose port nothing listens
// on once the socket is gone (ClosedLoopbackPort).
//
// Thread-safety: one owner.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

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

}  // namespace tpufleet
