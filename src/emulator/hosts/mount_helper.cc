// The mount helper's side of worker_disks.h: the program util-linux's mount(8) and
// umount(8) run as /sbin/mount.ext4 or /sbin/umount.ext4 on a worker. It resolves the
// paths as its caller and hands the init descriptors, never paths.
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "emulator/hosts/worker_disks.h"
#include "util/strings.h"

namespace tpufleet::emulator::hosts {
namespace {

// util-linux's exit statuses (mount(8)): usage, system error, mount failure.
constexpr int kExitUsage = 1;
constexpr int kExitFailure = 32;
// How long the init may take to answer: an ext4 mount replays its journal first.
constexpr int kReplyTimeoutSeconds = 120;

std::string Base(const char* path) {
  std::string p = path == nullptr ? "" : path;
  size_t slash = p.rfind('/');
  return slash == std::string::npos ? p : p.substr(slash + 1);
}

int Fail(const std::string& verb, const std::string& what, const std::string& message) {
  std::string line = verb + ": " + what + ": " + message + "\n";
  [[maybe_unused]] ssize_t n = ::write(2, line.data(), line.size());
  return kExitFailure;
}

// Sends `request` with `fds` to the init and returns its answer: "OK\n…" or "ERR\n…".
std::string Ask(const std::string& request, const std::vector<int>& fds) {
  UniqueFd sock(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, kMountSocket, sizeof addr.sun_path - 1);
  if (sock.get() < 0 ||
      ::connect(sock.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    return std::string("ERR\n") +
           (errno == EACCES ? "must be superuser to use mount." : std::strerror(errno));
  }
  timeval tv{kReplyTimeoutSeconds, 0};
  ::setsockopt(sock.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  char control[CMSG_SPACE(2 * sizeof(int))] = {};
  iovec iov{const_cast<char*>(request.data()), request.size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = CMSG_SPACE(fds.size() * sizeof(int));
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(fds.size() * sizeof(int));
  std::memcpy(CMSG_DATA(c), fds.data(), fds.size() * sizeof(int));
  if (::sendmsg(sock.get(), &msg, MSG_NOSIGNAL) < 0) {
    return std::string("ERR\n") + std::strerror(errno);
  }
  char buf[4096];
  ssize_t n = ::recv(sock.get(), buf, sizeof buf, 0);
  if (n <= 0) {
    return "ERR\nthe worker's init did not answer";
  }
  return std::string(buf, static_cast<size_t>(n));
}

// Prints the answer's message (a warning after OK) and returns the exit status.
int Report(const std::string& verb, const std::string& what, const std::string& answer) {
  size_t nl = answer.find('\n');
  std::string message = nl == std::string::npos ? "" : answer.substr(nl + 1);
  if (StartsWith(answer, "OK\n")) {
    if (!message.empty()) {
      Fail(verb, what, message);
    }
    return 0;
  }
  return Fail(verb, what, message.empty() ? "failed." : message);
}

int Mount(const std::string& type, int argc, char** argv) {
  std::vector<std::string> positional;
  std::string options;
  bool fake = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if ((a == "-o" || a == "-t" || a == "-N") && i + 1 < argc) {
      std::string value = argv[++i];
      if (a == "-o") {
        options = value;
      } else if (a == "-N") {
        return Fail("mount", value, "mount namespaces are not available here.");
      } else if (value != type) {
        return Fail("mount", value, "unknown filesystem type.");
      }
    } else if (a == "-f") {
      fake = true;
    } else if (a == "-s" || a == "-n" || a == "-v") {
      continue;
    } else if (!a.empty() && a[0] != '-') {
      positional.push_back(a);
    } else {
      Fail("mount." + type, a, "unknown option.");
      return kExitUsage;
    }
  }
  if (positional.size() != 2) {
    Fail("mount." + type, "usage", "mount." + type + " SOURCE TARGET [-sfnv] [-o OPTIONS]");
    return kExitUsage;
  }
  const std::string& source = positional[0];
  const std::string& target = positional[1];
  UniqueFd src(::open(source.c_str(), O_PATH | O_CLOEXEC));
  if (src.get() < 0) {
    return Fail("mount", target, "special device " + source + " does not exist.");
  }
  UniqueFd dst(::open(target.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (dst.get() < 0) {
    return Fail(
        "mount", target,
        errno == ENOTDIR ? "mount point is not a directory." : "mount point does not exist.");
  }
  if (fake) {
    return 0;
  }
  return Report("mount", target, Ask("mount\n" + type + "\n" + options, {src.get(), dst.get()}));
}

int Umount(int argc, char** argv) {
  std::string target;
  bool lazy = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if ((a == "-t" || a == "-N") && i + 1 < argc) {
      if (a == "-N") {
        return Fail("umount", argv[i + 1], "mount namespaces are not available here.");
      }
      ++i;
    } else if (a == "-l") {
      lazy = true;
    } else if (a == "-f" || a == "-n" || a == "-r" || a == "-v") {
      continue;
    } else if (!a.empty() && a[0] != '-' && target.empty()) {
      target = a;
    } else {
      Fail("umount", a, "unknown option.");
      return kExitUsage;
    }
  }
  while (target.size() > 1 && target.back() == '/') {
    target.pop_back();
  }
  size_t slash = target.rfind('/');
  if (target.empty() || target == "/" || slash == std::string::npos) {
    Fail("umount", target, "give the mount point's absolute path.");
    return kExitUsage;
  }
  std::string parent = slash == 0 ? "/" : target.substr(0, slash);
  UniqueFd dir(::open(parent.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (dir.get() < 0) {
    return Fail("umount", target, "no mount point specified.");
  }
  std::string request = "umount\n" + target.substr(slash + 1) + "\n" + (lazy ? "lazy" : "");
  return Report("umount", target, Ask(request, {dir.get()}));
}

}  // namespace

bool IsMountHelper(const char* argv0) {
  std::string base = Base(argv0);
  for (const char* type : kMountTypes) {
    if (base == std::string("mount.") + type || base == std::string("umount.") + type) {
      return true;
    }
  }
  return false;
}

int MountHelperMain(int argc, char** argv) {
  std::string base = Base(argv[0]);
  if (StartsWith(base, "umount.")) {
    return Umount(argc, argv);
  }
  return Mount(base.substr(std::string("mount.").size()), argc, argv);
}

}  // namespace tpufleet::emulator::hosts
