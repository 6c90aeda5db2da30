// Runs a piece of a test as the unprivileged user `nobody`, the way the security review
// attacked tpufleet (`runuser -u nobody`): a forked child drops to nobody's uid and gid,
// runs the function and exits with what it returns. The parent waits for it.
//
// Only root can drop to another user; NobodySkipReason() says why a test must be
// skipped where that is impossible, so the skip is counted with its reason:
//
//   if (auto why = NobodySkipReason()) GTEST_SKIP() << *why;
//   EXPECT_EQ(RunAsNobody([&] { return ::access(path, R_OK) == 0 ? 1 : 0; }), 0);
//
// Thread-safety: fork() in a threaded test copies only the calling thread; the function
// must use only async-signal-safe calls or plain computation and system calls.
#pragma once

#include <grp.h>
#include <pwd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include <optional>
#include <string>

namespace tpufleet {

struct NobodyIds {
  uid_t uid;
  gid_t gid;
};

/// nobody's uid and gid, or nullopt when the passwd database has no such user.
inline std::optional<NobodyIds> LookUpNobody() {
  const passwd* pw = ::getpwnam("nobody");
  if (pw == nullptr) {
    return std::nullopt;
  }
  return NobodyIds{pw->pw_uid, pw->pw_gid};
}

/// Why a test cannot run code as nobody here, or nullopt when it can.
inline std::optional<std::string> NobodySkipReason() {
  if (::geteuid() != 0) {
    return "needs root, to run the attacker's part as the user nobody";
  }
  if (!LookUpNobody()) {
    return "this machine has no user named nobody";
  }
  return std::nullopt;
}

/// Runs `fn` in a child process as nobody and returns its exit code (fn's return value),
/// or -1 when the child could not drop privileges or died of a signal.
/// REQUIRES: NobodySkipReason() is nullopt.
template <typename Fn>
int RunAsNobody(Fn fn) {
  const std::optional<NobodyIds> ids = LookUpNobody();
  if (!ids) {
    return -1;
  }
  const pid_t pid = ::fork();
  if (pid < 0) {
    return -1;
  }
  if (pid == 0) {
    if (::setgroups(0, nullptr) != 0 || ::setgid(ids->gid) != 0 || ::setuid(ids->uid) != 0) {
      ::_exit(255);
    }
    ::_exit(fn() & 0xff);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) {
      return -1;
    }
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) == 255) {
    return -1;
  }
  return WEXITSTATUS(status);
}

}  // namespace tpufleet
