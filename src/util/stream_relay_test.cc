// RelayStreams as ssh-proxy uses it: ssh's pipe to the socket and back, ssh's end of
// input passed on as a half-close, the server's end of the connection as the end.
#include "util/stream_relay.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <thread>

#include "util/file.h"
#include "util/testing/status_printer.h"
#include "util/unique_fd.h"

namespace tpufleet {
namespace {

std::string ReadAll(int fd) {
  std::string out;
  char buf[256];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0) {
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

TEST(Issue11, RelayStreamsCopiesBothWaysUntilTheServerCloses) {
  int in[2], out[2], sock[2];
  ASSERT_EQ(::pipe(in), 0);
  ASSERT_EQ(::pipe(out), 0);
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, sock), 0);
  UniqueFd in_r(in[0]), in_w(in[1]), out_r(out[0]), out_w(out[1]), ours(sock[0]), server(sock[1]);
  // The server reads everything the client sends (to its half-close), then answers.
  std::thread peer([&] {
    std::string got = ReadAll(server.get());
    std::string answer = "got " + got;
    ASSERT_EQ(::write(server.get(), answer.data(), answer.size()),
              static_cast<ssize_t>(answer.size()));
    server.Reset();
  });
  ASSERT_EQ(::write(in_w.get(), "SSH-2.0-client\r\n", 16), 16);
  in_w.Reset();  // ssh is done sending
  Status s = RelayStreams(in_r.get(), out_w.get(), ours.get());
  peer.join();
  EXPECT_EQ(s, Status::Ok());
  out_w.Reset();
  EXPECT_EQ(ReadAll(out_r.get()), "got SSH-2.0-client\r\n");
}

TEST(Issue11, ThisProgramIsTheRunningBinary) {
  Result<std::string> self = ThisProgram();
  ASSERT_TRUE(self.ok()) << self.status().ToString();
  EXPECT_EQ(self->front(), '/');
  EXPECT_NE(self->find("util_test"), std::string::npos) << *self;
}

}  // namespace
}  // namespace tpufleet
