#include "emulator/locator.h"

#include <dirent.h>
#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "util/file.h"
#include "util/strings.h"
#include "util/unique_fd.h"

namespace tpufleet::emulator {
namespace {

// Marks a directory as an emulator state dir. `start` writes it into a new or empty
// directory only, and `stop` deletes only a directory that has it.
constexpr const char* kStateDirMarker = ".tpufleet-emulator";
// The state dir's mode: only its owner (and root) may look inside.
constexpr mode_t kStateDirMode = 0700;

std::string Get(const std::map<std::string, std::string>& env, const char* k) {
  auto it = env.find(k);
  return it == env.end() ? std::string() : it->second;
}

// The passwd entry of `uid`: {name, home}, or nullopt.
std::optional<std::pair<std::string, std::string>> LookUpUser(uid_t uid) {
  std::vector<char> buf(4096);
  passwd pw{};
  passwd* found = nullptr;
  if (::getpwuid_r(uid, &pw, buf.data(), buf.size(), &found) == 0 && found != nullptr) {
    return std::make_pair(std::string(found->pw_name), std::string(found->pw_dir));
  }
  return std::nullopt;
}

std::string UserName(uid_t uid) {
  auto user = LookUpUser(uid);
  return user ? user->first + " (uid " + std::to_string(uid) + ")" : "uid " + std::to_string(uid);
}

bool Trusted(uid_t file_owner, const EmulatorOwner& owner) {
  return file_owner == owner.uid || file_owner == ::geteuid() || file_owner == 0;
}

// Why the object `path` with `st` cannot be trusted, or OK. `private_bits` are the mode
// bits no one but the owner may have.
Status CheckStat(const std::string& path, const struct stat& st, const EmulatorOwner& owner,
                 mode_t private_bits, const std::string& what) {
  if (!Trusted(st.st_uid, owner)) {
    return PermissionDeniedError(
        what + " " + path + " belongs to " + UserName(st.st_uid) + ", not to " +
        UserName(owner.uid) + "; the emulator never uses one someone else made. Remove it, "
        "or give --state-dir (or TPUFLEET_EMULATOR_DIR) a path of your own");
  }
  if ((st.st_mode & private_bits) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return PermissionDeniedError(what + " " + path + " has mode " + mode +
                                 ": others may change it, so the emulator will not trust it");
  }
  return Status::Ok();
}

// Creates the missing directories above `dir`, each mode 0700; those in the owner's
// home are the owner's, so that `sudo` leaves nothing there the user cannot use (and
// nothing of the user's in root's home when sudo set HOME to it).
Status MakeParents(const std::string& dir, const EmulatorOwner& owner) {
  auto user = LookUpUser(owner.uid);
  std::string home = user && user->second.size() > 1 ? user->second + "/" : "";
  std::vector<std::string> missing;
  std::string p = dir;
  while (true) {
    size_t slash = p.find_last_of('/');
    if (slash == std::string::npos || slash == 0) {
      break;
    }
    p = p.substr(0, slash);
    struct stat st {};
    if (::stat(p.c_str(), &st) == 0) {
      break;
    }
    missing.push_back(p);
  }
  for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
    if (::mkdir(it->c_str(), kStateDirMode) != 0 && errno != EEXIST) {
      return ErrnoStatus("cannot create " + *it, errno);
    }
    bool in_home = !home.empty() && it->rfind(home, 0) == 0;
    if (::geteuid() == 0 && in_home && ::lchown(it->c_str(), owner.uid, owner.gid) != 0) {
      return ErrnoStatus("chown " + *it, errno);
    }
  }
  return Status::Ok();
}

Result<bool> IsEmptyDir(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) {
    return ErrnoStatus(dir, errno);
  }
  bool empty = true;
  while (dirent* e = ::readdir(d)) {
    if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) {
      empty = false;
      break;
    }
  }
  ::closedir(d);
  return empty;
}

}  // namespace

std::string EmulatorStateDir(const std::optional<std::string>& flag,
                             const std::map<std::string, std::string>& env) {
  if (flag) {
    return *flag;
  }
  if (!Get(env, "TPUFLEET_EMULATOR_DIR").empty()) {
    return Get(env, "TPUFLEET_EMULATOR_DIR");
  }
  std::string base = !Get(env, "XDG_STATE_HOME").empty() ? Get(env, "XDG_STATE_HOME")
                                                         : Get(env, "HOME") + "/.local/state";
  return base + "/tpufleet/emulator";
}

EmulatorOwner EmulatorOwnerOf(const std::map<std::string, std::string>& env) {
  EmulatorOwner o{::geteuid(), ::getegid()};
  long long uid = 0;
  long long gid = 0;
  if (o.uid == 0 && ParseInt(Get(env, "SUDO_UID"), &uid) && ParseInt(Get(env, "SUDO_GID"), &gid) &&
      uid >= 0 && gid >= 0) {
    o.uid = static_cast<uid_t>(uid);
    o.gid = static_cast<gid_t>(gid);
  }
  return o;
}

Status CheckEmulatorStateDir(const std::string& dir,
                             const std::map<std::string, std::string>& env) {
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) {
    return errno == ENOENT ? Status::Ok() : ErrnoStatus(dir, errno);
  }
  if (S_ISLNK(st.st_mode)) {
    return PermissionDeniedError("the emulator's state dir " + dir +
                                 " is a symbolic link; give the directory itself");
  }
  if (!S_ISDIR(st.st_mode)) {
    return InvalidArgumentError("the emulator's state dir " + dir + " is not a directory");
  }
  return CheckStat(dir, st, EmulatorOwnerOf(env), S_IWGRP | S_IWOTH, "the emulator's state dir");
}

Status ClaimEmulatorStateDir(const std::string& dir,
                             const std::map<std::string, std::string>& env) {
  EmulatorOwner owner = EmulatorOwnerOf(env);
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) {
    if (errno != ENOENT) {
      return ErrnoStatus(dir, errno);
    }
    TPUFLEET_TRY(MakeParents(dir, owner));
    if (::mkdir(dir.c_str(), kStateDirMode) != 0) {
      return PermissionDeniedError("cannot create the state dir " + dir + ": " +
                                   std::strerror(errno));
    }
  } else {
    TPUFLEET_TRY(CheckEmulatorStateDir(dir, env));
    if (!IsEmulatorStateDir(dir)) {
      TPUFLEET_ASSIGN_OR_RETURN(bool empty, IsEmptyDir(dir));
      if (!empty) {
        return InvalidArgumentError(dir + " is not empty and is not an emulator state dir; give "
                                    "--state-dir a new or empty directory");
      }
    }
  }
  // Trusted (ours, the owner's or root's): make it the owner's alone.
  if (::geteuid() == 0 && ::lchown(dir.c_str(), owner.uid, owner.gid) != 0) {
    return ErrnoStatus("chown " + dir, errno);
  }
  if (::chmod(dir.c_str(), kStateDirMode) != 0) {
    return ErrnoStatus("chmod " + dir, errno);
  }
  if (IsEmulatorStateDir(dir)) {
    return Status::Ok();
  }
  return WriteFileAtomic(dir + "/" + kStateDirMarker, "tpufleet emulator state dir\n", 0600);
}

bool IsEmulatorStateDir(const std::string& dir) {
  struct stat st {};
  return ::lstat((dir + "/" + kStateDirMarker).c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

bool IsEmulatorDaemon(pid_t pid) {
  Result<std::string> cmdline = ReadFile("/proc/" + std::to_string(pid) + "/cmdline");
  if (!cmdline.ok()) {
    return false;
  }
  std::vector<std::string> argv = Split(*cmdline, '\0');
  return argv.size() >= 2 && argv[0] == kEmulatorDaemonName && argv[1] == "serve";
}

std::optional<EmulatorDaemon> RunningEmulator(const std::string& dir) {
  Result<std::string> text = ReadFile(dir + "/daemon.json");
  if (!text.ok()) {
    return std::nullopt;
  }
  nlohmann::json j = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j["pid"].is_number_integer() || !j["endpoint"].is_string()) {
    return std::nullopt;
  }
  EmulatorDaemon d{j["pid"].get<pid_t>(), j["endpoint"].get<std::string>(),
                   dir + "/" + kEmulatorTokenFile};
  if (!IsEmulatorDaemon(d.pid)) {
    return std::nullopt;
  }
  return d;
}

Result<std::string> ReadEmulatorToken(const std::string& token_file,
                                      const std::map<std::string, std::string>& env) {
  std::string dir = token_file.substr(0, token_file.find_last_of('/'));
  TPUFLEET_TRY(CheckEmulatorStateDir(dir, env));
  UniqueFd fd(::open(token_file.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (fd.get() < 0) {
    return ErrnoStatus("cannot read the emulator's token " + token_file, errno);
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) {
    return ErrnoStatus(token_file, errno);
  }
  if (!S_ISREG(st.st_mode)) {
    return PermissionDeniedError("the emulator's token " + token_file + " is not a regular file");
  }
  TPUFLEET_TRY(CheckStat(token_file, st, EmulatorOwnerOf(env), 077, "the emulator's token"));
  char buf[256];
  ssize_t n = ::read(fd.get(), buf, sizeof buf);
  if (n < 0) {
    return ErrnoStatus(token_file, errno);
  }
  std::string token(Trim(std::string_view(buf, static_cast<size_t>(n))));
  if (token.rfind(kEmulatorTokenPrefix, 0) != 0) {
    return InvalidArgumentError("the emulator's token " + token_file +
                                " does not hold an emulator token; restart the emulator");
  }
  return token;
}

}  // namespace tpufleet::emulator
