// A job's log files on its worker: what the keeper writes (LogWriter) and what serve
// reads back for job.logs (LogReader).
//
// Each stream of a job has its own file, jobs/ID/stdout.log and stderr.log. When a file
// would grow past kLogFileBytes it is rotated: NAME.log.2 becomes NAME.log.3 (the old .3
// is dropped), .1 becomes .2, NAME.log becomes .1, and writing goes on in a new
// NAME.log. So a stream keeps at most (kLogRotationsKept + 1) × kLogFileBytes, and the
// newest output is always in NAME.log. The files stay after the job ends.
//
// A reader holds the files it still has to read open, so a rotation while it reads
// moves nothing under it: it reads each file to its end, then the next newer one, and
// when the newest has ended and was rotated away it goes on with the file(s) that
// replaced it.
//
// Thread-safety: none; each writer and reader belongs to one thread.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/status.h"
#include "util/unique_fd.h"

namespace tpufleet::agent {

/// How large one log file grows before it is rotated: a day of a chatty training loop,
/// and small enough that the rotated files of a few jobs fit on a worker's disk.
inline constexpr size_t kLogFileBytes = size_t{16} << 20;
/// How many rotated files of a stream are kept (NAME.log.1 to .3).
inline constexpr int kLogRotationsKept = 3;
/// The most a reader hands out at once: one data line of job.logs.
inline constexpr size_t kLogChunkBytes = size_t{64} << 10;

class LogWriter {
 public:
  /// Appends to `path` (0600, made when missing), rotating at `max_bytes`.
  static Result<LogWriter> Open(std::string path, size_t max_bytes = kLogFileBytes);

  /// Writes `data`, rotating first whenever the current file would pass max_bytes (a
  /// piece larger than max_bytes is split across files).
  Status Append(std::string_view data);

 private:
  LogWriter(std::string path, size_t max_bytes) : path_(std::move(path)), max_bytes_(max_bytes) {}
  Status Reopen();
  Status Rotate();

  std::string path_;
  size_t max_bytes_;
  UniqueFd fd_;
  size_t size_ = 0;  // of the current file
};

class LogReader {
 public:
  /// A reader of `path` and its rotations, oldest first; positioned at the start of the
  /// last `tail` lines (nullopt: at the start of the oldest file kept). Files that do
  /// not exist (yet) are no error: a reader of them has nothing to read until they do.
  static LogReader Open(std::string path, std::optional<int64_t> tail);

  /// The next piece of the log, at most max_bytes, cut after a newline when the piece
  /// is full and has one (else between UTF-8 characters); "" when there is nothing more
  /// now (more may come: call again after the file grows).
  std::string Read(size_t max_bytes = kLogChunkBytes);

 private:
  struct File {
    UniqueFd fd;
    ino_t inode = 0;
    off_t offset = 0;
  };
  explicit LogReader(std::string path) : path_(std::move(path)) {}
  // After the newest file read ended: opens what rotation put after it.
  void FollowRotation();

  std::string path_;
  std::vector<File> files_;  // still to read, oldest first; the last is the newest seen
};

/// NAME.log, NAME.log.1, … NAME.log.kLogRotationsKept: rotation's names, newest first.
std::vector<std::string> LogFileNames(const std::string& path);

}  // namespace tpufleet::agent
