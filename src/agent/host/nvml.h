// Nvml: a GPU machine's accelerators, read through NVIDIA's management library
// (libnvidia-ml), which the agent loads at run time so that one binary serves TPU VMs
// and lab GPU servers alike: a machine without the library simply has no GPUs.
//
// Open loads the library with dlopen (libnvidia-ml.so.1, then libnvidia-ml.so, as the
// driver installs them; or the one path a test or `serve --nvml PATH` names), resolves
// the calls below with dlsym and calls nvmlInit_v2. The structs are declared in nvml.cc,
// not taken from nvml.h (which the build machine need not have); each versioned call is
// paired with the struct of its version (reference/monitoring.md §5: a wrong pairing
// corrupts the results).
//   nvmlInit_v2, nvmlShutdown, nvmlDeviceGetCount_v2, nvmlDeviceGetHandleByIndex_v2,
//   nvmlDeviceGetUtilizationRates, nvmlDeviceGetMemoryInfo (v1: used includes reserved),
//   nvmlDeviceGetComputeRunningProcesses_v3; nvmlDeviceGetMinorNumber, when the library
//   has it, names the device node (/dev/nvidiaN; else N is the index).
//
// Whatever goes wrong, Open returns a reader: one that has no GPUs and says why in one
// line ("no GPUs: …"), never a crash. In particular the agent is a static binary, and a
// static glibc's dlopen works only when the host's libc.so.6 is the very version it was
// linked with (a different one is loaded beside the static copy and crashes or fails).
// So before any dlopen Open compares gnu_get_libc_version() with the version in the
// host's libc.so.6 and, when they differ, stays away: "no GPUs: NVML needs glibc 2.36,
// this host has 2.35". Without an explicit library, a host with no NVIDIA driver
// (/proc/driver/nvidia absent) is told apart first, so a TPU VM does not blame its glibc.
//
// A sample (Read) is per GPU: duty = utilization.gpu (the share of the last period in
// which a kernel ran: a duty cycle, not SM occupancy), hbm = memory used/total,
// bandwidth = utilization.memory, holders = the pids of its compute processes (host
// pids), pid only: the caller names their user, command and job as it does a TPU's
// holders. A call that fails for one GPU (utilization on a MIG GPU: not supported)
// leaves that measurement absent.
//
// Thread-safety: thread-compatible. One Nvml may be used from any one thread at a time
// (the agent's sampler thread); the loaded library is released when it is destroyed.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/worker_sample.h"
#include "util/status.h"

namespace tpufleet::agent::host {

/// The names the driver installs the library under, tried in this order.
inline constexpr const char* kNvmlLibraryNames[] = {"libnvidia-ml.so.1", "libnvidia-ml.so"};
/// Where the host's libc.so.6 is looked for (Debian/Ubuntu, then Red Hat layouts).
inline constexpr const char* kHostLibcPaths[] = {
    "/lib/x86_64-linux-gnu/libc.so.6", "/usr/lib/x86_64-linux-gnu/libc.so.6",
    "/lib/aarch64-linux-gnu/libc.so.6", "/lib64/libc.so.6", "/usr/lib64/libc.so.6"};
/// libc.so.6 is a few MiB; a bound in case a path names something else.
inline constexpr size_t kMaxLibcBytes = 64 * 1024 * 1024;
/// More GPUs than any machine has: the count NVML reports is capped here.
inline constexpr unsigned kMaxGpus = 64;
/// Processes come and go between the count call and the list call: room for this many
/// more; and at most kMaxGpuProcesses listed per GPU.
inline constexpr unsigned kGpuProcessSlack = 8;
inline constexpr unsigned kMaxGpuProcesses = 1024;

struct NvmlOptions {
  /// "" tries kNvmlLibraryNames; otherwise this path alone (tests, `serve --nvml PATH`).
  std::string library{};
  /// "" looks for the host's libc.so.6 in kHostLibcPaths; otherwise this file (tests).
  std::string host_libc{};
  /// Consulted only when `library` is "": no such directory, no driver, no GPUs.
  std::string driver_dir = "/proc/driver/nvidia";
};

class Nvml {
 public:
  /// Loads and initialises NVML as the header says. Never null; see ok() and reason().
  static std::unique_ptr<Nvml> Open(const NvmlOptions& options = {});
  Nvml(const Nvml&) = delete;
  Nvml& operator=(const Nvml&) = delete;
  ~Nvml();  // nvmlShutdown and dlclose, when Open got that far

  /// True when NVML is loaded and initialised (it may still have 0 GPUs).
  bool ok() const { return handle_ != nullptr; }
  /// Why there are no GPUs, one line starting "no GPUs: "; "" when ok().
  const std::string& reason() const { return reason_; }
  /// The library that was loaded ("" when none).
  const std::string& library() const { return library_; }

  /// One sample of every GPU, by NVML index: kind "gpu", index i, device /dev/nvidiaN.
  /// Empty when !ok(). Unavailable when NVML cannot count its GPUs any more (the driver
  /// went away), with NVML's error.
  Result<std::vector<ChipSample>> Read();

 private:
  struct Api;
  Nvml();

  void* handle_ = nullptr;  // dlopen's, while NVML is initialised
  std::unique_ptr<Api> api_;
  std::string library_;
  std::string reason_;
};

/// The glibc release named in a libc.so.6's bytes ("2.36" from "… release version
/// 2.36."); "" when there is none (not glibc).
std::string GlibcVersionOf(std::string_view libc_bytes);

/// What NVML's return code `code` means, as "the NVIDIA driver is not loaded (NVML
/// error 9)".
std::string NvmlErrorText(int code);

}  // namespace tpufleet::agent::host
