#include "util/stream_relay.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "util/file.h"

namespace tpufleet {
namespace {

// One read's worth: an SSH packet is at most 256 KiB, most are far smaller.
constexpr size_t kRelayChunkBytes = 64 << 10;

// Writes all of `data` to `fd` (send with MSG_NOSIGNAL on the socket, so a peer that
// went away is an error, not a SIGPIPE).
Status WriteAll(int fd, const char* data, size_t size, bool socket) {
  while (size > 0) {
    ssize_t n = socket ? ::send(fd, data, size, MSG_NOSIGNAL) : ::write(fd, data, size);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      return socket ? UnavailableError(std::string("the connection: ") + std::strerror(errno))
                    : ErrnoStatus("stdout", errno);
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
  return Status::Ok();
}

}  // namespace

Status RelayStreams(int in, int out, int socket) {
  std::vector<char> storage(kRelayChunkBytes);
  char* buf = storage.data();
  bool in_open = true;
  while (true) {
    pollfd fds[2] = {{socket, POLLIN, 0}, {in, POLLIN, 0}};
    if (::poll(fds, in_open ? 2 : 1, -1) < 0) {
      if (errno == EINTR) {
        continue;
      }
      return ErrnoStatus("poll", errno);
    }
    if (fds[0].revents != 0) {
      ssize_t n = ::recv(socket, buf, storage.size(), 0);
      if (n < 0 && errno == EINTR) {
        continue;
      }
      if (n < 0) {
        return UnavailableError(std::string("the connection: ") + std::strerror(errno));
      }
      if (n == 0) {
        return Status::Ok();
      }
      TPUFLEET_TRY(WriteAll(out, buf, static_cast<size_t>(n), false));
    }
    if (in_open && fds[1].revents != 0) {
      ssize_t n = ::read(in, buf, storage.size());
      if (n < 0 && errno == EINTR) {
        continue;
      }
      if (n < 0) {
        return ErrnoStatus("stdin", errno);
      }
      if (n == 0) {
        in_open = false;
        ::shutdown(socket, SHUT_WR);
        continue;
      }
      TPUFLEET_TRY(WriteAll(socket, buf, static_cast<size_t>(n), true));
    }
  }
}

}  // namespace tpufleet
