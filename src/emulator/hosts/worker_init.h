// The init process of one emulated TPU worker (the program tpufleet-emulator-worker).
//
// NamespaceHosts starts it with clone(2) in new network, mount, UTS, IPC and PID
// namespaces, so it is PID 1 of the worker: when it exits, the kernel kills every
// process on the worker (sshd, user sessions, jobs started with nohup or tmux), and the
// mount and network namespaces, their mounts and the worker's veth go with them.
//
//   tpufleet-emulator-worker --disk=<state>/nodes/<id>/w<i> --state=<state> [--standin=<path>]
//                            [--bucket=<dir>] [--hide=<dir>]
//
// Run as mount.ext4, umount.ext4 (or ext2, ext3), the name it is bound under on every
// worker, it is instead the mount helper of worker_disks.h.
//
// Descriptors: 1 and 2 the worker's log (<disk>/worker.log); kStatusFd the boot status
// pipe; kGoFd a socket on which the machine sends one byte once the veth is in place;
// kLifelineFd the read end of a pipe whose write end only the emulator holds: when it
// hangs up the emulator is gone and the worker powers off at once.
//
// Boot: make mounts private; a root directory of its own on the worker's disk, with the
// machine's top-level entries in it (worker_root.h); a tmpfs /run; overlays over /etc,
// /usr, /opt and /var with their upper layers on the worker's disk (so what is installed
// or written there stays on this worker; /var only when the state dir is not under it,
// else just a private /var/tmp); the disk's home, root and tmp bound over /home, /root
// and /tmp; the bucket dir (--bucket, shared by every worker of every node) at /gcs; a
// /dev of its own with only harmless devices; a fresh /proc (kernel settings read-only)
// and /sys; the stand-in program (--standin) at /usr/local/bin/tpu-standin; the node's
// chips (accelerators.h) and data disks (worker_disks.h: nodes, the mount helper and its
// socket), which every document reload brings up to date; the machine's root detached;
// every other mount, the machine's, read-only (but "/" itself); the emulator's state dir
// (--state and --hide) hidden; the hostname. After
// "go": lo up with 169.254.169.254/32, eth0 with the worker's address. Then the host key
// (ssh-keygen at first boot, kept on the disk), sshd_config, /etc/hosts, the users from ssh-keys
// (guest_agent.h), the metadata server on 169.254.169.254:80, the capabilities a worker does not
// need dropped for good (DropCapabilities, so root on a worker is not root on the machine), sshd,
// and the units enabled in multi-user.target.wants (boot_units.h: how the node agent comes back
// after a reboot). When sshd listens it writes one line to the status pipe:
//
//   READY <host key type> <base64>        or        ERROR <message>
//
// Then it serves: metadata requests and long-polls; document changes (the machine
// replaces <disk>/meta/metadata.json and sends SIGHUP: reload, apply users, answer
// long-polls, then write the version to <disk>/meta/applied; a signal rather than
// inotify, whose per-user instance limit, 128 by default, would cap a machine at 128
// workers); sshd and unit restarts; reaping orphans. SIGTERM powers off: every process gets
// SIGTERM, and after kInitStopGrace (or when none is left) init exits.
//
// Thread-safety: a single-threaded program.
#pragma once

#include <chrono>

namespace tpufleet::emulator::hosts {

inline constexpr int kStatusFd = 3;
inline constexpr int kGoFd = 4;
inline constexpr int kLifelineFd = 5;

/// Time the worker's processes get between SIGTERM and the end, like a VM's shutdown
/// (JAX treats SIGTERM as the preemption notice and may checkpoint in it); short so a
/// halt of many workers stays quick.
inline constexpr std::chrono::seconds kInitStopGrace{2};
/// How long init waits for the machine's "go" (the veth): one `ip -batch` for the node.
inline constexpr std::chrono::seconds kGoTimeout{120};
/// How long sshd may take to listen: milliseconds normally, seconds on a loaded machine.
inline constexpr std::chrono::seconds kSshdStartTimeout{60};
/// A crashed sshd is restarted after this, like systemd's RestartSec for ssh.service.
inline constexpr std::chrono::seconds kSshdRestartDelay{1};

/// The program's main.
int WorkerInitMain(int argc, char** argv);

}  // namespace tpufleet::emulator::hosts
