// `tpufleet doctor`: is every worker of a target fit to run jobs? On all workers at once
// (control/agent_client.h), each through its node agent:
//   - the agent's `doctor` op, told what the TPU API and the catalog say of the node
//     (accelerator type, chips per host, the workers' internal addresses), which checks
//     the devices, the TPU's lockfile and holders, the metadata server and free space
//     (agent/host/doctor_checks.h). One call per node, its workers at once: the request
//     is the same for all of them, so its expected worker number is -1 (not compared)
//     until the agent takes it from the "worker" that `call --worker N` adds;
//   - then `hello`, on the connections the first call opened, for the CLI's own checks:
//       agent          the agent answers at all (else nothing more can be asked);
//       agent_version  its binary's SHA-256 is the CLI's agent binary's (else "old agent
//                      version: run `tpufleet up` to replace it");
//       clock          the worker's clock against this machine's: the offset of its
//                      time_unix_ms from the middle of the call (half the round trip
//                      subtracted), which fails beyond kClockOffsetLimit plus the
//                      uncertainty of that middle (half the round trip).
// A worker whose agent does not answer or runs another version has its record's agent
// forgotten (WorkerRecord::agent_sha256), so the next `up` looks at it again and
// installs or starts it: that is what doctor's fix tells the user to run.
//
// Thread-safety: as World's members; runs on the calling thread.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "api/agent.h"
#include "control/targets.h"
#include "control/world.h"
#include "core/catalog.h"
#include "util/status.h"

namespace tpufleet {

/// A worker's clock may be off by this much before doctor fails it. Cloud TPU VMs keep
/// time with Google's NTP within milliseconds; a second means NTP is not working, and
/// then logs across workers and this machine no longer line up, tokens and signed URLs
/// start to fail, and checkpoints' timestamps mislead.
inline constexpr std::chrono::milliseconds kClockOffsetLimit{1000};
/// The agent's doctor op asks the metadata server three times (3 s each at most) and
/// scans /proc: well within this, on a worker that answers at all.
inline constexpr std::chrono::seconds kDoctorCallTimeout{30};
/// hello answers at once.
inline constexpr std::chrono::seconds kHelloCallTimeout{10};

/// One worker's checks: the CLI's (agent, agent_version, clock), then the agent's.
struct WorkerDiagnosis {
  WorkerTarget worker;
  std::vector<api::DoctorCheck> checks;
  bool ok() const;
};

/// Runs doctor on `workers` (ResolveTargets' order). The result is in that order but
/// with every failing worker first. Errors only when nothing could be asked (the fleet
/// key is unreadable); a worker that does not answer is a failed check of its own.
Result<std::vector<WorkerDiagnosis>> Doctor(World& world, const Catalog& catalog,
                                            const std::vector<WorkerTarget>& workers);

/// The clock check of a worker whose hello said `worker_ms`, asked between `sent_ms` and
/// `answered_ms` of this machine's clock (Unix ms).
api::DoctorCheck ClockCheck(int64_t worker_ms, int64_t sent_ms, int64_t answered_ms);

}  // namespace tpufleet
