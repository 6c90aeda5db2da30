#include "util/file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace tpufleet {

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

Result<std::string> ReadFile(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return ErrnoStatus(path, errno);
  }
  std::string data;
  char buf[65536];
  while (true) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      int err = errno;
      ::close(fd);
      return ErrnoStatus(path, err);
    }
    if (n == 0) {
      break;
    }
    data.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return data;
}

Status WriteFileAtomic(const std::string& path, const std::string& data, int mode) {
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) {
    return ErrnoStatus(tmp, errno);
  }
  // open(2)'s mode is filtered by the umask; set it exactly.
  ::fchmod(fd, static_cast<mode_t>(mode));
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n < 0) {
      int err = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      return ErrnoStatus(tmp, err);
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    return ErrnoStatus(tmp, err);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    return ErrnoStatus(path, err);
  }
  return Status::Ok();
}

}  // namespace tpufleet
