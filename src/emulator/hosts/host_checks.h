// The machine-side checks and clean-up of NamespaceHosts: what a node spec and a state
// dir may be, whether this machine can host workers at all, whether workers' sshds
// answer, and finding what a crashed emulator left.
//
// Thread-safety: stateless functions; safe from any thread.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

#include "emulator/worker_hosts.h"
#include "util/clock.h"
#include "util/status.h"

namespace tpufleet::emulator::hosts {

inline constexpr const char* kWorkerProgram = "tpufleet-emulator-worker";
/// The stand-in for a JAX program on a TPU (emulator/standin), installed beside it.
inline constexpr const char* kStandinProgram = "tpu-standin";
/// A node larger than any TPU slice's worker count (v5p-12288 has 1536) is a mistake.
inline constexpr int kMaxWorkersPerNode = 4096;
/// How often waits for inits, acks and sshds poll: fast next to a boot, cheap for 256.
inline constexpr std::chrono::milliseconds kHostPollInterval{10};
/// A TCP probe of a worker's sshd that gets no answer in this long is retried.
inline constexpr std::chrono::milliseconds kProbeAttempt{250};
/// How long the stale-worker clean-up waits for killed inits to leave /proc.
inline constexpr std::chrono::milliseconds kStaleKillTimeout{5000};

/// InvalidArgument unless the spec is usable: id of 1-64 [a-z0-9-] (it names a
/// directory), a sane accelerator type, 1..kMaxWorkersPerNode workers.
Status ValidateNodeSpec(const NodeHostSpec& spec);

/// InvalidArgument unless `dir` (absolute, normalised) may hold worker disks: not under
/// /etc, /usr, /opt, /run, /proc, /sys, /dev or /boot, and not a parent of what every
/// worker mounts over.
Status ValidateStateDir(const std::string& dir);

/// OK when `dir` does not exist, or is a directory (or a link to one) that this
/// process's user owns and that neither its group nor others may write. Root makes
/// mounts, disks and files under it, so a directory someone else made (or may write)
/// is refused, naming its owner or mode (FailedPrecondition), never adopted.
Status CheckStateDirOwner(const std::string& dir);

/// Makes `dir` the workers' shared bucket (NamespaceHostsOptions::bucket_dir): a
/// directory of this process's user, mode 1777 like /tmp (every worker's users write
/// there), placed as a state dir may be (ValidateStateDir); and the empty directory
/// kBucketMount on the machine's root, where every worker mounts it (a worker's / is the
/// machine's; it stays, empty, for the next emulator). FailedPrecondition, saying what
/// is wrong, for a link or a file at either place or another user's bucket dir.
Status MakeBucketDir(const std::string& dir);

/// OK when this machine can host workers: root or CAP_SYS_ADMIN + CAP_NET_ADMIN, the
/// programs installed, and namespaces allowed (tried once). FailedPrecondition saying
/// what to do otherwise.
Status CheckMachineSupport();

/// Waits until port 22 of every address has accepted a TCP connection once (a booting
/// worker's sshd listens; no SSH is spoken: ssh/runner.h's ProbeSsh reads the banner of
/// one server); TimeoutError naming the silent ones at `deadline`.
Status WaitForSshdsListening(const std::vector<std::string>& addresses, Clock& clock,
                             Clock::MonoTime deadline);

/// Takes the flock that says "an emulator uses this state dir" (<dir>/hosts.lock); its
/// fd. FailedPrecondition when another live emulator holds it.
Result<int> LockStateDir(const std::string& state_dir);

/// SIGKILLs every worker init under `state_dir` (PID 1 of its namespace, running the
/// worker program with --disk=<state_dir>/nodes/…) and waits for them to go.
/// REQUIRES: the caller holds LockStateDir(state_dir).
void KillStaleInits(const std::string& state_dir);

}  // namespace tpufleet::emulator::hosts
