#include "agent/host/mounts.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <algorithm>
#include <chrono>
#include <optional>

#include "agent/host/system_programs.h"
#include "core/fleet_spec.h"
#include "util/file.h"
#include "util/mount_info.h"
#include "util/strings.h"
#include "util/subprocess.h"

namespace tpufleet::agent::host {
namespace {

// mount and umount end in well under a second; a minute means a hung device.
constexpr std::chrono::seconds kMountTimeout{60};
// mkfs.ext4 initialises its tables lazily: seconds even for terabytes.
constexpr std::chrono::minutes kMkfsTimeout{10};
// The saved list and mountinfo are small; a cap keeps a hostile file from filling memory.
constexpr size_t kMaxMountsFileBytes = 64 * 1024;
constexpr size_t kMaxMountInfoBytes = 4 * 1024 * 1024;

std::string DevicePath(const HostPaths& paths, const std::string& disk) {
  return paths.dev + "/disk/by-id/google-" + disk;
}

// The block device's "major:minor", as mountinfo writes it; "" when `path` is none.
std::string BlockDevice(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 || !S_ISBLK(st.st_mode)) {
    return "";
  }
  return std::to_string(major(st.st_rdev)) + ":" + std::to_string(minor(st.st_rdev));
}

// What is mounted on `path` now (the topmost mount), if anything.
std::optional<MountInfoEntry> MountedAt(const HostPaths& paths, const std::string& path) {
  Result<std::string> text = ReadFile(paths.proc + "/self/mountinfo", kMaxMountInfoBytes);
  std::optional<MountInfoEntry> found;
  for (MountInfoEntry& m : text.ok() ? ParseMountInfo(*text) : std::vector<MountInfoEntry>()) {
    if (m.path == path) {
      found = std::move(m);
    }
  }
  return found;
}

Result<ProgramResult> RunTool(const std::string& tool, const char* name,
                              std::vector<std::string> args, std::chrono::seconds timeout) {
  std::string program = tool.empty() ? FindSystemProgram(name) : tool;
  if (program.empty()) {
    return FailedPreconditionError(std::string(name) + " is not installed on this worker");
  }
  args.insert(args.begin(), program);
  return RunSubprocess(args, "", timeout, SystemProgramOptions());
}

Status Ran(const Result<ProgramResult>& r, const std::string& what) {
  if (!r.ok()) {
    return r.status().WithContext(what);
  }
  if (r->exit_code != 0) {
    return InternalError(what + " failed (exit " + std::to_string(r->exit_code) +
                         "): " + std::string(Trim(r->output)));
  }
  return Status::Ok();
}

// The file system `blkid -p` finds on `device` ("ext4"); "" when it finds no signature.
Result<std::string> FileSystemOn(const MountTools& tools, const std::string& device) {
  TPUFLEET_ASSIGN_OR_RETURN(ProgramResult r,
                            RunTool(tools.blkid, "blkid",
                                    {"-p", "-o", "value", "-s", "TYPE", "--", device},
                                    kMountTimeout));
  if (r.exit_code == 2) {  // blkid: nothing was found
    return std::string();
  }
  if (r.exit_code != 0) {
    return InternalError("blkid " + device + " failed (exit " + std::to_string(r.exit_code) +
                         "): " + std::string(Trim(r.output)));
  }
  std::string type(Trim(r.output));
  // Without a TYPE (a partition table, say) something is there all the same.
  return type.empty() ? std::string("unknown") : type;
}

// Mounts one disk; sets `action` to what it did.
Status MountOne(const HostPaths& paths, const MountTools& tools, const MountSpec& m,
                std::string* action) {
  TPUFLEET_TRY(CheckDiskName(m.disk));
  TPUFLEET_TRY(CheckMountPath(m.path));
  const std::string device = DevicePath(paths, m.disk);
  const std::string numbers = BlockDevice(device);
  if (numbers.empty()) {
    return NotFoundError("disk " + m.disk + " is not attached to this worker (no " + device +
                         ")");
  }
  if (std::optional<MountInfoEntry> now = MountedAt(paths, m.path)) {
    if (now->device == numbers) {
      *action = "unchanged";
      return Status::Ok();
    }
    return FailedPreconditionError(m.path + " already has " + now->source +
                                   " mounted on it; unmount it or choose another directory");
  }
  TPUFLEET_TRY(MakeDirs(m.path, 0755));
  TPUFLEET_ASSIGN_OR_RETURN(std::string fs, FileSystemOn(tools, device));
  *action = "mounted";
  if (fs.empty()) {
    if (m.read_only) {
      return FailedPreconditionError(
          "disk " + m.disk + " has no file system, and it is attached read-only; attach it "
          "read-write to one node once, and tpufleet formats it (ext4)");
    }
    TPUFLEET_TRY(Ran(RunTool(tools.mkfs, "mkfs.ext4", {"-q", "-m", "0", "--", device},
                             kMkfsTimeout),
                     "mkfs.ext4 " + device));
    *action = "formatted";
    fs = "ext4";
  }
  std::string options = "rw";
  if (m.read_only) {
    options = (fs == "ext4" || fs == "ext3" || fs == "ext2") ? "ro,noload" : "ro";
  }
  return Ran(RunTool(tools.mount, "mount", {"-o", options, "--", device, m.path}, kMountTimeout),
             "mount -o " + options + " " + device + " " + m.path);
}

Status SaveMounts(const HostPaths& paths, const std::vector<MountSpec>& mounts) {
  TPUFLEET_TRY(MakeDirs(paths.state, 0700));
  std::string text;
  for (const MountSpec& m : mounts) {
    text += m.disk + " " + m.path + (m.read_only ? " ro\n" : " rw\n");
  }
  return WriteFileAtomic(paths.state + "/" + kMountsFile, text, 0600);
}

}  // namespace

std::vector<MountSpec> SavedMounts(const HostPaths& paths) {
  std::vector<MountSpec> out;
  Result<std::string> text = ReadFile(paths.state + "/" + kMountsFile, kMaxMountsFileBytes);
  for (const std::string& line : text.ok() ? Split(*text, '\n') : std::vector<std::string>()) {
    std::vector<std::string> f = Split(line, ' ');
    if (f.size() == 3 && (f[2] == "ro" || f[2] == "rw") && CheckDiskName(f[0]).ok() &&
        CheckMountPath(f[1]).ok()) {
      out.push_back({f[0], f[1], f[2] == "ro"});
    }
  }
  return out;
}

std::vector<MountResult> ApplyMounts(const HostPaths& paths, const std::vector<MountSpec>& mounts,
                                     const MountTools& tools) {
  std::vector<MountResult> results;
  for (const MountSpec& m : mounts) {
    MountResult r{m.disk, m.path, "", ""};
    if (Status s = MountOne(paths, tools, m, &r.action); !s.ok()) {
      r.action = "refused";
      r.error = s.message();
    }
    results.push_back(std::move(r));
  }
  // Those of the last list that this one dropped, while this disk is still what is there.
  for (const MountSpec& old : SavedMounts(paths)) {
    if (std::find(mounts.begin(), mounts.end(), old) != mounts.end()) {
      continue;
    }
    std::optional<MountInfoEntry> now = MountedAt(paths, old.path);
    std::string numbers = BlockDevice(DevicePath(paths, old.disk));
    if (!now || numbers.empty() || now->device != numbers) {
      continue;
    }
    MountResult r{old.disk, old.path, "unmounted", ""};
    if (Status s = Ran(RunTool(tools.umount, "umount", {"--", old.path}, kMountTimeout),
                       "umount " + old.path);
        !s.ok()) {
      r.action = "refused";
      r.error = s.message();
    }
    results.push_back(std::move(r));
  }
  if (Status s = SaveMounts(paths, mounts); !s.ok()) {
    results.push_back({"", paths.state, "refused", s.WithContext("saving the mounts").message()});
  }
  return results;
}

}  // namespace tpufleet::agent::host
