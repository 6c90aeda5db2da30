// The boot steps of a worker's init (worker_init.h), each run by the init inside the
// worker's new namespaces: its file system, network, host key, sshd configuration and
// /etc/hosts, and starting sshd.
//
// Thread-safety: single-threaded program; these change the calling process's mounts,
// network namespace and files.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "emulator/hosts/worker_document.h"
#include "util/status.h"

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

/// The worker's file system (see worker_init.h): private mounts, tmpfs /run with the
/// disk at kDiskMount, overlays over /etc /usr /opt /var, the disk's home, root and tmp
/// over /home /root /tmp, the state dir hidden, /dev/shm, /dev/pts, /proc and /sys.
Status SetUpMounts(const std::string& disk, const std::string& state_dir);

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

/// `bytes` random bytes from /dev/urandom, as hex.
std::string RandomHex(size_t bytes);

}  // namespace tpufleet::emulator::hosts
