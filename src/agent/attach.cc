#include "agent/attach.h"

#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "agent/flags.h"
#include "agent/unix_socket.h"
#include "api/agent.h"
#include "core/job.h"
#include "util/file.h"
#include "util/strings.h"

namespace tpufleet::agent {
std::string AttachSocketPath(const std::string& attach_dir, const std::string& id) {
  return attach_dir + "/" + id + ".sock";
}

Result<std::unique_ptr<AttachPoint>> AttachPoint::Open(EventLoop& loop, std::string path,
                                                       int master, uid_t uid, gid_t gid) {
  TPUFLEET_ASSIGN_OR_RETURN(sockaddr_un addr, UnixAddress(path));
  std::unique_ptr<AttachPoint> point(new AttachPoint(loop, std::move(path), master));
  point->listener_ = UniqueFd(socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (point->listener_.get() < 0) {
    return ErrnoStatus(point->path_, errno);
  }
  unlink(point->path_.c_str());
  // Bound with no permission for anyone, then given to the job's user: no moment where
  // another user could connect.
  mode_t old = umask(0777);
  int bound = bind(point->listener_.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  umask(old);
  if (bound != 0 || chown(point->path_.c_str(), uid, gid) != 0 ||
      chmod(point->path_.c_str(), 0600) != 0 || listen(point->listener_.get(), 4) != 0) {
    return ErrnoStatus(point->path_, errno);
  }
  AttachPoint* p = point.get();
  point->listen_watch_ = loop.Watch(point->listener_.get(), POLLIN,
                                    [p](short, Clock::MonoTime) { p->Accept(); });
  return point;
}

AttachPoint::~AttachPoint() {
  Detach();
  if (listen_watch_ != 0) {
    loop_.Remove(listen_watch_);
  }
  unlink(path_.c_str());
}

void AttachPoint::Accept() {
  UniqueFd fd(accept4(listener_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
  if (fd.get() < 0) {
    return;
  }
  Detach();  // the new client takes the terminal over
  client_ = std::move(fd);
  header_read_ = false;
  header_.clear();
  client_watch_ = loop_.Watch(client_.get(), POLLIN,
                              [this](short revents, Clock::MonoTime) { OnClient(revents); });
}

void AttachPoint::Detach() {
  if (client_watch_ != 0) {
    loop_.Remove(client_watch_);
    client_watch_ = 0;
  }
  client_.Reset();
  backlog_.clear();
}

void AttachPoint::OnClient(short revents) {
  if ((revents & POLLOUT) != 0) {
    ssize_t n = send(client_.get(), backlog_.data(), backlog_.size(), MSG_NOSIGNAL);
    if (n > 0) {
      backlog_.erase(0, static_cast<size_t>(n));
    }
    if (backlog_.empty()) {
      loop_.SetEvents(client_watch_, POLLIN);
    }
  }
  if ((revents & (POLLIN | POLLHUP | POLLERR)) == 0) {
    return;
  }
  char buf[4096];
  ssize_t n = recv(client_.get(), buf, sizeof buf, 0);
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
    return;
  }
  if (n <= 0) {
    Detach();
    return;
  }
  std::string_view input(buf, static_cast<size_t>(n));
  if (!header_read_) {
    header_.append(input);
    size_t newline = header_.find('\n');
    if (newline == std::string::npos) {
      if (header_.size() > 64) {
        Detach();
      }
      return;
    }
    header_read_ = true;
    std::vector<std::string> size = Split(Trim(header_.substr(0, newline)), ' ');
    long long rows = 0;
    long long cols = 0;
    if (size.size() == 2 && ParseInt(size[0], &rows) && ParseInt(size[1], &cols) && rows > 0 &&
        cols > 0 && rows < 10000 && cols < 10000) {
      winsize ws{};
      ws.ws_row = static_cast<unsigned short>(rows);
      ws.ws_col = static_cast<unsigned short>(cols);
      ioctl(master_, TIOCSWINSZ, &ws);
    }
    std::string rest = header_.substr(newline + 1);
    (void)!WriteAll(master_, rest);
    return;
  }
  (void)!WriteAll(master_, input);
}

void AttachPoint::Output(std::string_view data) {
  if (client_.get() < 0 || !header_read_) {
    return;
  }
  backlog_.append(data);
  if (backlog_.size() > kMaxAttachBacklog) {
    Detach();
    return;
  }
  ssize_t n = send(client_.get(), backlog_.data(), backlog_.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  if (n > 0) {
    backlog_.erase(0, static_cast<size_t>(n));
  }
  loop_.SetEvents(client_watch_, backlog_.empty() ? POLLIN : POLLIN | POLLOUT);
}

int AttachMain(const std::vector<std::string>& args) {
  Result<Flags> flags = ParseFlags(args, {"attach-dir"});
  if (!flags.ok() || flags->positional.size() != 1 || !CheckJobId(flags->positional[0]).ok()) {
    return Complain(kExitUsage, "usage: tpufleet-agent attach JOB_ID [--attach-dir DIR]");
  }
  const std::string& id = flags->positional[0];
  std::string dir = flags->Get("attach-dir", DirOf(std::string(api::kAgentSocketPath)) + "/attach");
  Result<sockaddr_un> addr = UnixAddress(AttachSocketPath(dir, id));
  UniqueFd fd(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!addr.ok() || fd.get() < 0 ||
      connect(fd.get(), reinterpret_cast<const sockaddr*>(&*addr), sizeof *addr) != 0) {
    return Complain(kExitFailed, "job " + id +
                                     " has no terminal to attach to on this worker (it is not "
                                     "running, was started without one, or is not yours)");
  }
  winsize ws{};
  bool tty = isatty(STDIN_FILENO) == 1;
  if (tty) {
    ioctl(STDIN_FILENO, TIOCGWINSZ, &ws);
  }
  termios saved{};
  if (tty && tcgetattr(STDIN_FILENO, &saved) == 0) {
    termios raw = saved;
    cfmakeraw(&raw);
    tcsetattr(STDIN_FILENO, TCSANOW, &raw);
  }
  Complain(kExitOk, "attached to job " + id + "; Ctrl-] detaches\r");
  std::string header = std::to_string(ws.ws_row) + " " + std::to_string(ws.ws_col) + "\n";
  bool open = WriteAll(fd.get(), header);
  std::string ending = "detached from job " + id + "; it goes on\r";
  while (open) {
    pollfd fds[2] = {{STDIN_FILENO, POLLIN, 0}, {fd.get(), POLLIN, 0}};
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) {
        continue;
      }
      break;
    }
    char buf[4096];
    if ((fds[1].revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
      ssize_t n = read(fd.get(), buf, sizeof buf);
      if (n <= 0) {
        ending = "job " + id + " ended (or another attach took its terminal)\r";
        break;
      }
      open = WriteAll(STDOUT_FILENO, {buf, static_cast<size_t>(n)});
    }
    if ((fds[0].revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
      ssize_t n = read(STDIN_FILENO, buf, sizeof buf);
      if (n <= 0) {
        break;
      }
      std::string_view input(buf, static_cast<size_t>(n));
      size_t detach = input.find(kDetachKey);
      open = WriteAll(fd.get(), input.substr(0, detach));
      if (detach != std::string_view::npos) {
        break;
      }
    }
  }
  if (tty) {
    tcsetattr(STDIN_FILENO, TCSANOW, &saved);
  }
  Complain(kExitOk, ending);
  return kExitOk;
}

}  // namespace tpufleet::agent
