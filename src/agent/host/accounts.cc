#include "agent/host/accounts.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <map>
#include <set>

#include "agent/host/authorized_keys.h"
#include "agent/host/sudo_rules.h"
#include "agent/host/system_programs.h"
#include "agent/host/user_db.h"
#include "core/fleet_spec.h"
#include "util/file.h"
#include "util/strings.h"
#include "util/subprocess.h"

namespace tpufleet::agent::host {
namespace {

// Where the agent puts the homes it makes, as /etc/passwd says it.
constexpr const char* kHomeParent = "/home";
// useradd, usermod and userdel take well under a second; a minute means something holds
// their lock.
constexpr std::chrono::seconds kUseraddTimeout{60};

using MadeAccounts = std::map<std::string, uid_t>;

MadeAccounts ReadMade(const HostPaths& paths) {
  MadeAccounts out;
  Result<std::string> text = ReadFile(paths.state + "/" + kMadeAccountsFile, kMaxAccountFileBytes);
  for (const std::string& line : text.ok() ? Split(*text, '\n') : std::vector<std::string>()) {
    std::vector<std::string> f = Split(line, ' ');
    long long uid = 0;
    if (f.size() == 2 && CheckLoginName(f[0]).ok() && ParseInt(f[1], &uid) && uid > 0) {
      out[f[0]] = static_cast<uid_t>(uid);
    }
  }
  return out;
}

Status WriteMade(const HostPaths& paths, const MadeAccounts& made) {
  TPUFLEET_TRY(MakeDirs(paths.state, 0700));
  std::string text;
  for (const auto& [name, uid] : made) {
    text += name + " " + std::to_string(uid) + "\n";
  }
  return WriteFileAtomic(paths.state + "/" + kMadeAccountsFile, text, 0600);
}

const PasswdEntry* Find(const std::vector<PasswdEntry>& passwd, const std::string& name) {
  for (const PasswdEntry& e : passwd) {
    if (e.name == name) {
      return &e;
    }
  }
  return nullptr;
}

bool Ours(const PasswdEntry& e, const MadeAccounts& made) {
  auto it = made.find(e.name);
  return it != made.end() && it->second == e.uid &&
         e.home == std::string(kHomeParent) + "/" + e.name;
}

Status Validate(const AccountSpec& u, const std::set<std::string>& seen) {
  TPUFLEET_TRY(CheckUserName(u.name));
  if (seen.count(u.name) != 0) {
    return InvalidArgumentError(u.name + " is listed twice");
  }
  for (const std::string& k : u.keys) {
    TPUFLEET_TRY(CheckSshPublicKey(k).WithContext("a key of " + u.name));
  }
  return Status::Ok();
}

// Runs one of the account programs (`program`, "" when it is not installed) on `name`
// with `args` before the name, as root of `paths` (--prefix below a test's root).
Status RunAccountProgram(const HostPaths& paths, const std::string& program, const char* what,
                         std::vector<std::string> args, const std::string& name) {
  if (program.empty()) {
    return FailedPreconditionError(std::string(what) + " is not installed; cannot change " + name);
  }
  std::vector<std::string> argv = {program};
  if (paths.root != "/") {
    argv.insert(argv.end(), {"--prefix", paths.root});
  }
  argv.insert(argv.end(), args.begin(), args.end());
  argv.insert(argv.end(), {"--", name});
  TPUFLEET_ASSIGN_OR_RETURN(ProgramResult r,
                            RunSubprocess(argv, "", kUseraddTimeout, SystemProgramOptions()));
  if (r.exit_code != 0) {
    return InternalError(std::string(what) + " " + name + " failed (exit " +
                         std::to_string(r.exit_code) + "): " + std::string(Trim(r.output)));
  }
  return Status::Ok();
}

Status CreateAccount(const HostPaths& paths, const std::string& useradd, const std::string& name) {
  return RunAccountProgram(paths, useradd, "useradd",
                           {"-m", "-d", std::string(kHomeParent) + "/" + name, "-s", "/bin/bash",
                            "-p", "*", "-l"},
                           name);
}

// Whether /etc/shadow says `name` is locked ("!" before its password) or has an expiry
// date: what a removal did (usermod -L -e 1), undone when the account is listed again.
bool LockedOrExpiring(const HostPaths& paths, const std::string& name) {
  Result<std::string> text = ReadFile(paths.etc + "/shadow", kMaxAccountFileBytes);
  for (const std::string& line : text.ok() ? Split(*text, '\n') : std::vector<std::string>()) {
    std::vector<std::string> f = Split(line, ':');
    if (f.size() >= 8 && f[0] == name) {
      return (!f[1].empty() && f[1][0] == '!') || !f[7].empty();
    }
  }
  return false;
}

// The owner whose keys are set: the home as this process sees it, made again (as
// useradd -m would) when someone removed it.
Result<KeyOwner> KeyOwnerOf(const HostPaths& paths, const PasswdEntry& e) {
  KeyOwner o{e.name, e.uid, e.gid, paths.home + "/" + e.name};
  struct stat st;
  if (::lstat(o.home.c_str(), &st) != 0 && errno == ENOENT) {
    if (::mkdir(o.home.c_str(), 0750) != 0 || ::chown(o.home.c_str(), e.uid, e.gid) != 0) {
      return ErrnoStatus(o.home, errno);
    }
  }
  return o;
}

// The tools, each found where the caller left it empty.
AccountTools Found(const AccountTools& given) {
  AccountTools t = given;
  for (auto [path, name] : {std::pair{&t.useradd, "useradd"}, {&t.visudo, "visudo"},
                            {&t.usermod, "usermod"}, {&t.userdel, "userdel"}}) {
    if (path->empty()) {
      *path = FindSystemProgram(name);
    }
  }
  return t;
}

// What a removal does before the sudo rules are installed: the checks, then the keys
// taken away and the account locked. Its `!ALL` rule is the caller's to add. OK with
// `*e` null when there is no account; set to the entry to go on with.
Status RevokeAccess(const HostPaths& paths, const AccountTools& tools, const AccountRemoval& x,
                    const std::set<std::string>& listed, const MadeAccounts& made,
                    const std::vector<PasswdEntry>& passwd, const PasswdEntry** e) {
  TPUFLEET_TRY(CheckUserName(x.name));
  if (listed.count(x.name) != 0) {
    return InvalidArgumentError(x.name + " is both listed and removed");
  }
  *e = Find(passwd, x.name);
  if (*e == nullptr) {
    return Status::Ok();
  }
  if ((*e)->uid == 0 || !Ours(**e, made)) {
    return PermissionDeniedError("the account " + x.name + " (uid " + std::to_string((*e)->uid) +
                                 ") was not made by tpufleet-agent: it is left as it is");
  }
  TPUFLEET_ASSIGN_OR_RETURN(KeyOwner owner, KeyOwnerOf(paths, **e));
  TPUFLEET_TRY(SetAuthorizedKeys(owner, {}).status());
  return RunAccountProgram(paths, tools.usermod, "usermod", {"-L", "-e", "1"}, x.name);
}

}  // namespace

std::vector<AccountResult> ApplyAccounts(const HostPaths& paths,
                                         const std::vector<AccountSpec>& users,
                                         const std::vector<AccountRemoval>& remove,
                                         const AccountTools& given) {
  const AccountTools tools = Found(given);
  std::vector<AccountResult> results;
  std::vector<SudoRule> rules;
  std::set<std::string> listed;
  std::set<std::string> removed;
  MadeAccounts made = ReadMade(paths);
  for (const AccountRemoval& x : remove) {
    removed.insert(x.name);
  }

  for (const AccountSpec& u : users) {
    AccountResult& r = results.emplace_back(AccountResult{u.name, "refused", "", ""});
    if (Status s = Validate(u, listed); !s.ok()) {
      r.error = s.message();
      continue;
    }
    listed.insert(u.name);
    rules.push_back({u.name, u.sudo});
    std::vector<PasswdEntry> passwd = ReadPasswd(paths.etc);
    const PasswdEntry* e = Find(passwd, u.name);
    bool created = false;
    if (e == nullptr) {
      Status s = CreateAccount(paths, tools.useradd, u.name);
      passwd = ReadPasswd(paths.etc);
      e = Find(passwd, u.name);
      if (s.ok() && e == nullptr) {
        s = InternalError("useradd made no account " + u.name);
      }
      if (s.ok()) {
        made[u.name] = e->uid;
        s = WriteMade(paths, made);
      }
      if (!s.ok()) {
        r.error = s.message();
        continue;
      }
      created = true;
    }
    if (!Ours(*e, made)) {
      r.action = "sudo_only";
      r.detail = "the account " + u.name + " (uid " + std::to_string(e->uid) + ", home " +
                 e->home + ") was not made by tpufleet-agent: its keys are left as they are, "
                 "only its sudo rule is set";
      continue;
    }
    // Removed once, listed again: it may log in again.
    Status unlocked = LockedOrExpiring(paths, u.name)
                          ? RunAccountProgram(paths, tools.usermod, "usermod",
                                              {"-U", "-e", ""}, u.name)
                          : Status::Ok();
    Result<KeyOwner> owner = KeyOwnerOf(paths, *e);
    Result<bool> changed = !unlocked.ok() ? unlocked
                           : owner.ok()   ? SetAuthorizedKeys(*owner, u.keys)
                                          : owner.status();
    r.action = created ? "created" : changed.ok() && *changed ? "updated" : "unchanged";
    if (!changed.ok()) {
      r.error = changed.status().message();
    }
  }

  std::vector<PasswdEntry> passwd = ReadPasswd(paths.etc);
  for (auto it = made.begin(); it != made.end();) {
    const PasswdEntry* e = Find(passwd, it->first);
    if (e == nullptr) {
      it = made.erase(it);  // removed by hand: forgotten
      continue;
    }
    if (listed.count(it->first) == 0 && removed.count(it->first) == 0 && Ours(*e, made)) {
      rules.push_back({e->name, false});
      Result<KeyOwner> owner = KeyOwnerOf(paths, *e);
      Result<bool> changed = owner.ok() ? SetAuthorizedKeys(*owner, {}) : owner.status();
      if (!changed.ok() || *changed) {
        results.push_back({e->name, "removed", changed.ok() ? "" : changed.status().message(), ""});
      }
    }
    ++it;
  }

  // Removals, first part: no way in (keys, lock) and `!ALL`, before any process is
  // stopped, so that nothing it starts meanwhile can log in or sudo.
  const size_t first_removal = results.size();
  std::vector<const PasswdEntry*> revoked;
  for (const AccountRemoval& x : remove) {
    const PasswdEntry* e = nullptr;
    Status s = RevokeAccess(paths, tools, x, listed, made, passwd, &e);
    AccountResult& r = results.emplace_back(AccountResult{x.name, "refused", s.message(), ""});
    if (s.ok()) {
      r.action = x.purge ? "purged" : "revoked";
      r.detail = e == nullptr ? "no such account here" : "";
    }
    revoked.push_back(s.ok() ? e : nullptr);
    if (s.ok() && e != nullptr) {
      rules.push_back({x.name, false});
    } else if (!s.ok() && e != nullptr && Ours(*e, made)) {
      rules.push_back({x.name, false});  // half-revoked still gets no sudo
    }
  }
  Status saved = WriteMade(paths, made);
  Status sudo = InstallSudoers(paths.etc + "/sudoers.d", SudoersText(rules), tools.visudo, paths.state);
  for (AccountResult& r : results) {
    for (const Status& s : {saved, sudo}) {
      if (!s.ok() && r.action != "refused") {
        r.error += (r.error.empty() ? "" : "; ") + s.message();
      }
    }
  }

  // Second part: its jobs and processes stopped, then (purge) the account and home
  // removed.
  for (size_t i = 0; i < remove.size(); ++i) {
    AccountResult& r = results[first_removal + i];
    const PasswdEntry* e = revoked[i];
    if (e == nullptr) {
      continue;
    }
    if (std::string failed = tools.stop_jobs ? tools.stop_jobs(e->name) : ""; !failed.empty()) {
      r.error += (r.error.empty() ? "" : "; ") + failed;
    }
    Result<int> stopped = StopProcessesOf(paths, e->uid, tools.stop_grace);
    Status s = stopped.status();
    if (s.ok() && *stopped > 0) {
      r.detail = std::to_string(*stopped) + (*stopped == 1 ? " process" : " processes") + " stopped";
    }
    if (s.ok() && remove[i].purge) {
      s = RunAccountProgram(paths, tools.userdel, "userdel", {"-r"}, e->name);
      if (s.ok()) {
        made.erase(e->name);
        s = WriteMade(paths, made);
      }
    }
    if (!s.ok()) {
      r.error += (r.error.empty() ? "" : "; ") + s.message();
    }
  }
  return results;
}

}  // namespace tpufleet::agent::host
