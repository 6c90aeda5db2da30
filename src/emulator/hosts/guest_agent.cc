#include "emulator/hosts/guest_agent.h"

#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <set>

#include "emulator/hosts/subprocess.h"
#include "util/file.h"
#include "util/log.h"
#include "util/strings.h"

namespace tpufleet::emulator::hosts {
namespace {

constexpr const char* kAddedByGoogle = "# Added by Google";

struct Account {
  std::string name;
  uid_t uid = 0;
  gid_t gid = 0;
  std::string home;
};

bool LookUp(const std::string& name, Account* out) {
  struct passwd pw;
  struct passwd* found = nullptr;
  char buf[16384];
  if (::getpwnam_r(name.c_str(), &pw, buf, sizeof buf, &found) != 0 || found == nullptr) {
    return false;
  }
  *out = {pw.pw_name, pw.pw_uid, pw.pw_gid, pw.pw_dir ? pw.pw_dir : ""};
  return true;
}

bool GroupExists(const char* group) {
  struct group gr;
  struct group* found = nullptr;
  char buf[65536];
  return ::getgrnam_r(group, &gr, buf, sizeof buf, &found) == 0 && found != nullptr;
}

bool InGroup(const std::string& user, const char* group) {
  struct group gr;
  struct group* found = nullptr;
  std::vector<char> buf(1 << 20);  // a group line lists every member
  if (::getgrnam_r(group, &gr, buf.data(), buf.size(), &found) != 0 || found == nullptr) {
    return false;
  }
  for (char** m = gr.gr_mem; m != nullptr && *m != nullptr; ++m) {
    if (user == *m) {
      return true;
    }
  }
  return false;
}

Status Run(const std::string& program, std::vector<std::string> args) {
  TPUFLEET_ASSIGN_OR_RETURN(std::string path, FindProgram(program, "passwd"));
  args.insert(args.begin(), path);
  return RunChecked(args);
}

// The new authorized_keys: the user's own lines kept, ours replaced by `keys`.
std::string MergeAuthorizedKeys(const std::string& old, const std::vector<std::string>& keys) {
  std::string out;
  std::vector<std::string> lines = Split(old, '\n');
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i] == kAddedByGoogle) {
      ++i;  // and the key line after it
      continue;
    }
    if (i + 1 == lines.size() && lines[i].empty()) {
      break;  // the final newline
    }
    out += lines[i] + "\n";
  }
  for (const std::string& k : keys) {
    out += std::string(kAddedByGoogle) + "\n" + k + "\n";
  }
  return out;
}

// Writes ~/.ssh/authorized_keys from a child running as the user. The child uses only
// this single-threaded process's copy of memory, so allocating there is safe.
Status WriteAuthorizedKeys(const Account& a, const std::vector<std::string>& keys) {
  pid_t pid = ::fork();
  if (pid < 0) {
    return InternalError(std::string("fork: ") + std::strerror(errno));
  }
  if (pid == 0) {
    if (::setgroups(0, nullptr) != 0 || ::setgid(a.gid) != 0 || ::setuid(a.uid) != 0) {
      ::_exit(2);
    }
    ::umask(077);
    int home = ::open(a.home.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (home < 0) {
      ::_exit(3);
    }
    if (::mkdirat(home, ".ssh", 0700) != 0 && errno != EEXIST) {
      ::_exit(4);
    }
    int ssh = ::openat(home, ".ssh", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (ssh < 0) {
      ::_exit(5);
    }
    std::string old;
    int in = ::openat(ssh, "authorized_keys", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (in >= 0) {
      char buf[8192];
      ssize_t n;
      while ((n = ::read(in, buf, sizeof buf)) > 0) {
        old.append(buf, static_cast<size_t>(n));
      }
      ::close(in);
    }
    std::string updated = MergeAuthorizedKeys(old, keys);
    if (updated == old && in >= 0) {
      ::_exit(0);
    }
    ::unlinkat(ssh, "authorized_keys.tpufleet", 0);
    int out = ::openat(ssh, "authorized_keys.tpufleet",
                       O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (out < 0) {
      ::_exit(6);
    }
    size_t done = 0;
    while (done < updated.size()) {
      ssize_t n = ::write(out, updated.data() + done, updated.size() - done);
      if (n <= 0) {
        ::_exit(7);
      }
      done += static_cast<size_t>(n);
    }
    if (::close(out) != 0 ||
        ::renameat(ssh, "authorized_keys.tpufleet", ssh, "authorized_keys") != 0) {
      ::_exit(8);
    }
    ::_exit(0);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return InternalError("could not write " + a.home + "/.ssh/authorized_keys as " + a.name +
                         " (step " + std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) +
                         ")");
  }
  return Status::Ok();
}

std::set<std::string> ReadManaged() {
  std::set<std::string> out;
  Result<std::string> text = ReadFile(kManagedUsersFile);
  if (!text.ok()) {
    return out;
  }
  for (const std::string& line : Split(*text, '\n')) {
    if (IsValidUserName(line)) {
      out.insert(line);
    }
  }
  return out;
}

Status WriteManaged(const std::set<std::string>& users) {
  ::mkdir("/etc/tpufleet", 0700);
  std::string text;
  for (const std::string& u : users) {
    text += u + "\n";
  }
  return WriteFileAtomic(kManagedUsersFile, text, 0600);
}

}  // namespace

Status GuestAgent::EnsureSudoersGroup() {
  if (group_ready_) {
    return Status::Ok();
  }
  if (!GroupExists(kSudoersGroup)) {
    TPUFLEET_TRY(Run("groupadd", {"--", kSudoersGroup}));
  }
  // Only meaningful when sudo is there; without it the group is harmless.
  if (FindProgram("sudo").ok()) {
    std::string want = std::string("%") + kSudoersGroup + " ALL=(ALL:ALL) NOPASSWD:ALL\n";
    Result<std::string> have = ReadFile(kSudoersFile);
    if (!have.ok() || *have != want) {
      ::mkdir("/etc/sudoers.d", 0755);
      TPUFLEET_TRY(WriteFileAtomic(kSudoersFile, want, 0440));
    }
  }
  group_ready_ = true;
  return Status::Ok();
}

Status GuestAgent::Sync(const std::vector<SshKeyEntry>& entries) {
  TPUFLEET_TRY(EnsureSudoersGroup());
  std::map<std::string, std::vector<std::string>> wanted;
  for (const SshKeyEntry& e : entries) {
    std::vector<std::string>& keys = wanted[e.user];
    if (std::find(keys.begin(), keys.end(), e.key) == keys.end()) {
      keys.push_back(e.key);
    }
  }
  std::set<std::string> managed = ReadManaged();
  Status first;
  auto note = [&](const Status& s) {
    if (!s.ok()) {
      Log(LogLevel::kWarn, "guest agent: " + s.ToString());
      if (first.ok()) {
        first = s;
      }
    }
  };

  for (const auto& [user, keys] : wanted) {
    Account a;
    if (!LookUp(user, &a)) {
      Status s = Run("useradd",
                     {"-m", "-s", "/bin/bash", "-p", "*", "-l", "-G", kSudoersGroup, "--", user});
      if (!s.ok() || !LookUp(user, &a)) {
        note(s.ok() ? InternalError("useradd made no user " + user) : s);
        continue;
      }
    } else if (a.uid < kFirstUserUid) {
      note(InvalidArgumentError("ssh-keys names the system account " + user + "; ignored"));
      continue;
    }
    managed.insert(user);
    struct stat st;
    if (::stat(a.home.c_str(), &st) != 0) {
      // An account this worker's /etc inherited from the machine, with no home here yet.
      if (::mkdir(a.home.c_str(), 0750) != 0 || ::chown(a.home.c_str(), a.uid, a.gid) != 0) {
        note(InternalError("cannot create " + a.home + ": " + std::strerror(errno)));
        continue;
      }
    }
    if (!InGroup(user, kSudoersGroup)) {
      note(Run("usermod", {"-a", "-G", kSudoersGroup, "--", user}));
    }
    note(WriteAuthorizedKeys(a, keys));
  }

  for (const std::string& user : managed) {
    if (wanted.count(user) != 0) {
      continue;
    }
    Account a;
    if (!LookUp(user, &a) || a.uid < kFirstUserUid) {
      continue;
    }
    struct stat st;
    if (::stat(a.home.c_str(), &st) == 0) {
      note(WriteAuthorizedKeys(a, {}));
    }
    if (InGroup(user, kSudoersGroup)) {
      note(Run("gpasswd", {"-d", user, kSudoersGroup}));
    }
  }
  note(WriteManaged(managed));
  return first;
}

}  // namespace tpufleet::emulator::hosts
