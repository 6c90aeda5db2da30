// NamespaceHosts: the real WorkerHosts. Every emulated TPU worker is a real host.
//
// Each worker is an init process (tpufleet-emulator-worker, worker_init.h) that is PID 1
// of its own PID, network, mount, UTS and IPC namespaces, started by InitSpawner. It
// has:
//   - an address in this emulator's /18 of 198.18.0.0/15 on `eth0`, a veth whose other
//     end is on the bridge `tpfbr<slot>` (host_network.h), reachable from the machine
//     and from the node's other workers, and nothing else;
//   - its own disk, <state_dir>/nodes/<node id>/w<i>/: the upper layers of overlays over
//     /etc, /usr, /opt and /var, and the contents of /home, /root and /tmp. Users, files
//     and lock files on one worker are on no other worker and not on the machine; the
//     disk survives Halt and Boot (stop/start, maintenance) and goes with Destroy;
//   - a real OpenSSH sshd with its own ed25519 host key (made at first boot, kept on
//     the disk), no root login, no passwords: keys from the node's `ssh-keys` metadata
//     only, applied by a guest agent (guest_agent.h) at boot and on every SetMetadata;
//   - the shared bucket (options' bucket_dir) at /gcs, read-write, the same directory
//     on every worker of every node, kept when a node is destroyed;
//   - a metadata server at 169.254.169.254:80 (metadata_server.h) serving the worker
//     document (worker_document.h) that this class writes;
//   - the node's data disks as /dev/sdb, /dev/sdc, …: loop devices over their images,
//     made while the node runs (loop_devices.h), which the worker's root can mount
//     through util-linux's mount(8) and nothing else (worker_disks.h);
//   - a root that is not the machine's (worker_setup.h): the rest of the machine's file
//     system is read-only, /dev has only harmless devices, kernel settings are
//     read-only, and no process has capabilities beyond Docker's default set.
//
// Lifetime and clean-up. A halted worker is a dead init: the kernel kills everything on
// it, then frees its namespaces, mounts and veth. Inits die with the emulator however it
// ends (death signal from a long-lived thread, plus a lifeline pipe). The bridge lives
// while this object does; Shutdown (and the destructor) halt every worker and delete
// it. CleanStale handles what a SIGKILLed emulator could still leave: it kills inits of
// workers under a state dir and deletes the bridges of slots no live emulator holds.
// Create calls it for its own state dir, so a later start cleans up after a crash.
//
// Destroy moves a node's disk to <state_dir>/trash at once and a background thread
// deletes it (freeing thousands of files can take tens of seconds on a disk with online
// discard); what is left at shutdown is deleted after the next Create.
//
// Only one NamespaceHosts may use a state dir at a time (an flock on
// <state_dir>/hosts.lock); several emulators on one machine use different slots.
//
// Thread-safety: every method may be called from any thread; calls for one node are
// also serialised here. Boot of a large node takes seconds; calls for other nodes go
// on meanwhile.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "emulator/worker_hosts.h"
#include "util/clock.h"
#include "util/status.h"

namespace tpufleet::emulator {

namespace hosts {
class HostNetwork;
class InitSpawner;
}  // namespace hosts

/// How long Boot waits for a node's sshds: this, plus kBootTimeoutPerWorker each
/// (first boots make host keys and users; 256 workers take ~20 s on 2 cores).
inline constexpr std::chrono::seconds kBootTimeoutBase{30};
inline constexpr std::chrono::milliseconds kBootTimeoutPerWorker{250};
/// How long Halt waits for inits to power off after SIGTERM before SIGKILL: their own
/// grace for the worker's processes (kInitStopGrace, 2 s) plus a margin.
inline constexpr std::chrono::seconds kHaltTimeout{4};
/// How long SetMetadata and Notify wait for every running worker to load the new
/// document (a guest agent adding users runs useradd for each: tens of milliseconds).
inline constexpr std::chrono::seconds kApplyTimeout{20};

struct NamespaceHostsOptions {
  /// Absolute directory for the workers' disks (<state_dir>/nodes/...); created if
  /// missing. Must not be under /etc, /usr, /opt, /run, /proc, /sys or /dev, nor be a
  /// parent of the directories a worker mounts over. Must be this process's user's and
  /// unwritable by its group and others (hosts::CheckStateDirOwner).
  std::string state_dir;
  /// The tpufleet-emulator-worker program (DefaultWorkerBinary() next to the emulator).
  std::string worker_binary;
  /// The stand-in for a JAX program (tpu-standin, DefaultStandinBinary()), bound
  /// read-only at /usr/local/bin/tpu-standin on every worker; "" for none.
  std::string standin_binary;
  /// An absolute directory every worker of every node mounts read-write at /gcs, as a
  /// Cloud Storage bucket mounted with gcsfuse: what one node writes there outlives it
  /// and is seen by the nodes made after it. Created (mode 1777) if missing, with the
  /// mount point /gcs on the machine (hosts::MakeBucketDir); "" for none. The emulator
  /// gives <its state dir>/gcs, removed with the rest by `emulator stop`.
  std::string bucket_dir;
  /// An absolute directory the workers must not see, hidden as state_dir is: the
  /// emulator's own state dir, which holds its token (whoever has it may patch any
  /// node's ssh-keys). Where a worker's /home, /root or /tmp covers it anyway, this
  /// changes nothing; elsewhere (/srv, /var/lib) the worker's root could read it. "" for
  /// none.
  std::string hidden_dir;
};

class NamespaceHosts final : public WorkerHosts {
 public:
  /// Checks the machine (CheckSupport), locks the state dir and cleans what a crashed
  /// emulator left there (CleanStale). The bridge is made at the first Boot.
  /// FailedPrecondition, with what to do, when this machine cannot host workers.
  static Result<std::unique_ptr<NamespaceHosts>> Create(const NamespaceHostsOptions& options,
                                                        Clock& clock);

  /// Shutdown().
  ~NamespaceHosts() override;

  Result<std::vector<WorkerInfo>> Boot(const NodeHostSpec& node, bool new_addresses) override;
  Status SetMetadata(const std::string& node,
                     const std::map<std::string, std::string>& metadata) override;
  Status SetProjectMetadata(const std::string& project,
                            const std::map<std::string, std::string>& metadata) override;
  Status Notify(const std::string& node, HostEvent event) override;
  Status Halt(const std::string& node) override;
  Status SetCutOff(const std::string& node, int worker, bool cut) override;
  Status SetDataDisks(const std::string& node, const std::vector<AttachedDiskSpec>& disks) override;
  Status SetDeviceRemoved(const std::string& node, int worker, int device, bool removed) override;
  Status Destroy(const std::string& node) override;

  /// Halts every worker and deletes the bridge; the disks stay for a later Boot (by
  /// this or a later emulator on the same state dir). Afterwards Boot fails.
  /// Idempotent.
  void Shutdown();

  /// The pid, in the machine's PID namespace, of each worker's init (-1 for a worker
  /// not running): `nsenter -t PID -n …` runs a command in that worker's network, e.g.
  /// to reach its metadata server. For tests and debugging.
  std::vector<pid_t> InitPids(const std::string& node) const;

  /// This emulator's bridge ("tpfbr0"), or "" before the first Boot.
  std::string bridge() const;

  /// OK when this machine can host workers: root or CAP_SYS_ADMIN + CAP_NET_ADMIN,
  /// namespaces allowed, and ip, sshd, ssh-keygen and useradd installed.
  static Status CheckSupport();

  /// Kills the inits of workers under `state_dir` (found in /proc: PID 1 of their
  /// namespace, running tpufleet-emulator-worker with --disk under state_dir) and
  /// deletes the bridges and veths of every slot no live emulator holds.
  /// FailedPrecondition when a live emulator holds `state_dir`, or when it is someone
  /// else's (hosts::CheckStateDirOwner).
  static Status CleanStale(const std::string& state_dir);

  /// tpufleet-emulator-worker in the directory of the running program.
  static std::string DefaultWorkerBinary();
  /// tpu-standin in the directory of the running program.
  static std::string DefaultStandinBinary();

 private:
  struct Worker;
  struct Node;

  NamespaceHosts(NamespaceHostsOptions options, Clock& clock, int lock_fd);

  std::shared_ptr<Node> FindNode(const std::string& name) const;
  /// The node `name`, its op_mu locked into *op: NotFound without it, InvalidArgument
  /// when it has no worker `worker`.
  Result<std::shared_ptr<Node>> LockNodeWithWorker(const std::string& name, int worker,
                                                   std::unique_lock<std::mutex>* op) const;
  Status WriteDocuments(Node& node);
  void SignalReload(Node& node);
  Status WaitApplied(Node& node);
  Status BootWorkers(Node& node);
  void KillWorkers(Node& node);
  Status HaltLocked(Node& node);
  std::vector<WorkerInfo> Infos(const Node& node) const;
  void LoadNodeRecords();
  Status MoveToTrash(const std::string& dir, const std::string& id);
  void EmptyTrash();

  const NamespaceHostsOptions options_;
  Clock& clock_;
  int lock_fd_;
  std::unique_ptr<hosts::InitSpawner> spawner_;

  mutable std::mutex mu_;
  std::shared_ptr<hosts::HostNetwork> network_;         // guarded by mu_; null until Boot
  std::map<std::string, std::shared_ptr<Node>> nodes_;  // guarded by mu_; by node name
  bool shut_down_ = false;                              // guarded by mu_
  // Every project's common instance metadata, by project id; guarded by mu_.
  std::map<std::string, std::map<std::string, std::string>> project_metadata_;

  std::mutex trash_mu_;
  std::condition_variable trash_cv_;
  uint64_t trash_serial_ = 0;  // guarded by trash_mu_
  bool trash_stop_ = false;    // guarded by trash_mu_
  std::thread trash_thread_;   // runs EmptyTrash
};

}  // namespace tpufleet::emulator
