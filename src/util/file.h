// Whole-file reads, atomic writes and private directories. Errors come back as Status
// with the path and the system's reason ("/x/fleet.yaml: No such file or directory").
//
// tpufleet runs on machines shared by many users, as root too. What it writes goes
// through names no one else can predict or plant (WriteFileAtomic), into directories
// its own user owns and no one else may write (MakePrivateDirs); what it reads from a
// path a user names is bounded (ReadFile's max_bytes), so `validate /dev/zero` stops.
//
// Thread-safety: stateless.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "util/status.h"
#include "util/unique_fd.h"

namespace tpufleet {

/// ReadFile without a bound: for files the system or tpufleet itself wrote (/proc,
/// the state dir), never for a path a user names.
inline constexpr size_t kNoSizeLimit = SIZE_MAX;

/// The bytes of `path`, at most `max_bytes` of them. NotFound when it does not exist.
/// InvalidArgument when it holds more: a regular file's size is checked before any
/// read; anything else (a pipe, /dev/stdin, a device such as /dev/zero) is read up to
/// max_bytes + 1 bytes and no further. A directory is "PATH: Is a directory".
Result<std::string> ReadFile(const std::string& path, size_t max_bytes = kNoSizeLimit);

/// Everything `fd` gives until end of file (or an error, which ends it too): a child's
/// pipe, a socket whose peer closes. Blocks; retries EINTR. Does not close `fd`.
std::string ReadToEof(int fd);

/// Writes `data` to `path` through a temporary file and rename(2), so readers see the
/// old or the new content, never half. The temporary file has an unpredictable name in
/// `path`'s directory and is created with O_EXCL|O_NOFOLLOW, so nothing planted there
/// (a symlink, a file someone else holds open) is followed or reused; it is fsynced
/// before the rename and the directory after. `mode` is the new file's permission bits
/// (0600 for anything holding a credential), exactly, whatever the umask.
Status WriteFileAtomic(const std::string& path, const std::string& data, int mode = 0644);

/// Creates `dir` with mode `mode` and any missing parents with 0755 (as /var/lib and
/// /mnt are); a `dir` that exists is left as it is. `dir` must be absolute.
Status MakeDirs(const std::string& dir, mode_t mode);

/// Creates `dir` and any missing parents with mode 0700. `dir` itself, whether made now
/// or found, must be a directory (or a symlink to one) that the effective user owns and
/// that neither its group nor others may write: FailedPrecondition naming the owner or
/// the mode otherwise (CheckOwnedByMe). Parents that already exist are left as they are.
Status MakePrivateDirs(const std::string& dir);

/// A new directory that only this user can enter (mkdtemp makes it 0700), removed with
/// what is in it when this goes: for what is written here that nobody else may read or
/// plant (cp's tars and staging, the ssh config of `--server URL ssh`).
class PrivateDir {
 public:
  PrivateDir() = default;
  PrivateDir(const PrivateDir&) = delete;
  PrivateDir& operator=(const PrivateDir&) = delete;
  ~PrivateDir();
  /// Makes PARENT/PREFIXxxxxxx (once; later calls keep the first).
  Status Make(const std::string& parent, const std::string& prefix);
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

/// A file that exists only in memory (memfd_create) while this lives, mode 0600, holding
/// what Make wrote: for a file another program must open by path (ssh's -F config and
/// its known_hosts) that no directory may keep, whatever ends this process, SIGKILL
/// included. path() is "/proc/PID/fd/N": the kernel lets only this process's user (and
/// root) open it, as with a 0700 directory; it works only while this object lives.
class MemoryFile {
 public:
  MemoryFile() = default;
  /// `name` shows in /proc/PID/fd's link ("/memfd:NAME"); `data` is its whole content.
  static Result<MemoryFile> Make(const std::string& name, std::string_view data);
  const std::string& path() const { return path_; }

 private:
  UniqueFd fd_;
  std::string path_;
};

/// OK when `st` (lstat or stat of `path`) belongs to the effective user and has none of
/// the permission bits in `forbidden` (022: no group or other write; 077: private).
/// FailedPrecondition otherwise: "PATH belongs to nobody (uid 65534), not to root (uid
/// 0), who runs tpufleet" or "PATH has mode 0777: its group or others may write it".
Status CheckOwnedByMe(const std::string& path, const struct stat& st, mode_t forbidden);

/// The absolute path of the running program (/proc/self/exe). Internal when the kernel
/// does not say.
Result<std::string> ThisProgram();
/// `program` in the directory of the running program, where tpufleet's programs are
/// installed side by side (tpufleet, tpufleet-serve, tpufleet-emulator…).
Result<std::string> BesideThisProgram(std::string_view program);

/// "alice (uid 1000)", or "uid 1234" for a uid without a passwd entry.
std::string DescribeUser(uid_t uid);
/// "alice", or "uid 1234" for a uid without a passwd entry.
std::string UserName(uid_t uid);

/// The names in directory `dir` (not . or ..), in no order; empty when it cannot be read
/// (or stops being readable part way). Never throws, unlike a range-for over a
/// std::filesystem::directory_iterator, whose increments do on an error.
std::vector<std::string> ListDirectory(const std::string& dir);

/// "<path>: <strerror(err)>" for a system call on `path` that failed with `err`:
/// NotFound (ENOENT), PermissionDenied (EACCES, EPERM) or Internal.
Status ErrnoStatus(const std::string& path, int err);

}  // namespace tpufleet
