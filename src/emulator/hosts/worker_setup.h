// The boot steps of a worker's init (worker_init.h), each run by the init inside the
// worker's new namespaces: its file system, network, host key, sshd configuration and
// /etc/hosts, and starting sshd.
//
// Thread-safety: single-threaded program; these change the calling process's mounts,
// network namespace and files.
#pragma once

#include <linux/capability.h>
#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <string>

#include "emulator/hosts/worker_document.h"
#include "util/status.h"
#include "util/unique_fd.h"

namespace tpufleet::emulator::hosts {

/// Where the worker's disk is mounted inside it, whatever covers its path on the
/// machine (when the state dir is under /tmp, /home or /root).
inline constexpr const char* kDiskMount = "/run/tpufleet/disk";
/// The worker document's directory (worker_document.h), inside the worker.
inline constexpr const char* kMetaDir = "/run/tpufleet/disk/meta";
inline constexpr const char* kDocumentName = "metadata.json";
/// The metadata server's address, on the worker's loopback like on GCE's VMs.
inline constexpr const char* kMetadataAddress = "169.254.169.254";
inline constexpr uint16_t kMetadataPort = 80;

/// Writes "tpufleet-emulator-worker: <m>" to the worker's log (stderr).
void Say(const std::string& m);

/// What a worker's init mounts from the machine.
struct WorkerPaths {
  std::string disk;     // the worker's disk (<state>/nodes/<id>/w<i>), absolute
  std::string state;    // the hosts' state dir, hidden from the worker once mounted
  std::string standin;  // the stand-in program, bound at kStandinPath; "" for none
  std::string bucket;   // the shared bucket directory, bound at kBucketMount; "" for none
  std::string hide;     // another directory to hide like state (the emulator's); "" for none
};

/// The worker's file system (see worker_init.h): private mounts, a root directory of
/// its own (worker_root.h; said, and the machine's kept read-only, where it cannot be
/// had), tmpfs /run with the disk at kDiskMount, overlays over /etc /usr /opt /var, the
/// disk's home, root, tmp and mnt over /home /root /tmp /mnt (where "/" has them), the
/// bucket (unless "") read-write at kBucketMount (nosuid, nodev, like a gcsfuse mount;
/// skipped, and said, when "/" has no directory there), a /dev of its own (null, zero,
/// full, random, urandom, tty, shm, pts), /proc (its sys, sysrq-trigger, irq and bus
/// read-only) and /sys (read-only), and the machine's program `standin` (unless "")
/// bound read-only at kStandinPath, over an empty file made on the worker's own /usr
/// (skipped, and said, when /usr is not the worker's). Then `extra` runs (the worker's
/// disk is at kDiskMount, /dev and /sys are mounted: the accelerators go in here).
/// Every other mount, the machine's directories in "/" first, is made read-only for the
/// worker (but "/" itself where it is the worker's own); then the state dir and `hide`
/// are hidden.
Status SetUpMounts(const WorkerPaths& paths, const std::function<Status()>& extra);

/// A directory on the worker's disk, which its root could change while it last ran: a
/// link (say, to the machine's /root or /etc) or file there is removed first, so no
/// mount below ever binds or overlays a directory of the machine's (issue 10).
/// REQUIRES: the worker is not running.
Status DiskDir(const std::string& path, mode_t mode);

/// A detached clone of the mount at `path` (open_tree): writable through the descriptor
/// (mkdirat, mknodat, symlinkat) after LockDown made the mount itself read-only to the
/// worker. REQUIRES: CAP_SYS_ADMIN (before DropCapabilities).
Result<UniqueFd> WritableClone(const char* path);

/// The machine's program `binary` bound read-only at `path` on the worker's /usr. What
/// the worker's root left at `path` (a link, say) is replaced by an empty file first, so
/// the bind lands there and nowhere else. REQUIRES: /usr is the worker's (its overlay).
Status BindProgram(const std::string& binary, const std::string& path);

/// Where every worker has the stand-in for a JAX program (emulator/standin).
inline constexpr const char* kStandinPath = "/usr/local/bin/tpu-standin";
/// Where every worker has the shared bucket directory: a stand-in for a Cloud Storage
/// bucket mounted with gcsfuse (a real TPU VM has no such mount unless its setup makes
/// one), so a checkpoint written on one node is seen by the nodes made after it.
inline constexpr const char* kBucketMount = "/gcs";

/// The capabilities a worker's processes may have, Docker's default set without
/// CAP_MKNOD, with CAP_NET_ADMIN: enough for sshd (setuid, setgid, chown, chroot,
/// audit), sudo, useradd, package installs, ping, and the nftables rules of the node
/// agent's metadata guard (issue 16), which a VM's root sets in its own network; the
/// worker's is a network namespace of its own, so they change nothing else. Gone are,
/// among others, CAP_SYS_ADMIN (mounts: the worker's root could uncover the machine's
/// /etc under its overlay), CAP_SYS_MODULE, CAP_SYS_RAWIO, CAP_SYS_BOOT, CAP_SYS_TIME,
/// CAP_DAC_READ_SEARCH (open_by_handle_at reaches any file of the machine) and
/// CAP_SYS_PTRACE.
inline constexpr int kWorkerCapabilities[] = {
    CAP_CHOWN,  CAP_DAC_OVERRIDE,     CAP_FOWNER,  CAP_FSETID,     CAP_KILL,
    CAP_SETGID, CAP_SETUID,           CAP_SETPCAP, CAP_NET_BIND_SERVICE,
    CAP_NET_RAW, CAP_NET_ADMIN,       CAP_SYS_CHROOT, CAP_AUDIT_WRITE, CAP_SETFCAP};

/// Drops every other capability from the bounding set (so nothing started from now on,
/// root or setuid, can have it) and from this process, but for CAP_MKNOD and
/// CAP_SYS_ADMIN, which the init keeps permitted (not effective, not inheritable: no
/// child can have them) to make the accelerators' and data disks' nodes again after a
/// device fault or an attach, and to mount data disks for the worker's root
/// (worker_disks.h). REQUIRES: the steps that need them
/// (mounts, network, hostname, binding port 80) are done.
Status DropCapabilities();

/// Raises (or lowers) a capability this process has permitted in its effective set.
Status SetInitCapability(int cap, bool effective);

/// lo up with kMetadataAddress/32; eth0 (moved in by the machine) with the worker's
/// address; IPv6 off on eth0. No default route: nothing beyond the bridge is reachable.
Status SetUpNetwork(const WorkerDocument& doc);

/// The worker's ed25519 host key, made at first boot (replacing the machine's keys that
/// show through the /etc overlay): "ssh-ed25519 AAAA…".
Result<std::string> EnsureHostKey(const std::string& hostname);

/// /etc/ssh/sshd_config: port 22, this host key only, no root login, no passwords, no
/// PAM, internal-sftp.
Status WriteSshdConfig();

/// /etc/hosts (localhost, metadata.google.internal, every worker of the node) and
/// /etc/hostname.
Status WriteHostsFiles(const WorkerDocument& doc);

/// Starts `sshd -D -e` (logging to the worker's log) with a clean signal mask.
Result<pid_t> StartSshd(const std::string& sshd_path);

/// True once something in this network namespace listens on TCP port 22.
bool Port22Listening();

}  // namespace tpufleet::emulator::hosts
