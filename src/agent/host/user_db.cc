#include "agent/host/user_db.h"

#include <algorithm>

#include "util/file.h"
#include "util/strings.h"

namespace tpufleet::agent::host {
namespace {

// The colon-separated fields of a database line, when it has exactly `count`.
bool Fields(std::string_view line, size_t count, std::vector<std::string>* out) {
  if (line.empty() || line[0] == '+' || line[0] == '-' || line[0] == '#') {
    return false;
  }
  *out = Split(line, ':');
  return out->size() == count && !(*out)[0].empty();
}

// A uid or gid field: a whole decimal number that fits.
template <typename Id>
bool ParseId(const std::string& text, Id* out) {
  long long v = 0;
  if (!ParseInt(text, &v) || v < 0 || v > 0xfffffffell) {
    return false;
  }
  *out = static_cast<Id>(v);
  return true;
}

}  // namespace

std::vector<PasswdEntry> ParsePasswd(std::string_view text) {
  std::vector<PasswdEntry> out;
  std::vector<std::string> f;
  for (const std::string& line : Split(text, '\n')) {
    // name:password:uid:gid:gecos:home:shell
    PasswdEntry e;
    if (Fields(line, 7, &f) && ParseId(f[2], &e.uid) && ParseId(f[3], &e.gid)) {
      e.name = f[0];
      e.home = f[5];
      e.shell = f[6];
      out.push_back(std::move(e));
    }
  }
  return out;
}

std::vector<GroupEntry> ParseGroup(std::string_view text) {
  std::vector<GroupEntry> out;
  std::vector<std::string> f;
  for (const std::string& line : Split(text, '\n')) {
    // name:password:gid:member,member
    GroupEntry e;
    if (Fields(line, 4, &f) && ParseId(f[2], &e.gid)) {
      e.name = f[0];
      for (std::string& m : Split(f[3], ',')) {
        if (!m.empty()) {
          e.members.push_back(std::move(m));
        }
      }
      out.push_back(std::move(e));
    }
  }
  return out;
}

Result<UserAccount> FindUser(std::string_view passwd_text, std::string_view group_text,
                             std::string_view name) {
  for (const PasswdEntry& p : ParsePasswd(passwd_text)) {
    if (p.name != name) {
      continue;
    }
    UserAccount u{p.name, p.uid, p.gid, p.home, p.shell.empty() ? "/bin/sh" : p.shell, {p.gid}};
    for (const GroupEntry& g : ParseGroup(group_text)) {
      bool member = std::find(g.members.begin(), g.members.end(), name) != g.members.end();
      if (member && std::find(u.groups.begin(), u.groups.end(), g.gid) == u.groups.end()) {
        u.groups.push_back(g.gid);
      }
    }
    return u;
  }
  return NotFoundError("no user named " + std::string(name) + " on this host");
}

Result<UserAccount> LookUpUser(const std::string& etc_dir, std::string_view name) {
  TPUFLEET_ASSIGN_OR_RETURN(std::string passwd, ReadFile(etc_dir + "/passwd", kMaxAccountFileBytes));
  Result<std::string> group = ReadFile(etc_dir + "/group", kMaxAccountFileBytes);
  return FindUser(passwd, group.ok() ? *group : std::string(), name);
}

std::string UserName(const std::vector<PasswdEntry>& entries, uid_t uid) {
  for (const PasswdEntry& e : entries) {
    if (e.uid == uid) {
      return e.name;
    }
  }
  return std::to_string(uid);
}

std::vector<PasswdEntry> ReadPasswd(const std::string& etc_dir) {
  Result<std::string> text = ReadFile(etc_dir + "/passwd", kMaxAccountFileBytes);
  return text.ok() ? ParsePasswd(*text) : std::vector<PasswdEntry>();
}

}  // namespace tpufleet::agent::host
