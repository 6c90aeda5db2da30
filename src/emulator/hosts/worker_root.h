// A worker's root directory of its own (issue 15). On a TPU VM the root file system is
// the VM's: its root makes /data or /scratch and mounts a data disk there
// (`sudo mkdir /data && sudo mount -o ro,noload /dev/sdb /data`). So a worker's "/" is
// a directory on its disk, <disk>/rootfs, and the machine's top-level entries are put
// back into it at every boot: its directories bound at their names with everything
// mounted below them (read-only to the worker after LockDown, but for the worker's own
// mounts over them), its regular files bound, its links (/bin -> usr/bin) made again.
// What the worker's root made there itself (a directory, a file) stays on its disk: it
// survives stop/start and maintenance, goes with delete, and neither the machine nor
// another worker sees it. The directory has the owner and mode of the machine's "/", so
// other users cannot make anything in it.
//
// Why not an overlay of the machine's "/": the worker's disk is below it, and overlayfs
// refuses an upper layer inside its lower one.
//
// Thread-safety: single-threaded; changes the calling process's mount namespace.
#pragma once

#include <string>

#include "util/status.h"

namespace tpufleet::emulator::hosts {

/// The worker's root directory, below its disk.
inline constexpr const char* kRootDirName = "rootfs";

/// Makes <disk>/kRootDirName the root directory of this mount namespace (pivot_root).
/// Every path of the machine resolves as before, but for new names in "/". A machine
/// entry the worker's root replaced (a directory where the machine has /bin's link) is
/// removed first. The machine's root stays in the namespace until LeaveMachineRoot.
/// False, said in the worker's log, where it cannot be done (pivot_root fails where "/"
/// is an initramfs): "/" stays the machine's, read-only to the worker. REQUIRES: a new
/// mount namespace whose mounts are all private; CAP_SYS_ADMIN; the worker is not
/// running (nothing races the checks).
Result<bool> EnterOwnRoot(const std::string& disk);

/// Detaches the machine's root from this namespace, so no chroot or descriptor of the
/// worker's can lead back to it. REQUIRES: EnterOwnRoot succeeded; before the worker
/// runs anything.
Status LeaveMachineRoot();

}  // namespace tpufleet::emulator::hosts
