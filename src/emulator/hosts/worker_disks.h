// A worker's data disks, as its init shows them (the machine's side is loop_devices.h),
// and the one way its root may mount them.
//
// Devices. Each disk of the worker document is a block node /dev/sdb, /dev/sdc, … with
// the numbers of the machine's loop device, root:disk 0660 as on a VM, and the links
// /dev/disk/by-id/google-NAME and scsi-0Google_PersistentDisk_NAME (GCE's names, made
// by udev there). The worker's /dev is read-only to its processes (LockDown) and none
// may make device nodes: the init writes through a clone of the mount (WritableClone)
// with CAP_MKNOD raised for the call. A document without a disk takes its node and
// links away and lazily unmounts what the init mounted from it.
//
// Mounting. A worker has no CAP_SYS_ADMIN (worker_setup.h), so mount(2) fails for its
// root. This file's program, bound as /usr/sbin/mount.ext4 (and ext2, ext3) and
// umount.ext4 …, is the helper util-linux's mount(8) and umount(8) run for these types
// (`mount /dev/sdb DIR` probes the type first). It opens the source and the target (or,
// for umount, the target's parent) as the caller and passes the descriptors over the
// init's Unix socket kMountSocket; the init, which keeps CAP_SYS_ADMIN permitted but not
// effective, checks and mounts in the worker's mount namespace:
//   - the caller is uid 0 (SO_PEERCRED) — the socket's directory is also root's only;
//   - the source is one of this worker's disks (by device number), the type ext2/3/4;
//   - the target is a directory on one of the worker's own writable mounts: its root
//     directory (worker_root.h: /data, made by its root) but not "/" itself, /mnt,
//     /home, /root, /tmp, /var, /opt; not the machine's, not a data disk, not /run;
//   - the options are from a fixed list (no journal_dev, no errors=panic, no suid or
//     dev); nosuid and nodev are always set, and ro for a READ_ONLY disk (with mount(8)'s
//     "write-protected" warning);
//   - umount only of a mount the init made, by its root directory.
// The mount is made with fsopen/fsmount/move_mount onto the caller's descriptor, so no
// path is looked up twice. Nothing else becomes mountable.
//
// Thread-safety: the single-threaded init.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "emulator/hosts/worker_document.h"
#include "util/status.h"
#include "util/unique_fd.h"

namespace tpufleet::emulator::hosts {

/// The init's socket for mount requests, inside the worker (root-only directory).
inline constexpr const char* kMountSocket = "/run/tpufleet/mount.sock";
/// Where the helper program is bound: <dir>/mount.<type> and <dir>/umount.<type>.
inline constexpr const char* kMountHelperDir = "/usr/sbin";
/// The types the helper mounts: what GCE's guides format data disks with.
inline constexpr const char* kMountTypes[] = {"ext4", "ext3", "ext2"};
/// Mount clients served at once (each sends one request); more are turned away.
inline constexpr size_t kMaxMountClients = 8;

class WorkerDisks {
 public:
  /// The /dev clone, /dev/disk/by-id, the helper bound at kMountHelperDir (where /usr is
  /// the worker's overlay; said in the log otherwise) and the socket. REQUIRES: the init,
  /// in the worker's mount namespace, /dev mounted, before LockDown, with CAP_SYS_ADMIN.
  Status SetUp();

  /// Shows exactly `disks`. REQUIRES: SetUp ran; CAP_MKNOD and CAP_SYS_ADMIN permitted.
  Status Apply(const std::vector<DataDiskDevice>& disks);

  /// The descriptors to poll for input: the socket, then the clients.
  std::vector<int> PollFds() const;
  /// `fd` (one of PollFds) is readable or hung up: accepts, or answers one request.
  void Serve(int fd);

 private:
  struct Mounted {
    uint64_t id;  // STATX_MNT_ID
    dev_t device;
  };
  Status ShowDisk(const DataDiskDevice& d);
  void HideDisk(const DataDiskDevice& d);
  std::string HandleRequest(const std::string& request, const std::vector<int>& fds, uid_t peer);
  Result<std::string> MountRequest(const std::vector<std::string>& parts, int source, int target);
  Status UmountRequest(const std::vector<std::string>& parts, int parent);
  Status UnmountAt(int parent, const std::string& name, int flags);

  UniqueFd dev_;  // writable clone of the worker's /dev
  UniqueFd listen_;
  std::vector<UniqueFd> clients_;
  std::vector<DataDiskDevice> shown_;
  std::vector<Mounted> mounted_;  // what the init mounted from the disks
  gid_t disk_gid_ = 6;            // Debian's "disk" group
};

/// The helper's main: argv[0] ends in mount.<type> or umount.<type>. Exit status as
/// util-linux's (0, or 32 for a failed mount).
int MountHelperMain(int argc, char** argv);

/// True when argv[0] names the helper (the worker program runs as either).
bool IsMountHelper(const char* argv0);

}  // namespace tpufleet::emulator::hosts
