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
#include <optional>
#include <set>

#include "emulator/hosts/system_programs.h"
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
    // /home is root's (the worker's own); from the user's home down, nothing is followed.
    int parent = ::open(kHomeParent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int home = parent < 0 ? -1
                          : ::openat(parent, a.name.c_str(),
                                     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (home < 0 || ::fstat(home, &st) != 0 || st.st_uid != a.uid) {
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

// The users the agent created: name -> uid.
std::map<std::string, uid_t> ReadCreated() {
  std::map<std::string, uid_t> out;
  Result<std::string> text = ReadFile(kCreatedUsersFile);
  if (!text.ok()) {
    return out;
  }
  for (const std::string& line : Split(*text, '\n')) {
    std::vector<std::string> f = Split(line, ' ');
    long long uid = 0;
    if (f.size() == 2 && IsValidUserName(f[0]) && ParseInt(f[1], &uid) && uid >= kFirstUserUid) {
      out[f[0]] = static_cast<uid_t>(uid);
    }
  }
  return out;
}

Status WriteCreated(const std::map<std::string, uid_t>& users) {
  ::mkdir("/etc/tpufleet", 0700);
  std::string text;
  for (const auto& [name, uid] : users) {
    text += name + " " + std::to_string(uid) + "\n";
  }
  return WriteFileAtomic(kCreatedUsersFile, text, 0600);
}

std::string HomeOf(const std::string& user) {
  return std::string(kHomeParent) + "/" + user;
}

// The fields of a colon-separated account line ("" lines and "+" NIS lines: none).
std::vector<std::string> Fields(const std::string& line) {
  if (line.empty() || line[0] == '+' || line[0] == '-' || line[0] == '#') {
    return {};
  }
  return Split(line, ':');
}

// A comma-separated member list without the names in `drop`.
std::string WithoutMembers(const std::string& list, const std::set<std::string>& drop) {
  std::vector<std::string> kept;
  for (std::string& m : Split(list, ',')) {
    if (!m.empty() && drop.count(m) == 0) {
      kept.push_back(std::move(m));
    }
  }
  return Join(kept, ",");
}

// `text`'s lines, each replaced by what `edit` makes of it (nullopt drops it).
template <typename Edit>
std::string EditLines(const std::string& text, Edit edit) {
  std::string out;
  std::vector<std::string> lines = Split(text, '\n');
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i + 1 == lines.size() && lines[i].empty()) {
      break;  // the final newline
    }
    if (std::optional<std::string> l = edit(lines[i])) {
      out += *l + "\n";
    }
  }
  return out;
}

// The text of `path`; "" when there is no such file.
Result<std::string> ReadIfPresent(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 && errno == ENOENT) {
    return std::string();
  }
  return ReadFile(path);
}

// Replaces the account file `path` with `text`, keeping its mode and owner.
Status RewriteAccountFile(const std::string& path, const std::string& text) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    return Status::Ok();  // no such database here (gshadow is optional)
  }
  TPUFLEET_TRY(WriteFileAtomic(path, text, static_cast<int>(st.st_mode & 07777)));
  if (::chown(path.c_str(), st.st_uid, st.st_gid) != 0) {
    return InternalError(Errno("chown " + path));
  }
  return Status::Ok();
}

}  // namespace

std::string MetadataSshKeys(const std::map<std::string, std::string>& instance,
                            const std::map<std::string, std::string>& project) {
  auto get = [](const std::map<std::string, std::string>& attrs, const char* key) {
    auto it = attrs.find(key);
    return it == attrs.end() ? std::string() : it->second;
  };
  std::string block = get(instance, "block-project-ssh-keys");
  bool blocked = block == "1" || block == "t" || block == "T" || block == "TRUE" ||
                 block == "true" || block == "True" || !get(instance, "sshKeys").empty();
  std::string out;
  auto add = [&out](const std::string& keys) {
    if (!keys.empty()) {
      out += (out.empty() ? "" : "\n") + keys;
    }
  };
  add(get(instance, "ssh-keys"));
  add(get(instance, "sshKeys"));
  if (!blocked) {
    add(get(project, "ssh-keys"));
    add(get(project, "sshKeys"));
  }
  return out;
}

AccountFiles WithoutMachineLogins(const AccountFiles& files, const std::set<std::string>& keep) {
  std::set<std::string> drop;
  AccountFiles out;
  out.passwd = EditLines(files.passwd, [&](const std::string& line) -> std::optional<std::string> {
    std::vector<std::string> f = Fields(line);
    long long uid = 0;
    if (f.size() >= 3 && ParseInt(f[2], &uid) && uid >= kFirstUserUid && uid != kOverflowId &&
        keep.count(f[0]) == 0) {
      drop.insert(f[0]);
      return std::nullopt;
    }
    return line;
  });
  // A password hash of the machine's (root's, say) must not be readable on the worker:
  // "*" (no password) or "!" (locked) instead, as on a fresh VM.
  auto no_hash = [](std::string* field) {
    if (!field->empty() && (*field)[0] == '!') {
      *field = "!";
    } else if (*field != "!" && *field != "*") {
      *field = "*";
    }
  };
  out.shadow = EditLines(files.shadow, [&](const std::string& line) -> std::optional<std::string> {
    std::vector<std::string> f = Fields(line);
    if (f.size() < 2) {
      return line;
    }
    if (drop.count(f[0]) != 0) {
      return std::nullopt;
    }
    if (keep.count(f[0]) == 0) {
      no_hash(&f[1]);
    }
    return Join(f, ":");
  });
  std::set<std::string> dropped_groups;
  // group: name:password:gid:members; gshadow: name:password:admins:members.
  auto edit_group = [&](bool gshadow) {
    return [&, gshadow](const std::string& line) -> std::optional<std::string> {
      std::vector<std::string> f = Fields(line);
      if (f.size() != 4) {
        return line;
      }
      long long gid = 0;
      bool private_group = gshadow ? dropped_groups.count(f[0]) != 0
                                   : drop.count(f[0]) != 0 && ParseInt(f[2], &gid) &&
                                         gid >= kFirstUserUid && gid != kOverflowId;
      if (private_group) {
        dropped_groups.insert(f[0]);
        return std::nullopt;
      }
      if (gshadow) {
        no_hash(&f[1]);
        f[2] = WithoutMembers(f[2], drop);
      }
      f[3] = WithoutMembers(f[3], drop);
      return Join(f, ":");
    };
  };
  out.group = EditLines(files.group, edit_group(false));
  out.gshadow = EditLines(files.gshadow, edit_group(true));
  return out;
}

Status GuestAgent::ForgetMachineLogins() {
  struct stat st;
  if (logins_forgotten_ || ::stat(kMachineLoginsForgotten, &st) == 0) {
    logins_forgotten_ = true;
    return Status::Ok();
  }
  AccountFiles in;
  TPUFLEET_ASSIGN_OR_RETURN(in.passwd, ReadFile("/etc/passwd"));
  TPUFLEET_ASSIGN_OR_RETURN(in.group, ReadFile("/etc/group"));
  TPUFLEET_ASSIGN_OR_RETURN(in.shadow, ReadIfPresent("/etc/shadow"));
  TPUFLEET_ASSIGN_OR_RETURN(in.gshadow, ReadIfPresent("/etc/gshadow"));
  std::set<std::string> keep;
  for (const auto& [name, uid] : ReadCreated()) {
    keep.insert(name);
  }
  AccountFiles out = WithoutMachineLogins(in, keep);
  // Written even when unchanged: the worker's copy no longer follows the machine's.
  TPUFLEET_TRY(RewriteAccountFile("/etc/passwd", out.passwd));
  TPUFLEET_TRY(RewriteAccountFile("/etc/shadow", out.shadow));
  TPUFLEET_TRY(RewriteAccountFile("/etc/group", out.group));
  TPUFLEET_TRY(RewriteAccountFile("/etc/gshadow", out.gshadow));
  ::mkdir("/etc/tpufleet", 0700);
  TPUFLEET_TRY(WriteFileAtomic(kMachineLoginsForgotten,
                               "the machine's login accounts were removed from this worker\n",
                               0600));
  logins_forgotten_ = true;
  return Status::Ok();
}

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
  TPUFLEET_TRY(ForgetMachineLogins());
  TPUFLEET_TRY(EnsureSudoersGroup());
  std::map<std::string, std::vector<std::string>> wanted;
  for (const SshKeyEntry& e : entries) {
    std::vector<std::string>& keys = wanted[e.user];
    if (std::find(keys.begin(), keys.end(), e.key) == keys.end()) {
      keys.push_back(e.key);
    }
  }
  std::map<std::string, uid_t> created = ReadCreated();
  Status first;
  auto note = [&](const Status& s) {
    if (!s.ok()) {
      Log(LogLevel::kWarn, "guest agent: " + s.ToString());
      if (first.ok()) {
        first = s;
      }
    }
  };
  // The account `user` as the agent made it: NotFound when there is none, and
  // FailedPrecondition when it exists but is not (or no longer) what the agent made.
  auto ours = [&](const std::string& user, Account* a) -> Status {
    if (!LookUp(user, a)) {
      return NotFoundError("no account " + user);
    }
    auto it = created.find(user);
    if (it == created.end()) {
      return FailedPreconditionError(
          "ssh-keys names " + user + " (uid " + std::to_string(a->uid) +
          "), an account the guest agent did not create; it gets no keys");
    }
    if (it->second != a->uid || a->home != HomeOf(user)) {
      return FailedPreconditionError("the account " + user + " is no longer the one the guest "
                                     "agent created (uid " + std::to_string(a->uid) + ", home " +
                                     a->home + "); it gets no keys");
    }
    return Status::Ok();
  };

  for (const auto& [user, keys] : wanted) {
    Account a;
    Status s = ours(user, &a);
    if (s.code() == StatusCode::kNotFound) {
      created.erase(user);  // made once, removed since by hand: made again
      s = Run("useradd", {"-m", "-d", HomeOf(user), "-s", "/bin/bash", "-p", "*", "-l", "-G",
                          kSudoersGroup, "--", user});
      if (s.ok() && !LookUp(user, &a)) {
        s = InternalError("useradd made no user " + user);
      }
      if (s.ok()) {
        created[user] = a.uid;
        s = WriteCreated(created);
      }
    }
    if (!s.ok()) {
      note(s);
      continue;
    }
    struct stat st;
    if (::lstat(a.home.c_str(), &st) != 0) {
      // Removed by hand: made again, as useradd -m would.
      if (::mkdir(a.home.c_str(), 0750) != 0 || ::chown(a.home.c_str(), a.uid, a.gid) != 0) {
        note(InternalError(Errno("cannot create " + a.home)));
        continue;
      }
    }
    if (!InGroup(user, kSudoersGroup)) {
      note(Run("usermod", {"-a", "-G", kSudoersGroup, "--", user}));
    }
    note(WriteAuthorizedKeys(a, keys));
  }

  for (const auto& [user, uid] : created) {
    Account a;
    if (wanted.count(user) != 0 || !ours(user, &a).ok()) {
      continue;
    }
    struct stat st;
    if (::lstat(a.home.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
      note(WriteAuthorizedKeys(a, {}));
    }
    if (InGroup(user, kSudoersGroup)) {
      note(Run("gpasswd", {"-d", user, kSudoersGroup}));
    }
  }
  return first;
}

}  // namespace tpufleet::emulator::hosts
