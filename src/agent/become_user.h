// Becoming a job's user, and the login environment that user's job starts with.
//
// The keeper (keeper.h) runs as root and turns into the job's user only in the job's own
// process, after fork and before exec: so the keeper can still write the job's logs in
// the root-owned state directory and signal the job's group, and the job cannot touch
// its keeper. job.start's dry run checks a workdir the same way, in a child that becomes
// the user and tries to enter it, so "the user can enter it" is the kernel's answer,
// with every group and ACL counted.
//
// Thread-safety: BecomeUser changes the credentials of the whole process: call it only
// in a child after fork (no other thread there). The rest are pure functions.
#pragma once

#include <string>
#include <vector>

#include "agent/host/user_db.h"
#include "util/status.h"

namespace tpufleet::agent {

/// The PATH a job starts with; the login shell's profile (bash -l) extends it.
inline constexpr const char* kJobPath = "/usr/local/bin:/usr/bin:/bin";

/// setgroups(user.groups), setgid(user.gid), setuid(user.uid), in that order (groups and
/// gid can be changed only while still root), then checks the uid can no longer be
/// regained. A no-op when this process already is that uid and not root.
/// PermissionDenied naming the call that failed.
Status BecomeUser(const host::UserAccount& user);

/// HOME, USER, LOGNAME, SHELL and PATH of `user`, as "NAME=value".
std::vector<std::string> LoginEnvironment(const host::UserAccount& user);

/// `workdir` as the job's directory: the user's home for "", `home`/`workdir` for a
/// relative one, itself for an absolute one.
std::string ResolveWorkdir(const host::UserAccount& user, const std::string& workdir);

/// Whether `user` can enter directory `dir`: a child process becomes the user and
/// chdir(2)s there. InvalidArgument saying why not ("/x: No such file or directory",
/// "/x: Not a directory", "/x: Permission denied for alice").
Status CheckUserCanEnter(const host::UserAccount& user, const std::string& dir);

}  // namespace tpufleet::agent
