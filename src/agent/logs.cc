#include "agent/logs.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <utility>

#include "util/file.h"

namespace tpufleet::agent {
namespace {

// Where a full piece of `data` may end: after its last newline, else before a UTF-8
// character's first byte (never inside a character).
size_t CutPoint(std::string_view data) {
  size_t newline = data.rfind('\n');
  if (newline != std::string_view::npos) {
    return newline + 1;
  }
  size_t cut = data.size();
  for (int back = 0; back < 4 && cut > 0; ++back) {
    unsigned char c = static_cast<unsigned char>(data[cut - 1]);
    if ((c & 0xC0) != 0x80) {  // an ASCII byte or a lead byte
      return c < 0x80 ? cut : cut - 1;
    }
    --cut;
  }
  return data.size();
}

ino_t InodeOf(int fd) {
  struct stat st {};
  return fstat(fd, &st) == 0 ? st.st_ino : 0;
}

}  // namespace

std::vector<std::string> LogFileNames(const std::string& path) {
  std::vector<std::string> names = {path};
  for (int i = 1; i <= kLogRotationsKept; ++i) {
    names.push_back(path + "." + std::to_string(i));
  }
  return names;
}

Result<LogWriter> LogWriter::Open(std::string path, size_t max_bytes) {
  LogWriter w(std::move(path), max_bytes);
  TPUFLEET_TRY(w.Reopen());
  return w;
}

Status LogWriter::Reopen() {
  fd_ = UniqueFd(open(path_.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (fd_.get() < 0) {
    return ErrnoStatus(path_, errno);
  }
  struct stat st {};
  size_ = fstat(fd_.get(), &st) == 0 ? static_cast<size_t>(st.st_size) : 0;
  return Status::Ok();
}

Status LogWriter::Rotate() {
  std::vector<std::string> names = LogFileNames(path_);
  for (size_t i = names.size() - 1; i > 0; --i) {
    if (rename(names[i - 1].c_str(), names[i].c_str()) != 0 && errno != ENOENT) {
      return ErrnoStatus(names[i - 1], errno);
    }
  }
  return Reopen();
}

Status LogWriter::Append(std::string_view data) {
  while (!data.empty()) {
    if (size_ >= max_bytes_) {
      TPUFLEET_TRY(Rotate());
    }
    size_t piece = std::min(data.size(), max_bytes_ - size_);
    ssize_t n = write(fd_.get(), data.data(), piece);
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      return ErrnoStatus(path_, errno);
    }
    size_ += static_cast<size_t>(n);
    data.remove_prefix(static_cast<size_t>(n));
  }
  return Status::Ok();
}

LogReader LogReader::Open(std::string path, std::optional<int64_t> tail) {
  LogReader r(std::move(path));
  std::vector<std::string> names = LogFileNames(r.path_);
  for (auto it = names.rbegin(); it != names.rend(); ++it) {  // oldest first
    UniqueFd fd(open(it->c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    if (fd.get() >= 0) {
      ino_t inode = InodeOf(fd.get());
      r.files_.push_back(File{std::move(fd), inode, 0});
    }
  }
  if (!tail) {
    return r;
  }
  if (*tail <= 0) {  // none: from the end of the newest file on
    if (!r.files_.empty()) {
      r.files_.erase(r.files_.begin(), r.files_.end() - 1);
      struct stat st {};
      r.files_.back().offset = fstat(r.files_.back().fd.get(), &st) == 0 ? st.st_size : 0;
    }
    return r;
  }
  // Back from the end, newest file first, to just after the (tail+1)-th newline; the
  // newline that ends the log does not start a line of its own.
  int64_t newlines = 0;
  bool at_end = true;
  char buf[8192];
  for (size_t i = r.files_.size(); i-- > 0;) {
    struct stat st {};
    off_t pos = fstat(r.files_[i].fd.get(), &st) == 0 ? st.st_size : 0;
    while (pos > 0) {
      off_t step = std::min<off_t>(pos, sizeof buf);
      ssize_t n = pread(r.files_[i].fd.get(), buf, step, pos - step);
      if (n != step) {
        break;
      }
      for (off_t k = step; k-- > 0;) {
        if (buf[k] == '\n') {
          if (!at_end && ++newlines == *tail) {
            r.files_[i].offset = pos - step + k + 1;
            r.files_.erase(r.files_.begin(), r.files_.begin() + static_cast<long>(i));
            return r;
          }
        }
        at_end = false;
      }
      pos -= step;
    }
  }
  return r;  // fewer lines than asked: all of them
}

void LogReader::FollowRotation() {
  ino_t current = files_.empty() ? 0 : files_.back().inode;
  std::vector<File> found;  // oldest first
  std::vector<std::string> names = LogFileNames(path_);
  for (auto it = names.rbegin(); it != names.rend(); ++it) {
    UniqueFd fd(open(it->c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    if (fd.get() >= 0) {
      ino_t inode = InodeOf(fd.get());
      found.push_back(File{std::move(fd), inode, 0});
    }
  }
  if (current == 0) {
    files_ = std::move(found);
    return;
  }
  auto same = std::find_if(found.begin(), found.end(),
                           [&](const File& f) { return f.inode == current; });
  if (same == found.end()) {
    // Rotated out of sight already (more rotations than files kept since the last
    // read): what is there now, oldest first.
    files_ = std::move(found);
    return;
  }
  if (same + 1 == found.end()) {
    return;  // not rotated
  }
  files_.clear();
  std::move(same + 1, found.end(), std::back_inserter(files_));
}

std::string LogReader::Read(size_t max_bytes) {
  std::string out(max_bytes, '\0');
  for (int attempt = 0; attempt < 2; ++attempt) {
    while (!files_.empty()) {
      File& f = files_.front();
      ssize_t n = pread(f.fd.get(), out.data(), max_bytes, f.offset);
      if (n > 0) {
        size_t keep = static_cast<size_t>(n) == max_bytes ? CutPoint({out.data(), max_bytes})
                                                          : static_cast<size_t>(n);
        out.resize(keep);
        f.offset += static_cast<off_t>(keep);
        return out;
      }
      if (files_.size() == 1) {
        break;  // the newest: it may still grow, or have been rotated
      }
      files_.erase(files_.begin());
    }
    if (attempt == 0) {
      FollowRotation();
    }
  }
  return "";
}

}  // namespace tpufleet::agent
