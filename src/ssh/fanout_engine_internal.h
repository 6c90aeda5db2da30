// The fan-out engine's private parts, shared by its two source files: fanout_engine.cc
// (connections: connect, handshake, login, keepalive, the turns of the loop) and fanout_task.cc
// (a command's channel on a connection: open, exec, stdin, output, exit). Include only
// from those.
//
// Thread-safety: as FanoutEngine's: one thread.
#pragma once

#include <libssh2.h>
#include <sys/mman.h>

#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "ssh/fanout_engine.h"
#include "util/unique_fd.h"

namespace tpufleet {

// "ssh-ed25519 AAAA… comment" -> the algorithm and the key blob.
struct PinnedKey {
  std::string algorithm;
  std::string blob;
};

/// libssh2's last error on `session`, or "unknown error".
std::string SessionError(LIBSSH2_SESSION* session);

// The fleet key, read once per job and shared by its connections.
struct FanoutEngine::Key {
  std::string path;
  std::string private_pem;
  std::string public_line;
};

// A local file streamed to every host's stdin: mapped once, read by every channel.
struct Payload {
  const char* data = nullptr;
  size_t size = 0;
  Payload() = default;
  Payload(const Payload&) = delete;
  Payload& operator=(const Payload&) = delete;
  ~Payload() {
    if (data && size) {
      ::munmap(const_cast<char*>(data), size);
    }
  }
};

struct FanoutEngine::Task {
  enum State { kQueued, kWaiting, kOpen, kExec, kRun, kClosing, kWaitClosed, kDone };
  Job* job = nullptr;
  size_t host = 0;
  State state = kQueued;
  Conn* conn = nullptr;
  LIBSSH2_CHANNEL* channel = nullptr;
  int attempts = 0;
  bool over_socket = false;  // the channel is connected to the host's unix_socket
  std::string open_message;  // the socket channel's open request, kept while it is sent
  size_t sent = 0;
  bool eof_sent = false;
  bool held = false;  // its sink was Backlogged(): not read or polled until it is not
  Clock::MonoTime deadline = Clock::MonoTime::max();
  // While input is pending and its sink keeps up: when it has taken none for too long.
  Clock::MonoTime input_deadline = Clock::MonoTime::max();
  HostResult result;
};

struct FanoutEngine::Job {
  JobId id = 0;
  FanoutJob spec;
  FanoutSink* sink = nullptr;
  std::shared_ptr<Key> key;
  std::shared_ptr<Payload> payload;
  std::vector<Task> tasks;
  std::deque<size_t> queue;  // tasks not yet on a connection, in order
  size_t active = 0;
  size_t finished = 0;
};

struct FanoutEngine::Conn {
  enum State { kConnecting, kHandshake, kAuth, kReady, kFailed };
  HostOutcome error_outcome = HostOutcome::kUnreachable;
  std::string error;  // why it failed
  std::string id;
  FanoutHost host;
  std::shared_ptr<Key> key;
  PinnedKey pinned;
  UniqueFd fd;
  EventLoop* loop = nullptr;  // where fd is watched (as `watch`), once it is open
  EventLoop::Id watch = 0;
  LIBSSH2_SESSION* session = nullptr;
  State state = kConnecting;
  std::chrono::milliseconds connect_timeout{};
  Clock::MonoTime deadline{};
  Clock::MonoTime idle_since{};
  Clock::MonoTime next_keepalive{};
  bool banner_seen = false;  // the server sent its SSH identification line
  bool served = false;  // a command ran on it before: a failure may mean it went stale
  bool unread = false;  // idle with bytes waiting that only a channel call will read
  bool sockets_refused = false;  // its server will never connect a Unix socket channel
  Task* task = nullptr;

  ~Conn() {
    if (loop) {
      loop->Remove(watch);  // before the descriptor closes and its number is reused
    }
    fd.Reset();  // first, so freeing the session cannot wait on the peer
    if (session) {
      libssh2_session_free(session);
    }
  }
};

}  // namespace tpufleet
