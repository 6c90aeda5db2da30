// The account databases of a host, read from its /etc/passwd and /etc/group directly.
//
// The agent is a static binary, and glibc's getpwnam, getgrnam and initgroups load NSS
// modules with dlopen, which a static binary cannot do safely (and the shared libraries
// of the build machine's glibc are not on an Ubuntu 20.04 TPU VM). TPU VMs keep their
// accounts in files (useradd, Google's guest agent), so the files are the truth here.
// Lines starting with '+', '-' (NIS compat) or '#', and malformed lines, are skipped.
//
// The keeper uses LookUpUser to become a job's user (setgid, setgroups, setuid), and the
// device scan uses UserName to name a process's owner.
//
// Thread-safety: pure functions over text, and reads of files.
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>
#include <vector>

#include "util/status.h"

namespace tpufleet::agent::host {

/// The largest passwd or group file read: hosts with 100k accounts exist, 64 MiB is far
/// beyond any, and a file past it is not an account database.
inline constexpr size_t kMaxAccountFileBytes = 64u << 20;

struct PasswdEntry {
  std::string name;
  uid_t uid = 0;
  gid_t gid = 0;
  std::string home;
  std::string shell;
};

struct GroupEntry {
  std::string name;
  gid_t gid = 0;
  std::vector<std::string> members;  // the supplementary members listed
};

/// The entries of a passwd file, in file order.
std::vector<PasswdEntry> ParsePasswd(std::string_view text);
/// The entries of a group file, in file order.
std::vector<GroupEntry> ParseGroup(std::string_view text);

/// One user as a keeper needs it to start a process as that user.
struct UserAccount {
  std::string name;
  uid_t uid = 0;
  gid_t gid = 0;          // the primary group
  std::string home;
  std::string shell;      // "/bin/sh" when the entry leaves it empty, as login does
  std::vector<gid_t> groups;  // for setgroups: the primary group, then every group
                              // listing the user, each once, in file order
};

/// The user `name` in `passwd_text` and `group_text`; NotFound naming it otherwise.
Result<UserAccount> FindUser(std::string_view passwd_text, std::string_view group_text,
                             std::string_view name);

/// The user `name` from `etc_dir`/passwd and `etc_dir`/group.
Result<UserAccount> LookUpUser(const std::string& etc_dir, std::string_view name);

/// The name of `uid` in `entries`, or its number as text ("1234") when none has it.
std::string UserName(const std::vector<PasswdEntry>& entries, uid_t uid);

/// The entries of `etc_dir`/passwd; empty when it cannot be read.
std::vector<PasswdEntry> ReadPasswd(const std::string& etc_dir);

}  // namespace tpufleet::agent::host
