#include "util/file.h"
#include "util/private_file.h"

#include <dirent.h>
#include <fcntl.h>
#include <pwd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <system_error>

#include "util/secret.h"
#include "util/strings.h"
#include "util/unique_fd.h"

namespace tpufleet {
namespace {

/// Attempts at a fresh temporary name: a clash of 64 random bits happens only when
/// someone plants names on purpose, and then giving up is right.
constexpr int kTempNameAttempts = 16;

// "a character device", for a message about what `path` is instead of a file.
const char* KindOf(mode_t mode) {
  if (S_ISFIFO(mode)) {
    return "a pipe";
  }
  if (S_ISCHR(mode)) {
    return "a character device";
  }
  if (S_ISBLK(mode)) {
    return "a block device";
  }
  if (S_ISSOCK(mode)) {
    return "a socket";
  }
  return "not a regular file";
}

// fsync of the directory holding `path`, so a rename into it survives a crash.
void SyncParent(const std::string& path) {
  size_t slash = path.find_last_of('/');
  std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (fd.get() >= 0) {
    ::fsync(fd.get());
  }
}

}  // namespace

Status ErrnoStatus(const std::string& path, int err) {
  std::string m = path + ": " + std::strerror(err);
  if (err == ENOENT) {
    return NotFoundError(m);
  }
  if (err == EACCES || err == EPERM) {
    return PermissionDeniedError(m);
  }
  return InternalError(m);
}

std::string ReadToEof(int fd) {
  std::string out;
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n > 0) {
      out.append(buf, static_cast<size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      return out;
    }
  }
}

namespace {

// The rest of `fd` (open on `path`, whose fstat is `st`), as ReadFile says.
Result<std::string> ReadOpened(const UniqueFd& fd, const struct stat& st, const std::string& path,
                               size_t max_bytes) {
  if (S_ISDIR(st.st_mode)) {
    return ErrnoStatus(path, EISDIR);
  }
  const bool regular = S_ISREG(st.st_mode);
  // Size first: reading to the end of a huge file only to refuse it is what we avoid.
  if (regular && static_cast<uint64_t>(st.st_size) > max_bytes) {
    return InvalidArgumentError(path + ": the file is " +
                                FormatBytes(static_cast<uint64_t>(st.st_size)) +
                                "; at most " + FormatBytes(max_bytes) + " is read");
  }
  std::string data;
  if (regular) {
    data.reserve(static_cast<size_t>(st.st_size));
  }
  char buf[65536];
  while (true) {
    // One byte past the limit is enough to know it is over, and no more is read.
    size_t want = sizeof buf;
    if (max_bytes != kNoSizeLimit) {
      want = std::min(want, max_bytes + 1 - data.size());
    }
    ssize_t n = ::read(fd.get(), buf, want);
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      return ErrnoStatus(path, errno);
    }
    if (n == 0) {
      break;
    }
    data.append(buf, static_cast<size_t>(n));
    if (data.size() > max_bytes) {
      return InvalidArgumentError(
          path + (regular ? std::string(": the file grew past ")
                          : " is " + std::string(KindOf(st.st_mode)) + " that gave more than ") +
          FormatBytes(max_bytes) + ", the most that is read");
    }
  }
  return data;
}

}  // namespace

Result<std::string> ReadFile(const std::string& path, size_t max_bytes) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) {
    return ErrnoStatus(path, errno);
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) {
    return ErrnoStatus(path, errno);
  }
  return ReadOpened(fd, st, path, max_bytes);
}

Result<std::string> ReadPrivateFile(const std::string& path, size_t max_bytes) {
  // O_NONBLOCK: a FIFO planted under the name must not hang the open.
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
  if (fd.get() < 0) {
    if (errno == ELOOP) {
      return FailedPreconditionError(path + " is a symbolic link; a file holding a secret "
                                            "must be a file of its own");
    }
    return ErrnoStatus(path, errno);
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) {
    return ErrnoStatus(path, errno);
  }
  if (!S_ISREG(st.st_mode)) {
    return FailedPreconditionError(path + " is not a regular file");
  }
  TPUFLEET_TRY(CheckOwnedByMe(path, st, 077));
  return ReadOpened(fd, st, path, max_bytes);
}

namespace {

// Writes all of `data` to `fd`: 0, or the errno of the write that failed.
int WriteWhole(int fd, std::string_view data) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n < 0) {
      return errno;
    }
    done += static_cast<size_t>(n);
  }
  return 0;
}

}  // namespace

Status WriteFileAtomic(const std::string& path, const std::string& data, int mode) {
  std::string tmp;
  UniqueFd fd;
  for (int attempt = 0; attempt < kTempNameAttempts && fd.get() < 0; ++attempt) {
    TPUFLEET_ASSIGN_OR_RETURN(std::string suffix, RandomHex(8));
    tmp = path + ".tmp-" + suffix;
    // O_EXCL|O_NOFOLLOW: a name someone planted (a symlink, a file) is never opened.
    fd = UniqueFd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (fd.get() < 0 && errno != EEXIST) {
      return ErrnoStatus(tmp, errno);
    }
  }
  if (fd.get() < 0) {
    return ErrnoStatus(tmp, EEXIST);
  }
  auto fail = [&](const std::string& what, int err) {
    ::unlink(tmp.c_str());
    return ErrnoStatus(what, err);
  };
  if (int err = WriteWhole(fd.get(), data); err != 0) {
    return fail(tmp, err);
  }
  // open(2)'s mode is filtered by the umask; set it exactly.
  if (::fchmod(fd.get(), static_cast<mode_t>(mode)) != 0 || ::fsync(fd.get()) != 0) {
    return fail(tmp, errno);
  }
  fd.Reset();  // after fsync, close(2) has nothing left to report
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    return fail(path, errno);
  }
  SyncParent(path);
  return Status::Ok();
}

Result<std::string> ThisProgram() {
  char self[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) {
    return InternalError("cannot find this program (/proc/self/exe)");
  }
  return std::string(self, static_cast<size_t>(n));
}

Result<std::string> BesideThisProgram(std::string_view program) {
  TPUFLEET_ASSIGN_OR_RETURN(std::string self, ThisProgram());
  return self.substr(0, self.rfind('/') + 1) + std::string(program);
}

std::string UserName(uid_t uid) {
  if (const passwd* pw = ::getpwuid(uid); pw != nullptr && pw->pw_name != nullptr) {
    return pw->pw_name;
  }
  return "uid " + std::to_string(uid);
}

std::string DescribeUser(uid_t uid) {
  std::string id = "uid " + std::to_string(uid);
  std::string name = UserName(uid);
  return name == id ? id : name + " (" + id + ")";
}

Status CheckOwnedByMe(const std::string& path, const struct stat& st, mode_t forbidden) {
  uid_t me = ::geteuid();
  if (st.st_uid != me) {
    return FailedPreconditionError(path + " belongs to " + DescribeUser(st.st_uid) +
                                   ", not to " + DescribeUser(me) + ", who runs tpufleet");
  }
  if ((st.st_mode & forbidden) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return FailedPreconditionError(path + " has mode " + mode + ": " +
                                   ((forbidden & 044) != 0 ? "others may read or write it"
                                                           : "its group or others may write it"));
  }
  return Status::Ok();
}

Status MakeDirs(const std::string& dir, mode_t mode) {
  if (dir.empty() || dir[0] != '/') {
    return InvalidArgumentError("not an absolute directory: \"" + dir + "\"");
  }
  for (size_t slash = dir.find('/', 1);; slash = dir.find('/', slash + 1)) {
    const std::string part = dir.substr(0, slash);
    if (::mkdir(part.c_str(), slash == std::string::npos ? mode : 0755) != 0 && errno != EEXIST) {
      return ErrnoStatus(part, errno);
    }
    if (slash == std::string::npos) {
      return Status::Ok();
    }
  }
}

Status MakePrivateDirs(const std::string& dir) {
  if (dir.empty()) {
    return InvalidArgumentError("empty directory name");
  }
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) {
    if (errno != ENOENT) {
      return ErrnoStatus(dir, errno);
    }
    size_t slash = dir.find_last_of('/');
    if (slash != std::string::npos && slash > 0) {
      std::string parent = dir.substr(0, slash);
      struct stat parent_st {};
      if (::stat(parent.c_str(), &parent_st) != 0) {
        TPUFLEET_TRY(MakePrivateDirs(parent));
      }
    }
    if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
      return ErrnoStatus("mkdir " + dir, errno);
    }
    if (::lstat(dir.c_str(), &st) != 0) {
      return ErrnoStatus(dir, errno);
    }
  }
  // A symlink someone else made could point anywhere: the link and its target must
  // both be ours.
  if (S_ISLNK(st.st_mode)) {
    TPUFLEET_TRY(CheckOwnedByMe(dir, st, 0));
    if (::stat(dir.c_str(), &st) != 0) {
      return ErrnoStatus(dir, errno);
    }
  }
  if (!S_ISDIR(st.st_mode)) {
    return FailedPreconditionError(dir + " exists and is not a directory");
  }
  return CheckOwnedByMe(dir, st, 022);
}

std::vector<std::string> ListDirectory(const std::string& dir) {
  std::vector<std::string> names;
  std::unique_ptr<DIR, int (*)(DIR*)> d(::opendir(dir.c_str()), ::closedir);
  if (d == nullptr) {
    return names;
  }
  while (const dirent* e = ::readdir(d.get())) {
    std::string name = e->d_name;
    if (name != "." && name != "..") {
      names.push_back(std::move(name));
    }
  }
  return names;
}

Result<MemoryFile> MemoryFile::Make(const std::string& name, std::string_view data) {
  MemoryFile f;
  f.fd_ = UniqueFd(::memfd_create(name.c_str(), MFD_CLOEXEC));
  if (f.fd_.get() < 0) {
    return ErrnoStatus("a file in memory for " + name, errno);
  }
  // 0777 as made: ssh refuses a config that others may write.
  if (::fchmod(f.fd_.get(), 0600) != 0) {
    return ErrnoStatus("chmod of the file in memory for " + name, errno);
  }
  if (int err = WriteWhole(f.fd_.get(), data); err != 0) {
    return ErrnoStatus("the file in memory for " + name, err);
  }
  f.path_ = "/proc/" + std::to_string(::getpid()) + "/fd/" + std::to_string(f.fd_.get());
  return f;
}

PrivateDir::~PrivateDir() {
  if (!path_.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
}

Status PrivateDir::Make(const std::string& parent, const std::string& prefix) {
  if (!path_.empty()) {
    return Status::Ok();
  }
  std::string name = parent + "/" + prefix + "XXXXXX";
  if (::mkdtemp(name.data()) == nullptr) {
    return ErrnoStatus("a private directory in " + parent, errno);
  }
  path_ = name;
  return Status::Ok();
}

}  // namespace tpufleet
