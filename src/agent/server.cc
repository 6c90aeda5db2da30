#include "agent/server.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <cstring>
#include <vector>

#include "agent/unix_socket.h"
#include "util/file.h"

namespace tpufleet::agent {

Server::Server(EventLoop& loop, JobTable& jobs, AgentIdentity identity, host::HostPaths host,
               sampler::Sampler* sampler, NoticeWatcher& notices,
               host::MetadataGuard* guard)
    : loop_(loop),
      jobs_(jobs),
      identity_(std::move(identity)),
      host_(std::move(host)),
      sampler_(sampler),
      notices_(notices),
      guard_(guard) {
  TellSampler();
  jobs_.SetListener([this](const std::string& id, JobTable::Change change) {
    OnJobChange(id, change);
  });
  notices_.SetListener([this](const api::AgentNotice& notice) { OnNotice(notice); });
}

Server::~Server() {
  jobs_.SetListener(nullptr);
  notices_.SetListener(nullptr);
  std::vector<uint64_t> keys;
  for (const auto& [key, conn] : conns_) {
    keys.push_back(key);
  }
  for (uint64_t key : keys) {
    Close(key);
  }
  if (listen_watch_ != 0) {
    loop_.Remove(listen_watch_);
  }
}

Status Server::Listen(const std::string& socket_path) {
  TPUFLEET_ASSIGN_OR_RETURN(sockaddr_un addr, UnixAddress(socket_path));
  listener_ = UniqueFd(socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (listener_.get() < 0) {
    return ErrnoStatus(socket_path, errno);
  }
  if (unlink(socket_path.c_str()) != 0 && errno != ENOENT) {
    return ErrnoStatus(socket_path, errno);
  }
  if (bind(listener_.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      chmod(socket_path.c_str(), 0666) != 0 || listen(listener_.get(), 64) != 0) {
    return ErrnoStatus(socket_path, errno);
  }
  listen_watch_ = loop_.Watch(listener_.get(), POLLIN, [this](short, Clock::MonoTime) { Accept(); });
  return Status::Ok();
}

void Server::Accept() {
  while (true) {
    UniqueFd fd(accept4(listener_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
    if (fd.get() < 0) {
      return;  // EAGAIN: all taken; anything else: the next turn tries again
    }
    ucred cred{};
    socklen_t len = sizeof cred;
    if (getsockopt(fd.get(), SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
      continue;
    }
    if (conns_.size() >= kMaxConnections) {
      std::string line = api::EndLine(UnavailableError(
                             "the agent serves " + std::to_string(kMaxConnections) +
                             " connections already; try again")) + "\n";
      (void)!send(fd.get(), line.data(), line.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      continue;
    }
    auto conn = std::make_unique<Conn>();
    conn->key = next_key_++;
    conn->fd = std::move(fd);
    conn->uid = cred.uid;
    uint64_t key = conn->key;
    conn->watch = loop_.Watch(conn->fd.get(), POLLIN, [this, key](short revents, Clock::MonoTime) {
      OnEvent(key, revents);
    });
    conns_[key] = std::move(conn);
  }
}

void Server::OnEvent(uint64_t key, short revents) {
  auto it = conns_.find(key);
  if (it == conns_.end()) {
    return;
  }
  Conn& c = *it->second;
  if ((revents & POLLOUT) != 0) {
    Flush(c);
    if (conns_.count(key) == 0) {
      return;
    }
  }
  if ((revents & (POLLIN | POLLHUP | POLLERR)) == 0) {
    return;
  }
  char buf[16384];
  ssize_t n = recv(c.fd.get(), buf, sizeof buf, 0);
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
    return;
  }
  if (n <= 0) {
    // The client went away (or half-closed after its request): a request still being
    // answered is dropped with it; its job goes on.
    if (c.request.has_value() || c.answered || c.in.empty()) {
      Close(key);
      return;
    }
    std::string line = std::move(c.in);  // a last line without its newline
    Handle(c, line);
    return;
  }
  if (c.request.has_value() || c.answered) {
    return;  // one request per connection: more is ignored
  }
  c.in.append(buf, static_cast<size_t>(n));
  size_t newline = c.in.find('\n');
  if (newline == std::string::npos) {
    if (c.in.size() > api::kMaxAgentLineBytes) {
      Finish(c, api::EndLine(InvalidArgumentError(
                    "request is over the limit of " + std::to_string(api::kMaxAgentLineBytes) +
                    " bytes")));
    }
    return;
  }
  std::string line = c.in.substr(0, newline);
  c.in.clear();
  Handle(c, line);
}

void Server::Queue(Conn& c, const std::string& line) {
  c.out += line;
  c.out += '\n';
  loop_.SetEvents(c.watch, POLLIN | POLLOUT);
}

void Server::Finish(Conn& c, const std::string& line) {
  Queue(c, line);
  c.answered = true;
  c.request.reset();
  if (c.timer != 0) {
    loop_.Remove(c.timer);
    c.timer = 0;
  }
}

void Server::Flush(Conn& c) {
  while (!c.out.empty()) {
    ssize_t n = send(c.fd.get(), c.out.data(), c.out.size(), MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EAGAIN || errno == EINTR) {
        return;
      }
      Close(c.key);
      return;
    }
    c.out.erase(0, static_cast<size_t>(n));
  }
  if (c.answered) {
    Close(c.key);
    return;
  }
  loop_.SetEvents(c.watch, POLLIN);
  if (c.request.has_value() && c.request->op == api::AgentOp::kJobLogs) {
    PumpLogs(c);
  }
}

void Server::Close(uint64_t key) {
  auto it = conns_.find(key);
  if (it == conns_.end()) {
    return;
  }
  Conn& c = *it->second;
  if (!c.followed.empty()) {
    jobs_.Follow(c.followed, false);
  }
  if (c.timer != 0) {
    loop_.Remove(c.timer);
  }
  loop_.Remove(c.watch);
  conns_.erase(it);
}

void Server::OnNotice(const api::AgentNotice& notice) {
  std::string line = api::NoticeLine(notice);
  std::vector<uint64_t> slow;
  for (auto& [key, conn] : conns_) {
    Conn& c = *conn;
    if (c.request.has_value() && c.request->op == api::AgentOp::kNoticeWatch) {
      Queue(c, line);
      if (c.out.size() > kMaxQueuedOutput) {
        slow.push_back(key);  // a watcher that reads nothing holds no more of serve
      }
    }
  }
  for (uint64_t key : slow) {
    Close(key);
  }
}

void Server::OnJobChange(const std::string& id, JobTable::Change change) {
  if (change == JobTable::Change::kState) {
    TellSampler();
  }
  std::vector<uint64_t> keys;
  for (const auto& [key, conn] : conns_) {
    keys.push_back(key);
  }
  for (uint64_t key : keys) {
    auto it = conns_.find(key);
    if (it == conns_.end() || !it->second->request.has_value()) {
      continue;
    }
    Conn& c = *it->second;
    const api::AgentRequest& r = *c.request;
    const JobEntry* job = jobs_.Find(id);
    if (job == nullptr) {
      continue;
    }
    bool ended = IsEnded(job->state.state);
    switch (r.op) {
      case api::AgentOp::kJobStart:
        if (r.job.id == id && job->state.state != JobState::kStarting) {
          Finish(c, api::AnswerLine({Status::Ok(), job->state}));
        }
        break;
      case api::AgentOp::kJobCancel:
        if (r.id == id && ended) {
          Finish(c, api::AnswerLine({Status::Ok(), job->state}));
        }
        break;
      case api::AgentOp::kJobLogs:
        if (r.id == id) {
          if (change == JobTable::Change::kState && r.follow) {
            Queue(c, api::StateLine(job->state));
          }
          PumpLogs(c);
        }
        break;
      case api::AgentOp::kJobWatch:
        if (change == JobTable::Change::kState &&
            std::find(r.ids.begin(), r.ids.end(), id) != r.ids.end()) {
          Queue(c, api::StateLine(job->state));
          bool all_ended = true;
          for (const api::JobOnWorker& s : States(r.ids)) {
            all_ended = all_ended && IsEnded(s.state);
          }
          if (all_ended) {
            Finish(c, api::EndLine(Status::Ok()));
          }
        }
        break;
      default:
        break;
    }
  }
}

}  // namespace tpufleet::agent
