#include "ssh/fanout_engine.h"

#include "ssh/fanout_engine_internal.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <libssh2.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
#include <mutex>

#include "ssh/ssh_files.h"
#include "util/encoding.h"
#include "util/file.h"
#include "util/strings.h"
#include "util/unique_fd.h"

namespace tpufleet {

namespace {

using std::chrono::duration_cast;
using std::chrono::milliseconds;

/// A dead connection's channel retries once on a fresh connection.
constexpr int kMaxChannelAttempts = 2;

// libssh2 1.10 offers these; each list starts with what is cheapest on both ends:
// curve25519 (the post-quantum hybrid OpenSSH prefers costs ~54 ms of client CPU),
// AES-CTR with AES-NI, and SHA-256 HMAC.
constexpr const char* kKexPrefs =
    "curve25519-sha256,curve25519-sha256@libssh.org,ecdh-sha2-nistp256,"
    "diffie-hellman-group14-sha256";
constexpr const char* kCipherPrefs = "aes128-ctr,aes256-ctr,aes192-ctr";
constexpr const char* kMacPrefs = "hmac-sha2-256,hmac-sha2-512,hmac-sha1";

void InitLibssh2Once() {
  static std::once_flag once;
  std::call_once(once, [] {
    libssh2_init(0);
    // A fleet of hundreds of hosts needs a socket each: lift the soft limit on open
    // files (often 1024) to the hard one.
    rlimit lim{};
    if (::getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur < lim.rlim_max) {
      lim.rlim_cur = lim.rlim_max;
      ::setrlimit(RLIMIT_NOFILE, &lim);
    }
  });
}

}  // namespace

std::string SessionError(LIBSSH2_SESSION* session) {
  char* msg = nullptr;
  int len = 0;
  libssh2_session_last_error(session, &msg, &len, 0);
  return msg && len > 0 ? std::string(msg, static_cast<size_t>(len)) : "unknown error";
}

namespace {

// "10s", "2m": a timeout in a message, in whole seconds.
std::string Seconds(milliseconds timeout) {
  return FormatDuration(duration_cast<std::chrono::seconds>(timeout));
}

Result<PinnedKey> ParsePinnedKey(const std::string& line) {
  std::vector<std::string> words;
  for (auto& w : Split(Trim(line), ' ')) {
    if (!w.empty()) {
      words.push_back(w);
    }
  }
  if (words.size() < 2) {
    return InvalidArgumentError("pinned host key is not \"TYPE BASE64\"");
  }
  auto blob = Base64Decode(words[1]);
  if (!blob.ok()) {
    return InvalidArgumentError("pinned host key is not valid base64");
  }
  return PinnedKey{words[0], *blob};
}

Result<sockaddr_storage> Resolve(const FanoutHost& host, socklen_t* len) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* res = nullptr;
  std::string port = std::to_string(host.port);
  int rc = ::getaddrinfo(host.address.c_str(), port.c_str(), &hints, &res);
  if (rc != 0 || !res) {
    return UnavailableError("cannot resolve " + host.address + ": " + gai_strerror(rc));
  }
  sockaddr_storage out{};
  std::memcpy(&out, res->ai_addr, res->ai_addrlen);
  *len = res->ai_addrlen;
  ::freeaddrinfo(res);
  return out;
}

}  // namespace

FanoutEngine::FanoutEngine(EventLoop& loop) : loop_(loop), now_(loop.Now()) {
  InitLibssh2Once();
  before_poll_ = loop_.BeforePoll([this](Clock::MonoTime) { BeforePoll(); });
  turn_end_ = loop_.AtTurnEnd([this](Clock::MonoTime now) { OnTurnEnd(now); });
}

FanoutEngine::~FanoutEngine() {
  for (EventLoop::Id id : {before_poll_, turn_end_, timer_}) {
    loop_.Remove(id);
  }
  for (auto& [id, conn] : conns_) {
    if (conn->task && conn->task->channel) {
      libssh2_channel_free(conn->task->channel);
      conn->task->channel = nullptr;
    }
  }
}

Result<FanoutEngine::JobId> FanoutEngine::Start(const FanoutJob& spec, FanoutSink& sink) {
  for (const auto& h : spec.hosts) {
    if (h.user.empty()) {
      return InvalidArgumentError(h.name + ": no login user to connect as");
    }
  }
  auto job = std::make_unique<Job>();
  job->id = next_id_++;
  job->spec = spec;
  job->sink = &sink;
  job->spec.max_parallel = std::max<size_t>(1, spec.max_parallel);
  auto key = std::make_shared<Key>();
  key->path = spec.key_path;
  TPUFLEET_ASSIGN_OR_RETURN(key->private_pem, ReadFile(spec.key_path));
  TPUFLEET_ASSIGN_OR_RETURN(key->public_line, ReadFile(spec.key_path + ".pub"));
  job->key = std::move(key);
  if (!spec.stdin_path.empty()) {
    UniqueFd fd(::open(spec.stdin_path.c_str(), O_RDONLY | O_CLOEXEC));
    struct stat st{};
    if (fd.get() < 0 || ::fstat(fd.get(), &st) != 0) {
      return ErrnoStatus(spec.stdin_path, errno);
    }
    auto payload = std::make_shared<Payload>();
    if (st.st_size > 0) {
      void* p = ::mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_SHARED,
                       fd.get(), 0);
      if (p == MAP_FAILED) {
        return ErrnoStatus(spec.stdin_path, errno);
      }
      payload->data = static_cast<const char*>(p);
      payload->size = static_cast<size_t>(st.st_size);
    }
    job->payload = std::move(payload);
  }
  job->tasks.resize(spec.hosts.size());
  for (size_t i = 0; i < job->tasks.size(); ++i) {
    job->tasks[i].job = job.get();
    job->tasks[i].host = i;
    job->queue.push_back(i);
  }
  JobId id = job->id;
  Job& ref = *job;
  jobs_.emplace(id, std::move(job));
  now_ = loop_.Now();
  // A host with no key to check the server against is never connected to; it fails
  // alone, and the others run.
  for (Task& t : ref.tasks) {
    const FanoutHost& h = ref.spec.hosts[t.host];
    if (h.host_key.empty() || !ParsePinnedKey(h.host_key).ok()) {
      CancelTask(t, HostOutcome::kHostKeyMismatch,
                 h.host_key.empty() ? "tpufleet has no host key pinned for " + h.address +
                                          "; run `tpufleet up` so it learns it"
                                    : "the host key pinned for " + h.address +
                                          " is not \"TYPE BASE64\"");
    }
  }
  Admit(ref);
  Reap();
  return id;
}

bool FanoutEngine::Finished(JobId id) const { return jobs_.find(id) == jobs_.end(); }

void FanoutEngine::Cancel(JobId id) {
  auto it = jobs_.find(id);
  if (it == jobs_.end()) {
    return;
  }
  now_ = loop_.Now();
  for (auto& t : it->second->tasks) {
    if (t.state != Task::kDone) {
      CancelTask(t, HostOutcome::kCancelled, "cancelled");
    }
  }
  Reap();
}

// Moves queued tasks of `job` onto connections while the job is under its cap.
void FanoutEngine::Admit(Job& job) {
  while (job.active < job.spec.max_parallel && !job.queue.empty()) {
    Task& t = job.tasks[job.queue.front()];
    job.queue.pop_front();
    if (t.state != Task::kQueued) {
      continue;  // cancelled before it started
    }
    ++job.active;
    ++t.attempts;
    t.state = Task::kWaiting;
    Conn* conn = ConnFor(job, job.spec.hosts[t.host]);
    conn->task = &t;
    t.conn = conn;
    if (conn->state == Conn::kFailed) {  // could not even start connecting
      FailConn(*conn, conn->error_outcome, conn->error);
    } else if (conn->state == Conn::kReady) {
      DriveConn(*conn);
    }
  }
}

FanoutEngine::Conn* FanoutEngine::ConnFor(const Job& job, const FanoutHost& host) {
  std::string id = host.address + "\n" + std::to_string(host.port) + "\n" + host.user + "\n" +
                   host.host_key + "\n" + job.key->path;
  auto [first, last] = conns_.equal_range(id);
  for (auto it = first; it != last; ++it) {
    Conn& c = *it->second;
    if (!c.task && c.state == Conn::kReady) {
      c.key = job.key;
      return &c;
    }
  }
  auto conn = std::make_unique<Conn>();
  conn->id = id;
  conn->host = host;
  conn->key = job.key;
  conn->pinned = ParsePinnedKey(host.host_key).value();
  conn->connect_timeout = job.spec.connect_timeout;
  conn->deadline = now_ + job.spec.connect_timeout;
  Conn* raw = conn.get();
  conns_.emplace(id, std::move(conn));

  socklen_t len = 0;
  auto addr = Resolve(host, &len);
  if (!addr.ok()) {
    raw->state = Conn::kFailed;
    raw->error = addr.status().message();
    return raw;
  }
  raw->fd = UniqueFd(::socket(addr->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  int one = 1;
  unsigned int user_timeout = static_cast<unsigned int>(milliseconds(kTcpUserTimeout).count());
  if (raw->fd.get() < 0 ||
      ::setsockopt(raw->fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0 ||
      ::setsockopt(raw->fd.get(), IPPROTO_TCP, TCP_USER_TIMEOUT, &user_timeout,
                   sizeof user_timeout) != 0 ||
      (::connect(raw->fd.get(), reinterpret_cast<const sockaddr*>(&*addr), len) != 0 &&
       errno != EINPROGRESS)) {
    raw->state = Conn::kFailed;
    raw->error = std::string("connect: ") + std::strerror(errno);
    return raw;
  }
  raw->loop = &loop_;  // polled for what BeforePoll says
  raw->watch = loop_.Watch(raw->fd.get(), 0,
                           [this, raw](short, Clock::MonoTime now) { OnReady(*raw, now); });
  return raw;
}

// The connection is unusable: its host (if any) gets `outcome`, or starts again on a
// fresh connection when this one had gone stale while idle.
void FanoutEngine::FailConn(Conn& conn, HostOutcome outcome, const std::string& message) {
  conn.state = Conn::kFailed;
  conn.error_outcome = outcome;
  conn.error = message;
  Task* t = conn.task;
  if (!t) {
    return;
  }
  CloseConn(conn);
  // A stale kept connection is worth one fresh try; a wrong host key never is.
  if (conn.served && outcome != HostOutcome::kHostKeyMismatch && t->state <= Task::kExec &&
      t->attempts < kMaxChannelAttempts) {
    t->state = Task::kQueued;
    t->deadline = Clock::MonoTime::max();
    --t->job->active;
    t->job->queue.push_front(t->host);
    return;
  }
  t->result.outcome = outcome;
  t->result.message = message;
  FinishTask(*t);
}

// Lets go of the connection's host: its channel is freed and the connection is marked
// failed, so Reap closes its socket.
void FanoutEngine::CloseConn(Conn& conn) {
  if (Task* t = conn.task) {
    if (t->channel) {
      libssh2_channel_free(t->channel);
      t->channel = nullptr;
    }
    t->conn = nullptr;
    conn.task = nullptr;
  }
  conn.state = Conn::kFailed;
}

void FanoutEngine::BeforePoll() {
  for (auto& [id, conn] : conns_) {
    Conn& c = *conn;
    short events = POLLIN;
    if (c.state == Conn::kFailed || c.fd.get() < 0 || c.unread || (c.task && c.task->held)) {
      events = 0;
    } else if (c.state == Conn::kConnecting) {
      events = POLLOUT;
    } else if (c.session &&
               (libssh2_session_block_directions(c.session) & LIBSSH2_SESSION_BLOCK_OUTBOUND)) {
      events |= POLLOUT;
    }
    loop_.SetEvents(c.watch, events);
  }
  Clock::MonoTime wake = Clock::MonoTime::max();
  for (const auto& [id, conn] : conns_) {
    if (conn->state == Conn::kConnecting || conn->state == Conn::kHandshake ||
        conn->state == Conn::kAuth) {
      wake = std::min(wake, conn->deadline);
    }
    if (conn->state == Conn::kReady) {
      wake = std::min(wake, conn->next_keepalive);
    }
    if (conn->task) {
      wake = std::min({wake, conn->task->deadline, conn->task->input_deadline});
      if (conn->task->held && !conn->task->job->sink->Backlogged()) {
        wake = Clock::MonoTime::min();  // its sink caught up: OnTimer resumes it at once
        break;
      }
    }
  }
  loop_.Remove(timer_);
  timer_ = wake == Clock::MonoTime::max()
               ? 0
               : loop_.At(wake, [this](Clock::MonoTime now) { OnTimer(now); });
}

void FanoutEngine::OnReady(Conn& c, Clock::MonoTime now) {
  now_ = now;
  if (c.state == Conn::kReady && !c.task) {
    // Idle: only a dead peer (EOF, reset) is worth acting on now; other bytes wait
    // for the next channel call to read them.
    char b;
    ssize_t n = ::recv(c.fd.get(), &b, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) {
      c.state = Conn::kFailed;
    } else {
      c.unread = true;
    }
    return;
  }
  DriveConn(c);
}

void FanoutEngine::OnTimer(Clock::MonoTime now) {
  now_ = now;
  timer_ = 0;
  std::vector<Conn*> resumed;
  for (auto& [id, conn] : conns_) {
    // Held back while their sink was behind: it has caught up (libssh2 may hold data
    // already read from the socket, so they are driven whether or not it is readable).
    if (conn->task && conn->task->held && !conn->task->job->sink->Backlogged()) {
      conn->task->held = false;
      resumed.push_back(conn.get());
    }
  }
  for (Conn* c : resumed) {
    DriveConn(*c);
  }
  CheckDeadlines();
}

void FanoutEngine::OnTurnEnd(Clock::MonoTime now) {
  now_ = now;
  for (auto& [id, job] : jobs_) {
    if (job->sink->Cancelled()) {
      for (auto& t : job->tasks) {
        if (t.state != Task::kDone) {
          CancelTask(t, HostOutcome::kCancelled, "cancelled");
        }
      }
    }
    Admit(*job);
  }
  Reap();
}

void FanoutEngine::CheckDeadlines() {
  std::vector<Conn*> conns;
  for (auto& [id, conn] : conns_) {
    conns.push_back(conn.get());
  }
  for (Conn* c : conns) {
    bool connecting = c->state == Conn::kConnecting || c->state == Conn::kHandshake ||
                      c->state == Conn::kAuth;
    if (connecting && now_ >= c->deadline) {
      FailConn(*c, HostOutcome::kTimeout,
               "no SSH login within " +
                   Seconds(c->connect_timeout));
      continue;
    }
    if (c->state != Conn::kReady) {
      continue;
    }
    if (c->task && c->task->state < Task::kRun && now_ >= c->task->deadline) {
      // A kept-open connection whose worker went silent (its network cut, its sshd
      // frozen) answers no channel request, and TCP may never say so: try a fresh one.
      FailConn(*c, HostOutcome::kTimeout,
               "the worker's sshd started no command within " +
                   Seconds(c->task->job->spec.connect_timeout));
      continue;
    }
    if (c->task && now_ >= c->task->input_deadline) {
      CancelTask(*c->task, HostOutcome::kTimeout,
                 "the worker took none of its input for " +
                     Seconds(c->task->job->spec.input_stall_timeout));
      continue;
    }
    if (c->task && now_ >= c->task->deadline) {
      CancelTask(*c->task, HostOutcome::kTimeout,
                 "still running after " + Seconds(c->task->job->spec.command_timeout));
      continue;
    }
    if (now_ >= c->next_keepalive) {
      int next = 0;
      libssh2_keepalive_send(c->session, &next);
      c->next_keepalive = now_ + kFanoutKeepaliveInterval;
    }
  }
}

void FanoutEngine::DriveConn(Conn& c) {
  if (c.state == Conn::kConnecting) {
    int err = 0;
    socklen_t len = sizeof err;
    ::getsockopt(c.fd.get(), SOL_SOCKET, SO_ERROR, &err, &len);
    if (err == EINPROGRESS || err == EALREADY) {
      return;
    }
    if (err != 0) {
      FailConn(c, HostOutcome::kUnreachable, std::string("connect: ") + std::strerror(err));
      return;
    }
    c.session = libssh2_session_init_ex(nullptr, nullptr, nullptr, nullptr);
    if (!c.session) {
      FailConn(c, HostOutcome::kUnreachable, "libssh2: cannot make a session");
      return;
    }
    libssh2_session_set_blocking(c.session, 0);
    libssh2_session_method_pref(c.session, LIBSSH2_METHOD_KEX, kKexPrefs);
    libssh2_session_method_pref(c.session, LIBSSH2_METHOD_HOSTKEY, c.pinned.algorithm.c_str());
    for (int m : {LIBSSH2_METHOD_CRYPT_CS, LIBSSH2_METHOD_CRYPT_SC}) {
      libssh2_session_method_pref(c.session, m, kCipherPrefs);
    }
    for (int m : {LIBSSH2_METHOD_MAC_CS, LIBSSH2_METHOD_MAC_SC}) {
      libssh2_session_method_pref(c.session, m, kMacPrefs);
    }
    c.state = Conn::kHandshake;
  }
  if (c.state == Conn::kHandshake) {
    int rc = libssh2_session_handshake(c.session, c.fd.get());
    if (rc == LIBSSH2_ERROR_EAGAIN) {
      if (!c.banner_seen && libssh2_session_banner_get(c.session) != nullptr) {
        // The server answered: as with OpenSSH's ConnectTimeout, the rest of the login
        // gets longer, for servers busy with a copy to the whole fleet.
        c.banner_seen = true;
        c.deadline = now_ + std::max<milliseconds>(c.connect_timeout, kFanoutLoginTimeout);
      }
      return;
    }
    if (rc != 0) {
      FailConn(c, HostOutcome::kUnreachable, "SSH handshake: " + SessionError(c.session));
      return;
    }
    size_t len = 0;
    int type = 0;
    const char* key = libssh2_session_hostkey(c.session, &len, &type);
    if (!key || std::string_view(key, len) != c.pinned.blob) {
      FailConn(c, HostOutcome::kHostKeyMismatch,
               "the host key of " + c.host.address + " is not the one tpufleet pinned for "
                   "it: expected " + SshFingerprint(c.pinned.blob) + ", offered " +
                   (key ? SshFingerprint(std::string_view(key, len)) : "none") +
                   ". If the VM was recreated, `tpufleet up` pins the new key; otherwise "
                   "something may be intercepting the connection");
      return;
    }
    c.state = Conn::kAuth;
  }
  if (c.state == Conn::kAuth) {
    const Key& k = *c.key;
    int rc = libssh2_userauth_publickey_frommemory(
        c.session, c.host.user.data(), c.host.user.size(), k.public_line.data(),
        k.public_line.size(), k.private_pem.data(), k.private_pem.size(), nullptr);
    if (rc == LIBSSH2_ERROR_EAGAIN) {
      return;
    }
    if (rc == LIBSSH2_ERROR_AUTHENTICATION_FAILED || rc == LIBSSH2_ERROR_PUBLICKEY_UNVERIFIED) {
      FailConn(c, HostOutcome::kAuthFailed,
               "the worker refused tpufleet's key for user " + c.host.user);
      return;
    }
    if (rc != 0) {
      FailConn(c, HostOutcome::kUnreachable, "SSH login: " + SessionError(c.session));
      return;
    }
    libssh2_keepalive_config(c.session, 0,
                             static_cast<unsigned>(kFanoutKeepaliveInterval.count()));
    c.next_keepalive = now_ + kFanoutKeepaliveInterval;
    c.state = Conn::kReady;
  }
  if (c.state != Conn::kReady) {
    return;
  }
  c.unread = false;
  while (c.task && DriveTask(*c.task)) {
  }
  if (!c.task) {
    c.idle_since = now_;
  }
}

// Forgets finished jobs and closes failed connections.
void FanoutEngine::Reap() {
  for (auto it = jobs_.begin(); it != jobs_.end();) {
    it = it->second->finished == it->second->tasks.size() ? jobs_.erase(it) : std::next(it);
  }
  for (auto it = conns_.begin(); it != conns_.end();) {
    bool dead = it->second->state == Conn::kFailed && !it->second->task;
    it = dead ? conns_.erase(it) : std::next(it);
  }
}

size_t FanoutEngine::CloseIdle(milliseconds idle) {
  now_ = loop_.Now();
  for (auto it = conns_.begin(); it != conns_.end();) {
    const Conn& c = *it->second;
    bool close = !c.task && (c.state == Conn::kFailed || now_ - c.idle_since >= idle);
    it = close ? conns_.erase(it) : std::next(it);
  }
  return conns_.size();
}

}  // namespace tpufleet
