// tpu-standin: the stand-in for a JAX program on a TPU, installed on every emulated
// worker at /usr/local/bin/tpu-standin (emulator/hosts/worker_setup.h), so the node
// agent's jobs, its "one process per TPU" rule and `doctor` meet what a real training
// run does to a TPU VM.
//
// At start it does what libtpu does (libtpu_lock.h): the lock on /tmp/libtpu_lockfile,
// as the environment says, refusing in libtpu's words when another process has it.
// Then it finds the chips as libtpu does, in sysfs (Google's vendor id, the family by
// PCI device id; VFIO families through the iommu_group link), and opens every node,
// or those TPU_VISIBLE_CHIPS names. On the VFIO families (v5e and later) a node open in
// another process is refused, as the kernel refuses a second open of a VFIO group: the
// emulator has no such driver, so the stand-in takes an flock on each node it opens.
// It prints TPU_WORKER_ID and TPUFLEET_RANK, then `restarts N` (TPUFLEET_RESTARTS: how
// often `tpufleet serve` restarted this job, 0 when unset), then one line per step.
//
//   tpu-standin [--burn | --idle | --input-bound] [--steps N] [--step-ms MS]
//               [--checkpoint-dir D [--checkpoint-every K]] [--crash-after SECONDS]
//               [--orphan] [--duty-cycle PERCENT] [--hbm-gib GIB]
//               [--hbm-bandwidth PERCENT] [--hlo-queue N]
//
// Modes: --burn (the default) keeps the TPU busy and the host idle (each step waits for
// the device); --input-bound keeps the host's CPU busy and starves the TPU (low duty
// cycle); --idle holds the TPU and does nothing. --steps N stops after step N (else it
// runs until killed). With --checkpoint-dir it writes D/step_S every K steps (default
// 10) and, at start, resumes after the newest, printing "resumed from step S".
// --crash-after T SIGKILLs itself after T seconds: the lockfile stays, unlocked.
// --orphan forks a child that keeps the devices open in a session of its own, and the
// parent exits 1: the lockfile is left unlocked, the devices held by no job.
// SIGTERM (preemption, cancel) writes a checkpoint when there is a directory and exits
// 143. A clean end (all steps, or SIGTERM) removes the lockfile it locked, as libtpu's
// atexit handler does in the versions that have one.
//
// While it runs it serves libtpu's runtime metrics (standin_metrics.h) on 127.0.0.1 at
// the first port of TPU_RUNTIME_METRICS_PORTS, else 8431, and says so; --duty-cycle,
// --hbm-gib, --hbm-bandwidth and --hlo-queue are what it reports for each chip it holds
// (per mode by default). A port in use ends it, as it ends libtpu's process.
//
// Thread-safety: a single-threaded program, but for the metrics server's threads (gRPC's,
// started after SIGTERM is blocked, so they never take it).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "emulator/standin/libtpu_lock.h"
#include "util/status.h"

namespace tpufleet::emulator::standin {

/// Where the chips are found (sysfs) and, for VFIO families, their groups' nodes.
inline constexpr const char* kPciDevices = "/sys/bus/pci/devices";
/// Exit code after SIGTERM, as a process killed by it reports to a shell.
inline constexpr int kExitTerminated = 143;

enum class Mode { kBurn, kIdle, kInputBound };

struct StandinOptions {
  Mode mode = Mode::kBurn;
  int64_t steps = 0;  // 0: until killed
  std::chrono::milliseconds step_time{100};  // a step; 10 log lines a second
  std::string checkpoint_dir;                // "": no checkpoints
  int64_t checkpoint_every = 10;             // steps between checkpoints
  std::optional<std::chrono::milliseconds> crash_after;
  bool orphan = false;
  std::optional<double> duty_cycle;     // percent; default by mode
  std::optional<double> hbm_gib;        // per chip; default by mode
  std::optional<double> hbm_bandwidth;  // percent; default by mode
  std::optional<int64_t> hlo_queue;     // programs queued per chip; default by mode
};

/// argv[1..]: the flags above. InvalidArgument with one clear message otherwise.
Result<StandinOptions> ParseStandinArgs(const std::vector<std::string>& args);

/// TPUFLEET_RESTARTS's value (nullopt: unset) as a count: 0 when unset, else a whole
/// number from 0; InvalidArgument naming the variable otherwise.
Result<int64_t> ParseRestarts(const std::optional<std::string>& value);

/// One chip as the program finds it.
struct Chip {
  int index = 0;            // 0, 1, … in PCI address order
  std::string pci_address;  // "0000:00:04.0"
  std::string family;       // "v4"
  std::string node;         // "/dev/accel0", "/dev/vfio/0"
  bool vfio = false;
  int hbm_gib = 0;
};

/// The chips under `pci_devices` (a sysfs devices directory), in address order; one
/// entry per chip (function 0) for families with several functions per chip.
std::vector<Chip> FindChips(const std::string& pci_devices);

/// The program: exit code (0 done, 1 refused or failed, 2 bad usage, 143 on SIGTERM).
int StandinMain(int argc, char** argv);

}  // namespace tpufleet::emulator::standin
