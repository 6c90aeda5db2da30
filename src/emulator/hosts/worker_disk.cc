#include "emulator/hosts/worker_disk.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <vector>

#include "emulator/hosts/system_programs.h"
#include "util/strings.h"

namespace tpufleet::emulator::hosts {
namespace {

constexpr int kDirFlags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;

// `path` (relative, '/'-separated) under `disk`, each directory opened without following
// a link; the directory holding the last component, and that component's name.
Result<UniqueFd> OpenParent(const std::string& disk, const std::string& path, std::string* leaf) {
  UniqueFd dir(::open(disk.c_str(), kDirFlags));
  if (dir.get() < 0) {
    return FailedPreconditionError(Errno(disk));
  }
  std::vector<std::string> parts = Split(path, '/');
  *leaf = parts.back();
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    UniqueFd next(::openat(dir.get(), parts[i].c_str(), kDirFlags));
    if (next.get() < 0) {
      return errno == ENOENT ? NotFoundError(Errno(disk + "/" + parts[i]))
                             : FailedPreconditionError(Errno(disk + "/" + parts[i]) +
                                                       " (a link the worker made?)");
    }
    dir = std::move(next);
  }
  return dir;
}

Status WriteAll(int fd, const std::string& data, const std::string& what) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      return InternalError(Errno("write " + what));
    }
    done += static_cast<size_t>(n);
  }
  return Status::Ok();
}

}  // namespace

Status RepairDiskDir(const std::string& disk, const std::string& name) {
  std::string leaf;
  TPUFLEET_ASSIGN_OR_RETURN(UniqueFd parent, OpenParent(disk, name, &leaf));
  struct stat st {};
  if (::fstatat(parent.get(), leaf.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
      !S_ISDIR(st.st_mode) && ::unlinkat(parent.get(), leaf.c_str(), 0) != 0) {
    return InternalError(Errno("unlink " + disk + "/" + name));
  }
  if (::mkdirat(parent.get(), leaf.c_str(), 0700) != 0 && errno != EEXIST) {
    return InternalError(Errno("mkdir " + disk + "/" + name));
  }
  UniqueFd dir(::openat(parent.get(), leaf.c_str(), kDirFlags));
  if (dir.get() < 0 || ::fchmod(dir.get(), 0700) != 0) {
    return InternalError(Errno(disk + "/" + name));
  }
  return Status::Ok();
}

Result<UniqueFd> CreateDiskLog(const std::string& disk, const std::string& name) {
  std::string leaf;
  TPUFLEET_ASSIGN_OR_RETURN(UniqueFd parent, OpenParent(disk, name, &leaf));
  ::unlinkat(parent.get(), leaf.c_str(), 0);
  UniqueFd fd(::openat(parent.get(), leaf.c_str(),
                       O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (fd.get() < 0) {
    return InternalError(Errno(disk + "/" + name));
  }
  return fd;
}

Status WriteDiskFile(const std::string& disk, const std::string& dir, const std::string& name,
                     const std::string& data) {
  std::string leaf;
  TPUFLEET_ASSIGN_OR_RETURN(UniqueFd parent, OpenParent(disk, dir + "/" + name, &leaf));
  const std::string tmp = leaf + ".tmp";
  const std::string what = disk + "/" + dir + "/" + name;
  ::unlinkat(parent.get(), tmp.c_str(), 0);
  UniqueFd fd(::openat(parent.get(), tmp.c_str(),
                       O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (fd.get() < 0) {
    return InternalError(Errno(what + ".tmp"));
  }
  TPUFLEET_TRY(WriteAll(fd.get(), data, what));
  if (::fsync(fd.get()) != 0) {
    return InternalError(Errno("fsync " + what));
  }
  fd.Reset();
  if (::renameat(parent.get(), tmp.c_str(), parent.get(), leaf.c_str()) != 0) {
    return InternalError(Errno("rename " + what));
  }
  return Status::Ok();
}

Result<std::string> ReadDiskFile(const std::string& disk, const std::string& path,
                                 size_t max_bytes, bool tail) {
  std::string leaf;
  TPUFLEET_ASSIGN_OR_RETURN(UniqueFd parent, OpenParent(disk, path, &leaf));
  UniqueFd fd(::openat(parent.get(), leaf.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (fd.get() < 0) {
    return errno == ENOENT ? NotFoundError(Errno(disk + "/" + path))
                           : FailedPreconditionError(Errno(disk + "/" + path));
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return FailedPreconditionError(disk + "/" + path + " is not a regular file");
  }
  off_t from = 0;
  if (tail && static_cast<size_t>(st.st_size) > max_bytes) {
    from = st.st_size - static_cast<off_t>(max_bytes);
  }
  std::string out(max_bytes, '\0');
  size_t got = 0;
  while (got < max_bytes) {
    ssize_t n = ::pread(fd.get(), out.data() + got, max_bytes - got, from + static_cast<off_t>(got));
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n < 0) {
      return InternalError(Errno("read " + disk + "/" + path));
    }
    if (n == 0) {
      break;
    }
    got += static_cast<size_t>(n);
  }
  out.resize(got);
  return out;
}

}  // namespace tpufleet::emulator::hosts
