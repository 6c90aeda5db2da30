#include "agent/host/authorized_keys.h"

#include <fcntl.h>
#include <grp.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "util/file.h"
#include "util/strings.h"
#include "util/unique_fd.h"

namespace tpufleet::agent::host {
namespace {

// The child's exit codes: what it did, or the step that failed.
enum ChildExit : int {
  kUnchanged = 0,
  kChanged = 1,
  kDropFailed = 10,
  kHomeUnusable,
  kSshDirUnusable,
  kReadFailed,
  kWriteFailed,
};

const char* StepName(int code) {
  switch (code) {
    case kDropFailed: return "dropping to the user";
    case kHomeUnusable: return "opening the home (missing, a symlink, or not the user's)";
    case kSshDirUnusable: return "opening ~/.ssh (a symlink, or not a directory)";
    case kReadFailed: return "reading authorized_keys (a symlink, not a file, or too large)";
    case kWriteFailed: return "writing authorized_keys";
    default: return "the child process";
  }
}

// The child's work, as the user; returns its exit code.
int WriteAsUser(const KeyOwner& owner, const std::vector<std::string>& keys) {
  if (::setgroups(0, nullptr) != 0 || ::setgid(owner.gid) != 0 || ::setuid(owner.uid) != 0) {
    return kDropFailed;
  }
  ::umask(077);
  UniqueFd home(::open(owner.home.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  struct stat st;
  if (home.get() < 0 || ::fstat(home.get(), &st) != 0 || st.st_uid != owner.uid) {
    return kHomeUnusable;
  }
  if (::mkdirat(home.get(), ".ssh", 0700) != 0 && errno != EEXIST) {
    return kSshDirUnusable;
  }
  UniqueFd ssh(::openat(home.get(), ".ssh", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (ssh.get() < 0) {
    return kSshDirUnusable;
  }
  std::string old;
  bool existed = false;
  {
    UniqueFd in(::openat(ssh.get(), "authorized_keys", O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
    if (in.get() < 0 && errno != ENOENT) {
      return kReadFailed;
    }
    existed = in.get() >= 0;
    if (existed && (::fstat(in.get(), &st) != 0 || !S_ISREG(st.st_mode))) {
      return kReadFailed;
    }
    char buf[8192];
    ssize_t n;
    while (existed && (n = ::read(in.get(), buf, sizeof buf)) > 0) {
      old.append(buf, static_cast<size_t>(n));
      if (old.size() > kMaxAuthorizedKeysBytes) {
        return kReadFailed;
      }
    }
  }
  const std::string updated = MergeAuthorizedKeys(old, keys);
  if (existed && updated == old) {
    return kUnchanged;
  }
  // Through the directory already opened (the magic link names it, not a path that
  // could change since): a temporary file beside it, O_EXCL|O_NOFOLLOW, then rename.
  const std::string path = "/proc/self/fd/" + std::to_string(ssh.get()) + "/authorized_keys";
  if (!WriteFileAtomic(path, updated, 0600).ok()) {
    return kWriteFailed;
  }
  return kChanged;
}

}  // namespace

std::string MergeAuthorizedKeys(const std::string& old, const std::vector<std::string>& keys) {
  std::vector<std::string> lines = Split(old, '\n');
  if (!lines.empty() && lines.back().empty()) {
    lines.pop_back();  // the final newline
  }
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i] == kKeysBlockBegin) {
      size_t end = i + 1;
      while (end < lines.size() && lines[end] != kKeysBlockEnd) {
        ++end;
      }
      if (end < lines.size()) {
        i = end;  // the whole block, its END line too
      }
      continue;
    }
    out += lines[i] + "\n";
  }
  if (!keys.empty()) {
    out += std::string(kKeysBlockBegin) + "\n";
    for (const std::string& k : keys) {
      out += k + "\n";
    }
    out += std::string(kKeysBlockEnd) + "\n";
  }
  return out;
}

Result<bool> SetAuthorizedKeys(const KeyOwner& owner, const std::vector<std::string>& keys) {
  pid_t pid = ::fork();
  if (pid < 0) {
    return InternalError(std::string("fork: ") + std::strerror(errno));
  }
  if (pid == 0) {
    ::_exit(WriteAsUser(owner, keys));
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (code == kUnchanged || code == kChanged) {
    return code == kChanged;
  }
  return InternalError("could not set the keys of " + owner.name + " in " + owner.home +
                       "/.ssh/authorized_keys: " + StepName(code) + " failed");
}

}  // namespace tpufleet::agent::host
