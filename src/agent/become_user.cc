#include "agent/become_user.h"

#include <grp.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace tpufleet::agent {

Status BecomeUser(const host::UserAccount& user) {
  if (geteuid() == user.uid && user.uid != 0) {
    return Status::Ok();
  }
  if (setgroups(user.groups.size(), user.groups.data()) != 0) {
    return PermissionDeniedError(std::string("setgroups: ") + std::strerror(errno));
  }
  if (setgid(user.gid) != 0) {
    return PermissionDeniedError(std::string("setgid: ") + std::strerror(errno));
  }
  if (setuid(user.uid) != 0) {
    return PermissionDeniedError(std::string("setuid: ") + std::strerror(errno));
  }
  // A process that could become root again after setuid would be no drop at all.
  if (user.uid != 0 && (setuid(0) == 0 || geteuid() != user.uid)) {
    return PermissionDeniedError("setuid: could still become root after dropping privileges");
  }
  return Status::Ok();
}

std::vector<std::string> LoginEnvironment(const host::UserAccount& user) {
  return {"HOME=" + user.home, "USER=" + user.name, "LOGNAME=" + user.name,
          "SHELL=" + user.shell, std::string("PATH=") + kJobPath};
}

std::string ResolveWorkdir(const host::UserAccount& user, const std::string& workdir) {
  if (workdir.empty()) {
    return user.home;
  }
  if (workdir[0] == '/') {
    return workdir;
  }
  return user.home + "/" + workdir;
}

Status CheckUserCanEnter(const host::UserAccount& user, const std::string& dir) {
  pid_t pid = fork();
  if (pid < 0) {
    return InternalError(std::string("fork: ") + std::strerror(errno));
  }
  if (pid == 0) {
    // The child reports the errno of what failed as its exit status (0: it could enter).
    if (!BecomeUser(user).ok()) {
      _exit(EPERM);
    }
    _exit(chdir(dir.c_str()) == 0 ? 0 : (errno & 0xff));
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status)) {
    return InternalError("checking " + dir + " as " + user.name + ": the check did not finish");
  }
  int err = WEXITSTATUS(status);
  if (err == 0) {
    return Status::Ok();
  }
  std::string why = std::strerror(err);
  if (err == EACCES || err == EPERM) {
    why += " for " + user.name;
  }
  return InvalidArgumentError("workdir " + dir + ": " + why);
}

}  // namespace tpufleet::agent
