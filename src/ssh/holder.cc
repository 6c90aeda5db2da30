#include "ssh/holder.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <list>
#include <memory>

#include "ssh/fanout_engine.h"
#include "ssh/holder_protocol.h"
#include "util/event_loop.h"
#include "util/file.h"
#include "util/strings.h"
#include "util/unique_fd.h"

namespace tpufleet {

namespace {

using std::chrono::milliseconds;

/// How often the holder looks whether its socket file is still its own, and whether it
/// has been idle long enough to end.
constexpr milliseconds kHolderTick{1000};
/// How often a waiting client polls its sink's Cancelled() (Ctrl-C).
constexpr int kClientPollMs = 200;
/// Connections the listening socket queues before the holder accepts them.
constexpr int kListenBacklog = 64;
/// Bytes read from a client's socket per call.
constexpr size_t kClientReadChunk = 64 * 1024;

Result<sockaddr_un> UnixAddress(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof addr.sun_path) {
    return InvalidArgumentError("socket path too long for a Unix socket: " + path);
  }
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  return addr;
}

Result<UniqueFd> ConnectUnix(const std::string& path) {
  TPUFLEET_ASSIGN_OR_RETURN(sockaddr_un addr, UnixAddress(path));
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (fd.get() < 0 ||
      ::connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    return UnavailableError("no connection holder at " + path + ": " + std::strerror(errno));
  }
  return fd;
}

// Blocking I/O for the client side, with a deadline.
Status WriteAll(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      return UnavailableError(std::string("writing to the holder: ") + std::strerror(errno));
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return Status::Ok();
}

// Reads the greeting (one line) within kHolderStartTimeout.
Status ReadGreeting(int fd) {
  std::string line;
  char c;
  while (line.size() < kHolderMaxGreetingBytes) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(milliseconds(kHolderStartTimeout).count())) <= 0) {
      return TimeoutError("the connection holder did not greet");
    }
    if (::read(fd, &c, 1) != 1) {
      return UnavailableError("the connection holder closed the socket");
    }
    line += c;
    if (c == '\n') {
      break;
    }
  }
  if (line != kHolderGreeting) {
    return FailedPreconditionError("a connection holder of another version answers");
  }
  return Status::Ok();
}

// Before anything is sent (the key path, the hosts, the command): the socket and its
// directory must be ours, and so must the process listening on it. A socket someone
// else put there, or a listener of another user behind ours, is refused loudly: it
// is someone trying to read our jobs and feed us their output.
Status CheckHolderSocket(const std::string& path) {
  size_t slash = path.find_last_of('/');
  std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  struct stat st {};
  Status s;
  if (::stat(dir.c_str(), &st) != 0) {
    return UnavailableError("no connection holder at " + path + ": " + std::strerror(errno));
  }
  s = CheckOwnedByMe(dir, st, 022);
  if (s.ok() && ::lstat(path.c_str(), &st) == 0) {
    s = !S_ISSOCK(st.st_mode) ? FailedPreconditionError(path + " is not a socket")
                              : CheckOwnedByMe(path, st, 0);
  }
  return s.ok() ? s : PermissionDeniedError("refusing the connection holder at " + path + ": " +
                                            s.message());
}

Status CheckHolderPeer(const std::string& path, int fd) {
  ucred cred{};
  socklen_t len = sizeof cred;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
    return PermissionDeniedError("refusing the connection holder at " + path +
                                 ": cannot tell who listens there: " + std::strerror(errno));
  }
  if (cred.uid != ::geteuid()) {
    return PermissionDeniedError(
        "refusing the connection holder at " + path + ": it runs as " +
        DescribeUser(cred.uid) + " (pid " + std::to_string(cred.pid) + "), not as " +
        DescribeUser(::geteuid()) + "; someone else may be listening in its place: nothing "
        "was sent to it. Remove " + path + " and check who can write its directory");
  }
  return Status::Ok();
}

// Sends one request and returns the connected socket, greeted.
Result<UniqueFd> Request(const std::string& path, HolderRequest::Op op,
                         const FanoutJob* job = nullptr) {
  TPUFLEET_ASSIGN_OR_RETURN(std::string request, EncodeHolderRequest(op, job));
  TPUFLEET_TRY(CheckHolderSocket(path));
  TPUFLEET_ASSIGN_OR_RETURN(UniqueFd fd, ConnectUnix(path));
  TPUFLEET_TRY(CheckHolderPeer(path, fd.get()));
  TPUFLEET_TRY(ReadGreeting(fd.get()));
  TPUFLEET_TRY(WriteAll(fd.get(), request));
  return fd;
}

// ---- the server ----

struct Client;

class ClientSink final : public FanoutSink {
 public:
  explicit ClientSink(Client& c) : client_(c) {}
  void OnOutput(size_t host, OutputStream stream, std::string_view data) override;
  void OnResult(size_t host, const HostResult& result) override;
  bool Cancelled() override;
  bool Backlogged() override;

 private:
  Client& client_;
};

struct Client {
  explicit Client(size_t& peak) : peak_backlog(peak) {}
  size_t backlog() const { return out.size() - out_sent; }
  // Appends a frame and notes the largest backlog yet, for the status request.
  void Frame(HolderFrame type, size_t host, std::string_view payload) {
    AppendHolderFrame(out, type, host, payload);
    peak_backlog = std::max(peak_backlog, backlog());
  }

  UniqueFd fd;
  EventLoop::Id watch = 0;
  EventLoop::Id request_timer = 0;  // until the request is all there
  std::string in;        // the request, until it is all there
  std::string out;
  size_t out_sent = 0;   // bytes at the front of `out` already sent
  size_t& peak_backlog;  // the holder's, over all clients
  bool gone = false;     // the peer hung up
  bool closing = false;  // close once `out` is written
  bool has_job = false;
  FanoutEngine::JobId job = 0;
  ClientSink sink{*this};
};

void ClientSink::OnOutput(size_t host, OutputStream stream, std::string_view data) {
  client_.Frame(stream == OutputStream::kStdout ? HolderFrame::kStdout : HolderFrame::kStderr,
                host, data);
}
void ClientSink::OnResult(size_t host, const HostResult& result) {
  client_.Frame(HolderFrame::kResult, host, EncodeHostResult(result));
}
bool ClientSink::Cancelled() { return client_.gone; }
bool ClientSink::Backlogged() { return client_.backlog() >= kHolderClientBacklogBytes; }

bool SameUser(int fd) {
  ucred cred{};
  socklen_t len = sizeof cred;
  return ::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 && cred.uid == ::geteuid();
}

// The holder's part of the loop: its listening socket, its clients, its tick. In a turn
// the clients' requests are read (and jobs started) in their callbacks, the engine
// drives its connections, and then (AfterEngine) what the engine produced is sent.
class Server {
 public:
  Server(EventLoop& loop, int listener, std::string path, const struct stat& mine)
      : loop_(loop), engine_(loop), path_(std::move(path)), mine_(mine),
        last_busy_(loop.Now()) {
    ids_ = {loop_.Watch(listener, POLLIN, [this, listener](short, Clock::MonoTime) {
              Accept(listener);
            }),
            // After the engine's own turn-end hook, which was added before.
            loop_.AtTurnEnd([this](Clock::MonoTime now) { AfterEngine(now); }),
            loop_.Every(kHolderTick, [this](Clock::MonoTime now) { Tick(now); })};
  }
  ~Server() {
    for (EventLoop::Id id : ids_) {
      loop_.Remove(id);
    }
    for (auto& c : clients_) {
      loop_.Remove(c->watch);
      loop_.Remove(c->request_timer);
    }
  }
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Every client's job ends as cancelled (its connections close).
  void CancelJobs() {
    for (auto& c : clients_) {
      if (c->has_job) {
        engine_.Cancel(c->job);
      }
    }
  }

 private:
  void Accept(int listener) {
    for (;;) {
      UniqueFd fd(::accept4(listener, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
      if (fd.get() < 0) {
        break;
      }
      if (!SameUser(fd.get())) {
        continue;  // closed by UniqueFd
      }
      auto c = std::make_unique<Client>(peak_backlog_);
      c->fd = std::move(fd);
      c->out = kHolderGreeting;
      Client* raw = c.get();
      c->watch = loop_.Watch(c->fd.get(), POLLIN | POLLOUT,
                             [this, raw](short revents, Clock::MonoTime) { Read(*raw, revents); });
      c->request_timer = loop_.After(kHolderRequestTimeout, [raw](Clock::MonoTime) {
        raw->request_timer = 0;
        if (!raw->has_job && !raw->closing) {
          raw->Frame(HolderFrame::kError, 0,
                     EncodeHolderError(TimeoutError("holder request: none within " +
                                                    FormatDuration(kHolderRequestTimeout))));
          raw->closing = true;
        }
      });
      clients_.push_back(std::move(c));
    }
  }

  void Read(Client& c, short revents) {
    if (!(revents & (POLLIN | POLLHUP | POLLERR))) {
      return;
    }
    char buf[kClientReadChunk];
    ssize_t n = ::read(c.fd.get(), buf, sizeof buf);
    if (n <= 0 && !(n < 0 && (errno == EAGAIN || errno == EINTR))) {
      c.gone = true;
      return;
    }
    if (n <= 0 || c.has_job || c.closing) {
      return;  // one request per socket: what follows it is not read into memory
    }
    c.in.append(buf, static_cast<size_t>(n));
    Result<std::optional<HolderRequest>> request = TakeHolderRequest(c.in);
    if (request.ok() && !request->has_value()) {
      return;  // not all there yet
    }
    c.in.clear();
    c.closing = true;
    loop_.Remove(c.request_timer);
    if (!request.ok()) {
      c.Frame(HolderFrame::kError, 0, EncodeHolderError(request.status()));
      return;
    }
    switch ((*request)->op) {
      case HolderRequest::Op::kStop:
        loop_.Stop();
        break;
      case HolderRequest::Op::kStatus:
        c.Frame(HolderFrame::kStatus, 0,
                EncodeHolderStats({::getpid(), engine_.open_connections(), engine_.busy(),
                                   peak_backlog_}));
        break;
      case HolderRequest::Op::kRun: {
        Result<FanoutEngine::JobId> id = engine_.Start((*request)->job, c.sink);
        if (id.ok()) {
          c.has_job = true;
          c.job = *id;
          c.closing = false;
        } else {
          c.Frame(HolderFrame::kError, 0, EncodeHolderError(id.status()));
        }
        break;
      }
    }
  }

  void AfterEngine(Clock::MonoTime now) {
    for (auto& c : clients_) {
      if (c->has_job && c->gone) {
        engine_.Cancel(c->job);
      }
      if (c->has_job && engine_.Finished(c->job)) {
        c->has_job = false;
        c->Frame(HolderFrame::kDone, 0, "");
        c->closing = true;
      }
      while (c->backlog() > 0 && !c->gone) {
        ssize_t n = ::send(c->fd.get(), c->out.data() + c->out_sent, c->backlog(), MSG_NOSIGNAL);
        if (n <= 0) {
          if (n < 0 && errno != EAGAIN && errno != EINTR) {
            c->gone = true;
          }
          break;
        }
        c->out_sent += static_cast<size_t>(n);
      }
      // What was sent goes once it is most of the buffer: each byte moves at most once.
      if (c->out_sent > c->out.size() / 2) {
        c->out.erase(0, c->out_sent);
        c->out_sent = 0;
      }
      // A gone client is not polled (its hang-up would end every poll at once).
      loop_.SetEvents(c->watch, c->gone ? 0 : POLLIN | (c->backlog() == 0 ? 0 : POLLOUT));
    }
    clients_.remove_if([this](const std::unique_ptr<Client>& c) {
      bool done = !c->has_job && (c->gone || (c->closing && c->backlog() == 0));
      if (done) {
        loop_.Remove(c->watch);
        loop_.Remove(c->request_timer);
      }
      return done;
    });
    if (engine_.busy() || !clients_.empty()) {
      last_busy_ = now;
    }
  }

  void Tick(Clock::MonoTime now) {
    struct stat st {};
    bool still_mine = ::stat(path_.c_str(), &st) == 0 && st.st_ino == mine_.st_ino &&
                      st.st_dev == mine_.st_dev;
    bool idle = !engine_.busy() && clients_.empty() && now - last_busy_ >= kHolderIdleExit;
    if (!still_mine || idle) {
      loop_.Stop();
    }
  }

  EventLoop& loop_;
  FanoutEngine engine_;
  const std::string path_;
  const struct stat mine_;
  std::list<std::unique_ptr<Client>> clients_;
  size_t peak_backlog_ = 0;  // the most output held for one client since the start
  Clock::MonoTime last_busy_;
  std::vector<EventLoop::Id> ids_;
};

}  // namespace

Status ServeHolder(const std::string& socket_path, Clock& clock) {
  if (ConnectUnix(socket_path).ok()) {
    return FailedPreconditionError("a connection holder already runs at " + socket_path);
  }
  TPUFLEET_ASSIGN_OR_RETURN(sockaddr_un addr, UnixAddress(socket_path));
  ::unlink(socket_path.c_str());  // a dead holder's socket
  UniqueFd listener(::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  mode_t old_mask = ::umask(077);  // the socket file is the owner's alone
  bool bound = listener.get() >= 0 &&
               ::bind(listener.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0;
  ::umask(old_mask);
  if (!bound || ::listen(listener.get(), kListenBacklog) != 0) {
    return UnavailableError("cannot listen on " + socket_path + ": " + std::strerror(errno));
  }
  struct stat mine{};
  ::stat(socket_path.c_str(), &mine);

  EventLoop loop(clock);
  Server server(loop, listener.get(), socket_path, mine);
  loop.Run();
  server.CancelJobs();
  struct stat st{};
  if (::stat(socket_path.c_str(), &st) == 0 && st.st_ino == mine.st_ino) {
    ::unlink(socket_path.c_str());
  }
  return Status::Ok();  // the clients' sockets close as the server goes
}

Result<std::string> HolderStatus(const std::string& socket_path) {
  TPUFLEET_ASSIGN_OR_RETURN(UniqueFd fd, Request(socket_path, HolderRequest::Op::kStatus));
  std::string buf;
  std::string status;
  char chunk[4096];
  ssize_t n;
  while ((n = ::read(fd.get(), chunk, sizeof chunk)) > 0) {
    buf.append(chunk, static_cast<size_t>(n));
  }
  (void)TakeHolderFrames(buf, [&](HolderFrame type, uint32_t, std::string_view payload) {
    if (type == HolderFrame::kStatus) {
      status = payload;
    }
  });
  if (status.empty()) {
    return UnavailableError("the connection holder sent no status");
  }
  return status;
}

Status StopHolder(const std::string& socket_path) {
  TPUFLEET_ASSIGN_OR_RETURN(UniqueFd fd, Request(socket_path, HolderRequest::Op::kStop));
  char c;
  while (::read(fd.get(), &c, 1) > 0) {  // the holder closes the socket as it ends
  }
  return Status::Ok();
}

Status HolderFanout::Run(const FanoutJob& original, FanoutSink& sink) {
  // The holder runs elsewhere: paths must not depend on this process's directory.
  FanoutJob job = original;
  for (std::string* path : {&job.key_path, &job.stdin_path}) {
    if (!path->empty() && (*path)[0] != '/') {
      char resolved[PATH_MAX];
      if (::realpath(path->c_str(), resolved) != nullptr) {
        *path = resolved;
      }
    }
  }
  Result<UniqueFd> fd = Request(socket_path_, HolderRequest::Op::kRun, &job);
  if (!fd.ok() && fd.status().code() == StatusCode::kUnavailable && start_holder_ &&
      start_holder_().ok()) {
    auto deadline = clock_.MonotonicNow() + kHolderStartTimeout;
    do {
      clock_.SleepFor(milliseconds(5));
      fd = Request(socket_path_, HolderRequest::Op::kRun, &job);
    } while (!fd.ok() && fd.status().code() == StatusCode::kUnavailable &&
             clock_.MonotonicNow() < deadline);
  }
  if (!fd.ok() && fd.status().code() == StatusCode::kPermissionDenied) {
    return fd.status();  // a socket or listener not ours: said out loud, never used
  }
  if (!fd.ok()) {
    // No holder, or a job JSON cannot carry: connect from here, cold.
    return LocalFanout(clock_).Run(job, sink);
  }
  std::vector<bool> reported(job.hosts.size(), false);
  auto finish_rest = [&](HostOutcome outcome, const std::string& message) {
    for (size_t h = 0; h < reported.size(); ++h) {
      if (!reported[h]) {
        sink.OnResult(h, HostResult{outcome, 0, "", message});
      }
    }
  };
  std::string buf;
  Status error;
  bool done = false;
  char chunk[64 * 1024];
  while (!done) {
    if (sink.Cancelled()) {
      fd->Reset();  // the holder cancels the job when its client goes
      finish_rest(HostOutcome::kCancelled, "cancelled");
      return Status::Ok();
    }
    pollfd p{fd->get(), POLLIN, 0};
    if (::poll(&p, 1, kClientPollMs) <= 0) {
      continue;
    }
    ssize_t n = ::read(fd->get(), chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      finish_rest(HostOutcome::kUnreachable, "the connection holder ended during the command");
      return Status::Ok();
    }
    buf.append(chunk, static_cast<size_t>(n));
    Status framed = TakeHolderFrames(buf, [&](HolderFrame type, uint32_t host,
                                              std::string_view payload) {
      bool per_host = type == HolderFrame::kStdout || type == HolderFrame::kStderr ||
                      type == HolderFrame::kResult;
      if (per_host && host >= reported.size()) {
        return;
      }
      switch (type) {
        case HolderFrame::kStdout:
        case HolderFrame::kStderr:
          sink.OnOutput(host,
                        type == HolderFrame::kStdout ? OutputStream::kStdout
                                                     : OutputStream::kStderr,
                        payload);
          break;
        case HolderFrame::kResult:
          reported[host] = true;
          sink.OnResult(host, DecodeHostResult(payload));
          break;
        case HolderFrame::kError:
          error = DecodeHolderError(payload);
          done = true;
          break;
        default:
          done = type == HolderFrame::kDone || done;
      }
    });
    if (!done && !framed.ok()) {
      fd->Reset();
      finish_rest(HostOutcome::kUnreachable, framed.message());
      return Status::Ok();
    }
  }
  return error;
}

}  // namespace tpufleet
