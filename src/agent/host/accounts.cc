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
// useradd takes well under a second; a minute means something holds its lock.
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

Status CreateAccount(const HostPaths& paths, const std::string& useradd, const std::string& name) {
  if (useradd.empty()) {
    return FailedPreconditionError("useradd is not installed; cannot create " + name);
  }
  std::vector<std::string> argv = {useradd};
  if (paths.root != "/") {
    argv.insert(argv.end(), {"--prefix", paths.root});
  }
  argv.insert(argv.end(), {"-m", "-d", std::string(kHomeParent) + "/" + name, "-s", "/bin/bash",
                           "-p", "*", "-l", "--", name});
  TPUFLEET_ASSIGN_OR_RETURN(
      ProgramResult r,
      RunSubprocess(argv, "", kUseraddTimeout,
                    SystemProgramOptions()));
  if (r.exit_code != 0) {
    return InternalError("useradd " + name + " failed (exit " + std::to_string(r.exit_code) +
                         "): " + std::string(Trim(r.output)));
  }
  return Status::Ok();
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

}  // namespace

std::vector<AccountResult> ApplyAccounts(const HostPaths& paths,
                                         const std::vector<AccountSpec>& users,
                                         const AccountTools& tools) {
  const std::string useradd = tools.useradd.empty() ? FindSystemProgram("useradd") : tools.useradd;
  const std::string visudo = tools.visudo.empty() ? FindSystemProgram("visudo") : tools.visudo;
  std::vector<AccountResult> results;
  std::vector<SudoRule> rules;
  std::set<std::string> listed;
  MadeAccounts made = ReadMade(paths);

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
      Status s = CreateAccount(paths, useradd, u.name);
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
    Result<KeyOwner> owner = KeyOwnerOf(paths, *e);
    Result<bool> changed = owner.ok() ? SetAuthorizedKeys(*owner, u.keys) : owner.status();
    r.action = created ? "created" : changed.ok() && *changed ? "updated" : "unchanged";
    if (!changed.ok()) {
      r.error = changed.status().message();
    }
  }

  const std::vector<PasswdEntry> passwd = ReadPasswd(paths.etc);
  for (auto it = made.begin(); it != made.end();) {
    const PasswdEntry* e = Find(passwd, it->first);
    if (e == nullptr) {
      it = made.erase(it);  // removed by hand: forgotten
      continue;
    }
    if (listed.count(it->first) == 0 && Ours(*e, made)) {
      rules.push_back({e->name, false});
      Result<KeyOwner> owner = KeyOwnerOf(paths, *e);
      Result<bool> changed = owner.ok() ? SetAuthorizedKeys(*owner, {}) : owner.status();
      if (!changed.ok() || *changed) {
        results.push_back({e->name, "removed", changed.ok() ? "" : changed.status().message(), ""});
      }
    }
    ++it;
  }
  Status saved = WriteMade(paths, made);
  Status sudo = InstallSudoers(paths.etc + "/sudoers.d", SudoersText(rules), visudo, paths.state);
  for (AccountResult& r : results) {
    for (const Status& s : {saved, sudo}) {
      if (!s.ok() && r.action != "refused") {
        r.error += (r.error.empty() ? "" : "; ") + s.message();
      }
    }
  }
  return results;
}

}  // namespace tpufleet::agent::host
