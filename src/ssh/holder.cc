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
#include <nlohmann/json.hpp>

#include "ssh/fanout_engine.h"
#include "util/file.h"
#include "util/unique_fd.h"

namespace tpufleet {

namespace {

using nlohmann::json;
using std::chrono::milliseconds;

constexpr char kGreeting[] = "TPUFLEET-HOLDER 1\n";
/// A request larger than this is not a job description (16k hosts fit easily).
constexpr uint32_t kMaxRequestBytes = 64u << 20;
/// How often the holder looks whether its socket file is still its own, and whether it
/// has been idle long enough to end.
constexpr milliseconds kHolderTick{1000};
/// A frame carries one read of a channel (kFanoutIoChunk) or a result: a longer one
/// did not come from a holder, and the client does not buffer toward it.
constexpr uint32_t kMaxFrameBytes = 16u << 20;
/// How often a waiting client polls its sink's Cancelled() (Ctrl-C).
constexpr int kClientPollMs = 200;

enum FrameType : uint8_t {
  kStdoutFrame = 1,
  kStderrFrame = 2,
  kResultFrame = 3,
  kDoneFrame = 4,
  kErrorFrame = 5,
  kStatusFrame = 6,
};

void PutU32(std::string& out, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) {
    out.push_back(static_cast<char>((v >> shift) & 0xff));
  }
}

uint32_t GetU32(const char* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) {
    v = (v << 8) | static_cast<unsigned char>(p[i]);
  }
  return v;
}

void AppendFrame(std::string& out, FrameType type, size_t host, std::string_view payload) {
  out.push_back(static_cast<char>(type));
  PutU32(out, static_cast<uint32_t>(host));
  PutU32(out, static_cast<uint32_t>(payload.size()));
  out.append(payload);
}

json JobToJson(const FanoutJob& job) {
  json hosts = json::array();
  for (const auto& h : job.hosts) {
    hosts.push_back({{"name", h.name}, {"address", h.address}, {"port", h.port},
                     {"user", h.user}, {"host_key", h.host_key}, {"command", h.command},
                     {"no_input", h.no_input}});
  }
  return {{"hosts", hosts},
          {"command", job.command},
          {"key_path", job.key_path},
          {"stdin_path", job.stdin_path},
          {"stdin_header", job.stdin_header},
          {"max_parallel", job.max_parallel},
          {"connect_timeout_ms", job.connect_timeout.count()},
          {"command_timeout_ms", job.command_timeout.count()},
          {"input_stall_timeout_ms", job.input_stall_timeout.count()},
          {"fail_fast", job.fail_fast},
          {"hold_stdin", job.hold_stdin}};
}

Result<FanoutJob> JobFromJson(const json& j) {
  try {
    FanoutJob job;
    for (const auto& h : j.at("hosts")) {
      FanoutHost host;
      host.name = h.at("name");
      host.address = h.at("address");
      host.port = h.at("port");
      host.user = h.at("user");
      host.host_key = h.at("host_key");
      host.command = h.at("command");
      host.no_input = h.at("no_input");
      job.hosts.push_back(host);
    }
    job.command = j.at("command");
    job.key_path = j.at("key_path");
    job.stdin_path = j.at("stdin_path");
    job.stdin_header = j.at("stdin_header");
    job.max_parallel = j.at("max_parallel");
    job.connect_timeout = milliseconds(j.at("connect_timeout_ms").get<int64_t>());
    job.command_timeout = milliseconds(j.at("command_timeout_ms").get<int64_t>());
    job.input_stall_timeout = milliseconds(j.value("input_stall_timeout_ms", int64_t{0}));
    job.fail_fast = j.at("fail_fast");
    job.hold_stdin = j.at("hold_stdin");
    return job;
  } catch (const json::exception& e) {
    return InvalidArgumentError(std::string("holder request: ") + e.what());
  }
}

void AppendError(std::string& out, const Status& status) {
  json e = {{"code", static_cast<int>(status.code())}, {"message", status.message()}};
  AppendFrame(out, kErrorFrame, 0, e.dump());
}

json ResultToJson(const HostResult& r) {
  return {{"outcome", static_cast<int>(r.outcome)},
          {"exit_code", r.exit_code},
          {"signal", r.signal},
          {"message", r.message}};
}

HostResult ResultFromJson(const json& j) {
  HostResult r;
  if (!j.is_object()) {
    return HostResult{HostOutcome::kUnreachable, 0, "", "the holder sent a malformed result"};
  }
  r.outcome = static_cast<HostOutcome>(j.value("outcome", 0));
  r.exit_code = j.value("exit_code", 0);
  r.signal = j.value("signal", "");
  r.message = j.value("message", "");
  return r;
}

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
  while (line.size() < 64) {
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
  if (line != kGreeting) {
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
Result<UniqueFd> Request(const std::string& path, const json& request) {
  TPUFLEET_TRY(CheckHolderSocket(path));
  TPUFLEET_ASSIGN_OR_RETURN(UniqueFd fd, ConnectUnix(path));
  TPUFLEET_TRY(CheckHolderPeer(path, fd.get()));
  TPUFLEET_TRY(ReadGreeting(fd.get()));
  std::string body = request.dump();
  std::string frame;
  PutU32(frame, static_cast<uint32_t>(body.size()));
  frame += body;
  TPUFLEET_TRY(WriteAll(fd.get(), frame));
  return fd;
}

// Calls `on_frame` for each whole frame at the front of `buf` and removes it.
template <typename F>
void TakeFrames(std::string& buf, F on_frame) {
  size_t pos = 0;
  while (buf.size() - pos >= 9) {
    uint32_t len = GetU32(buf.data() + pos + 5);
    if (buf.size() - pos - 9 < len) {
      break;
    }
    on_frame(static_cast<FrameType>(buf[pos]), GetU32(buf.data() + pos + 1),
             std::string_view(buf).substr(pos + 9, len));
    pos += 9 + len;
  }
  buf.erase(0, pos);
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
  void Frame(FrameType type, size_t host, std::string_view payload) {
    AppendFrame(out, type, host, payload);
    peak_backlog = std::max(peak_backlog, backlog());
  }

  UniqueFd fd;
  std::string in;
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
  client_.Frame(stream == OutputStream::kStdout ? kStdoutFrame : kStderrFrame, host, data);
}
void ClientSink::OnResult(size_t host, const HostResult& result) {
  client_.Frame(kResultFrame, host, ResultToJson(result).dump());
}
bool ClientSink::Cancelled() { return client_.gone; }
bool ClientSink::Backlogged() { return client_.backlog() >= kHolderClientBacklogBytes; }

bool SameUser(int fd) {
  ucred cred{};
  socklen_t len = sizeof cred;
  return ::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 && cred.uid == ::geteuid();
}

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
  if (!bound || ::listen(listener.get(), 64) != 0) {
    return UnavailableError("cannot listen on " + socket_path + ": " + std::strerror(errno));
  }
  struct stat mine{};
  ::stat(socket_path.c_str(), &mine);

  FanoutEngine engine(clock);
  std::list<std::unique_ptr<Client>> clients;
  size_t peak_backlog = 0;
  auto last_busy = clock.MonotonicNow();
  auto next_tick = last_busy + kHolderTick;
  bool stop = false;
  std::vector<pollfd> fds;
  while (!stop) {
    fds.clear();
    fds.push_back({listener.get(), POLLIN, 0});
    for (auto& c : clients) {
      fds.push_back(
          {c->fd.get(), static_cast<short>(POLLIN | (c->backlog() == 0 ? 0 : POLLOUT)), 0});
    }
    engine.AddPollFds(fds);
    int wait = engine.MillisUntilWake();
    int tick = static_cast<int>(milliseconds(kHolderTick).count());
    ::poll(fds.data(), fds.size(), wait < 0 ? tick : std::min(wait, tick));

    if (fds[0].revents & POLLIN) {
      for (;;) {
        UniqueFd fd(::accept4(listener.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
        if (fd.get() < 0) {
          break;
        }
        if (!SameUser(fd.get())) {
          continue;  // closed by UniqueFd
        }
        auto c = std::make_unique<Client>(peak_backlog);
        c->fd = std::move(fd);
        c->out = kGreeting;
        clients.push_back(std::move(c));
      }
    }
    size_t i = 1;
    for (auto& c : clients) {
      short revents = i < fds.size() && fds[i].fd == c->fd.get() ? fds[i].revents : 0;
      ++i;
      if (revents & (POLLIN | POLLHUP | POLLERR)) {
        char buf[64 * 1024];
        ssize_t n = ::read(c->fd.get(), buf, sizeof buf);
        if (n <= 0 && !(n < 0 && (errno == EAGAIN || errno == EINTR))) {
          c->gone = true;
        } else if (n > 0) {
          c->in.append(buf, static_cast<size_t>(n));
        }
      }
      if (!c->has_job && !c->closing && c->in.size() >= 4) {
        uint32_t len = GetU32(c->in.data());
        if (len > kMaxRequestBytes) {
          AppendError(c->out, InvalidArgumentError("holder request too large"));
          c->closing = true;
        } else if (c->in.size() >= 4 + len) {
          json request = json::parse(c->in.substr(4, len), nullptr, false);
          std::string op = request.is_object() ? request.value("op", "") : "";
          c->closing = true;
          if (op == "stop") {
            stop = true;
          } else if (op == "status") {
            json st = {{"pid", ::getpid()},
                       {"connections", engine.open_connections()},
                       {"busy", engine.busy()},
                       {"peak_backlog_bytes", peak_backlog}};
            AppendFrame(c->out, kStatusFrame, 0, st.dump());
          } else if (op == "run" && request.contains("job")) {
            Result<FanoutJob> job = JobFromJson(request["job"]);
            Result<FanoutEngine::JobId> id =
                job.ok() ? engine.Start(*job, c->sink) : Result<FanoutEngine::JobId>(job.status());
            if (id.ok()) {
              c->has_job = true;
              c->job = *id;
              c->closing = false;
            } else {
              AppendError(c->out, id.status());
            }
          } else {
            AppendError(c->out, InvalidArgumentError("unknown holder request"));
          }
        }
      }
    }
    engine.Step(fds);
    for (auto& c : clients) {
      if (c->has_job && c->gone) {
        engine.Cancel(c->job);
      }
      if (c->has_job && engine.Finished(c->job)) {
        c->has_job = false;
        AppendFrame(c->out, kDoneFrame, 0, "");
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
    }
    clients.remove_if([](const std::unique_ptr<Client>& c) {
      return !c->has_job && (c->gone || (c->closing && c->backlog() == 0));
    });

    auto now = clock.MonotonicNow();
    if (engine.busy() || !clients.empty()) {
      last_busy = now;
    }
    if (now >= next_tick) {
      next_tick = now + kHolderTick;
      struct stat st{};
      bool still_mine = ::stat(socket_path.c_str(), &st) == 0 && st.st_ino == mine.st_ino &&
                        st.st_dev == mine.st_dev;
      if (!still_mine || now - last_busy >= kHolderIdleExit) {
        stop = true;
      }
    }
  }
  for (auto& c : clients) {
    if (c->has_job) {
      engine.Cancel(c->job);
    }
  }
  struct stat st{};
  if (::stat(socket_path.c_str(), &st) == 0 && st.st_ino == mine.st_ino) {
    ::unlink(socket_path.c_str());
  }
  return Status::Ok();
}

Result<std::string> HolderStatus(const std::string& socket_path) {
  TPUFLEET_ASSIGN_OR_RETURN(UniqueFd fd, Request(socket_path, json{{"op", "status"}}));
  std::string buf;
  std::string status;
  char chunk[4096];
  ssize_t n;
  while ((n = ::read(fd.get(), chunk, sizeof chunk)) > 0) {
    buf.append(chunk, static_cast<size_t>(n));
  }
  TakeFrames(buf, [&](FrameType type, uint32_t, std::string_view payload) {
    if (type == kStatusFrame) {
      status = payload;
    }
  });
  if (status.empty()) {
    return UnavailableError("the connection holder sent no status");
  }
  return status;
}

Status StopHolder(const std::string& socket_path) {
  TPUFLEET_ASSIGN_OR_RETURN(UniqueFd fd, Request(socket_path, json{{"op", "stop"}}));
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
  json request = {{"op", "run"}, {"job", JobToJson(job)}};
  Result<UniqueFd> fd = Request(socket_path_, request);
  if (!fd.ok() && fd.status().code() == StatusCode::kUnavailable && start_holder_ &&
      start_holder_().ok()) {
    auto deadline = clock_.MonotonicNow() + kHolderStartTimeout;
    do {
      clock_.SleepFor(milliseconds(5));
      fd = Request(socket_path_, request);
    } while (!fd.ok() && fd.status().code() == StatusCode::kUnavailable &&
             clock_.MonotonicNow() < deadline);
  }
  if (!fd.ok() && fd.status().code() == StatusCode::kPermissionDenied) {
    return fd.status();  // a socket or listener not ours: said out loud, never used
  }
  if (!fd.ok()) {
    return LocalFanout(clock_).Run(job, sink);  // no holder: connect from here, cold
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
    TakeFrames(buf, [&](FrameType type, uint32_t host, std::string_view payload) {
      if (host >= reported.size() && (type == kStdoutFrame || type == kStderrFrame ||
                                      type == kResultFrame)) {
        return;
      }
      switch (type) {
        case kStdoutFrame:
        case kStderrFrame:
          sink.OnOutput(host, type == kStdoutFrame ? OutputStream::kStdout : OutputStream::kStderr,
                        payload);
          break;
        case kResultFrame:
          reported[host] = true;
          sink.OnResult(host, ResultFromJson(json::parse(payload, nullptr, false)));
          break;
        case kErrorFrame: {
          json e = json::parse(payload, nullptr, false);
          int code = e.is_object() ? e.value("code", 0) : 0;
          std::string message = e.is_object() ? e.value("message", "") : "";
          error = code == 0 ? InternalError("the connection holder refused the job")
                            : Status(static_cast<StatusCode>(code), message);
          done = true;
          break;
        }
        default:
          done = type == kDoneFrame || done;
      }
    });
    if (!done && buf.size() >= 9 && GetU32(buf.data() + 5) > kMaxFrameBytes) {
      fd->Reset();
      finish_rest(HostOutcome::kUnreachable, "the connection holder sent a malformed frame");
      return Status::Ok();
    }
  }
  return error;
}

}  // namespace tpufleet
