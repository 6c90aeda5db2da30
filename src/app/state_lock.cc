#include "app/state_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <utility>

#include "store/postgres_lock.h"
#include "util/file.h"
#include "util/strings.h"

namespace tpufleet::app {
namespace {

// The holder's line is "PID COMMAND"; a longer file is not ours to show.
constexpr size_t kMaxHolderLine = 128;

// What a lock file says of its holder: {pid, command}, or nullopt when it says nothing
// readable (a holder from before the files named it, or one that has not written yet).
std::optional<std::pair<std::string, std::string>> HolderOf(int fd) {
  char buf[kMaxHolderLine];
  ssize_t n = ::pread(fd, buf, sizeof buf, 0);
  if (n <= 0) {
    return std::nullopt;
  }
  std::vector<std::string> words = Split(Trim(std::string_view(buf, static_cast<size_t>(n))), ' ');
  if (words.size() != 2 || words[0].empty() ||
      words[0].find_first_not_of("0123456789") != std::string::npos ||
      words[1].find_first_not_of("abcdefghijklmnopqrstuvwxyz-") != std::string::npos) {
    return std::nullopt;
  }
  return std::make_pair(words[0], words[1]);
}

// Takes `path` for `command`, or gives the holder's line (nullopt: unknown) in `holder`.
Result<UniqueFd> TryLockFile(const std::string& path, const std::string& command,
                             std::optional<std::pair<std::string, std::string>>* holder) {
  UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (fd.get() < 0) {
    return PermissionDeniedError("cannot open " + path + ": " + std::strerror(errno));
  }
  if (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
    *holder = HolderOf(fd.get());
    return FailedPreconditionError("held");
  }
  std::string line = std::to_string(::getpid()) + " " + command + "\n";
  if (::ftruncate(fd.get(), 0) != 0 ||
      ::pwrite(fd.get(), line.data(), line.size(), 0) != static_cast<ssize_t>(line.size())) {
    return ErrnoStatus(path, errno);
  }
  return fd;
}

}  // namespace

Result<UniqueFd> LockStateDir(const std::string& state_dir, const std::string& command) {
  std::string path = state_dir + "/lock";
  std::optional<std::pair<std::string, std::string>> holder;
  Result<UniqueFd> fd = TryLockFile(path, command, &holder);
  if (fd.ok() || fd.status().code() != StatusCode::kFailedPrecondition) {
    return fd;
  }
  std::string who = holder ? "`tpufleet " + holder->second + "` (pid " + holder->first + ")"
                           : "another tpufleet command";
  return FailedPreconditionError(who + " is changing the fleet (it holds " + path +
                                 "); wait for it to finish");
}

Result<StateHold> LockState(const std::string& state_dir, const std::string& command,
                            const std::string& postgres_url) {
  TPUFLEET_ASSIGN_OR_RETURN(UniqueFd file, LockStateDir(state_dir, command));
  if (postgres_url.empty()) {
    return StateHold(std::make_shared<UniqueFd>(std::move(file)));
  }
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  TPUFLEET_ASSIGN_OR_RETURN(
      std::unique_ptr<PostgresStateLock> store,
      PostgresStateLock::Take(postgres_url, "tpufleet " + command + " (pid " +
                                                std::to_string(::getpid()) + " on " + host + ")"));
  return StateHold(std::make_shared<std::pair<UniqueFd, std::unique_ptr<PostgresStateLock>>>(
      std::move(file), std::move(store)));
}

Result<UniqueFd> LockServe(const std::string& state_dir) {
  std::string path = state_dir + "/serve.lock";
  std::optional<std::pair<std::string, std::string>> holder;
  Result<UniqueFd> fd = TryLockFile(path, "serve", &holder);
  if (fd.ok() || fd.status().code() != StatusCode::kFailedPrecondition) {
    return fd;
  }
  std::string who = holder ? " (pid " + holder->first + ")" : "";
  return FailedPreconditionError("tpufleet serve" + who + " is already keeping this state (" +
                                 path + ")");
}

}  // namespace tpufleet::app
