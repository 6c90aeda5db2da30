// The machine's side of a worker's disk (<state>/nodes/<id>/w<i>/). Inside the worker it
// is bound at /run/tpufleet/disk, where the worker's root (any user with a key: sudo)
// may replace anything with a link, a FIFO or a huge file, even while the machine
// writes there. So the machine's root, which reads and writes the disk's log and meta
// dir, never follows a link below the disk, reads only regular files, and only a
// bounded amount of them (issue 10: a compromised worker must not reach the machine).
//
// Thread-safety: plain functions; callers serialise the calls for one worker.
#pragma once

#include <cstddef>
#include <string>

#include "util/status.h"
#include "util/unique_fd.h"

namespace tpufleet::emulator::hosts {

/// The most DiskFile and LogTail read: a version number, or a log's last lines.
inline constexpr size_t kMaxDiskRead = 64 * 1024;

/// <disk>/<name> as a directory of the machine's making: a link or file the worker put
/// there is removed and a directory (mode 0700) made; an existing directory is kept.
/// REQUIRES: the worker is not running (nothing races the repair).
Status RepairDiskDir(const std::string& disk, const std::string& name);

/// A fresh <disk>/<name> for writing (O_APPEND, 0600): whatever was there is unlinked
/// first, and the new file is made with O_EXCL|O_NOFOLLOW.
Result<UniqueFd> CreateDiskLog(const std::string& disk, const std::string& name);

/// Writes <disk>/<dir>/<name> atomically (a temporary file in the same dir, renamed),
/// mode 0600; `dir` is opened without following a link, so a worker that swaps it for
/// one at any moment only moves where, inside its own disk, the file lands.
Status WriteDiskFile(const std::string& disk, const std::string& dir, const std::string& name,
                     const std::string& data);

/// At most `max_bytes` (from the end when `tail`) of <disk>/<path>, whose directories
/// and file are opened without following links; NotFound for a missing file,
/// FailedPrecondition for anything but a regular file (a FIFO would block the reader).
Result<std::string> ReadDiskFile(const std::string& disk, const std::string& path,
                                 size_t max_bytes = kMaxDiskRead, bool tail = false);

}  // namespace tpufleet::emulator::hosts
