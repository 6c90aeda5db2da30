#include "agent/host/nvml.h"

#include <dlfcn.h>
#include <gnu/libc-version.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdint>

#include "util/file.h"

namespace tpufleet::agent::host {
namespace {

// NVML's types, as nvml.h (API version 12/13) declares them.
using nvmlReturn_t = int;
using nvmlDevice_t = struct nvmlDevice_st*;
constexpr nvmlReturn_t kNvmlSuccess = 0;
constexpr nvmlReturn_t kNvmlInsufficientSize = 7;

struct nvmlUtilization_t {
  unsigned int gpu;
  unsigned int memory;
};
struct nvmlMemory_t {  // v1, the struct of the unversioned nvmlDeviceGetMemoryInfo
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};
struct nvmlProcessInfo_v2_t {  // the struct of nvmlDeviceGetComputeRunningProcesses_v3
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
};

// dlerror's text on one line.
std::string OneLine(const char* text) {
  std::string s = text != nullptr ? text : "unknown error";
  std::replace(s.begin(), s.end(), '\n', ' ');
  return s;
}

// The host's glibc version, or a reason ("" version) when it cannot be told.
Result<std::string> HostGlibc(const std::string& explicit_path) {
  std::vector<std::string> paths;
  if (!explicit_path.empty()) {
    paths.push_back(explicit_path);
  } else {
    paths.assign(std::begin(kHostLibcPaths), std::end(kHostLibcPaths));
  }
  for (const std::string& p : paths) {
    Result<std::string> bytes = ReadFile(p, kMaxLibcBytes);
    if (bytes.status().code() == StatusCode::kNotFound) {
      continue;
    }
    if (!bytes.ok()) {
      return bytes.status();
    }
    std::string v = GlibcVersionOf(*bytes);
    if (v.empty()) {
      return FailedPreconditionError(p + " names no glibc release");
    }
    return v;
  }
  return NotFoundError("no libc.so.6 found");
}

}  // namespace

// The calls Open resolves; all required.
struct Nvml::Api {
  nvmlReturn_t (*init)();
  nvmlReturn_t (*shutdown)();
  nvmlReturn_t (*count)(unsigned int*);
  nvmlReturn_t (*handle_by_index)(unsigned int, nvmlDevice_t*);
  nvmlReturn_t (*utilization)(nvmlDevice_t, nvmlUtilization_t*);
  nvmlReturn_t (*memory)(nvmlDevice_t, nvmlMemory_t*);
  nvmlReturn_t (*processes)(nvmlDevice_t, unsigned int*, nvmlProcessInfo_v2_t*);
  nvmlReturn_t (*minor_number)(nvmlDevice_t, unsigned int*);  // optional: may be null
};

std::string GlibcVersionOf(std::string_view libc_bytes) {
  constexpr std::string_view kMarker = "release version ";
  size_t at = libc_bytes.find(kMarker);
  if (at == std::string_view::npos) {
    return "";
  }
  std::string_view rest = libc_bytes.substr(at + kMarker.size());
  size_t end = 0;
  while (end < rest.size() && end < 16 &&
         ((rest[end] >= '0' && rest[end] <= '9') || rest[end] == '.')) {
    ++end;
  }
  std::string v(rest.substr(0, end));
  while (!v.empty() && v.back() == '.') {
    v.pop_back();
  }
  return v;
}

std::string NvmlErrorText(int code) {
  const char* what = nullptr;
  switch (code) {
    case 1: what = "NVML is not initialised"; break;
    case 2: what = "invalid argument"; break;
    case 3: what = "not supported on this device"; break;
    case 4: what = "no permission"; break;
    case 6: what = "not found"; break;
    case 9: what = "the NVIDIA driver is not loaded"; break;
    case 12: what = "a library NVML needs was not found"; break;
    case 15: what = "the GPU has fallen off the bus or is lost"; break;
    case 18: what = "the driver and the library are of different versions"; break;
    default: what = "error"; break;
  }
  return std::string(what) + " (NVML error " + std::to_string(code) + ")";
}

Nvml::Nvml() = default;

Nvml::~Nvml() {
  if (handle_ != nullptr) {
    api_->shutdown();
    dlclose(handle_);
  }
}

std::unique_ptr<Nvml> Nvml::Open(const NvmlOptions& options) {
  std::unique_ptr<Nvml> n(new Nvml());
  struct stat st {};
  if (options.library.empty() && stat(options.driver_dir.c_str(), &st) != 0) {
    n->reason_ = "no GPUs: no NVIDIA driver on this host (no " + options.driver_dir + ")";
    return n;
  }
  // A static glibc's dlopen next to another glibc: see the header.
  Result<std::string> host = HostGlibc(options.host_libc);
  std::string ours = gnu_get_libc_version();
  if (!host.ok()) {
    n->reason_ = "no GPUs: NVML needs glibc " + ours + " and this host's cannot be told (" +
                 host.status().message() + ")";
    return n;
  }
  if (*host != ours) {
    n->reason_ = "no GPUs: NVML needs glibc " + ours + ", this host has " + *host;
    return n;
  }

  std::vector<std::string> names;
  if (!options.library.empty()) {
    names.push_back(options.library);
  } else {
    names.assign(std::begin(kNvmlLibraryNames), std::end(kNvmlLibraryNames));
  }
  void* h = nullptr;
  std::string first_error;
  for (const std::string& name : names) {
    h = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (h != nullptr) {
      n->library_ = name;
      break;
    }
    if (first_error.empty()) {
      first_error = OneLine(dlerror());
    }
  }
  if (h == nullptr) {
    n->reason_ = "no GPUs: cannot load NVML: " + first_error;
    return n;
  }

  auto api = std::make_unique<Api>();
  std::string missing;
  auto resolve = [&](auto& fn, const char* symbol, bool required) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(h, symbol));
    if (fn == nullptr && required && missing.empty()) {
      missing = symbol;
    }
  };
  resolve(api->init, "nvmlInit_v2", true);
  resolve(api->shutdown, "nvmlShutdown", true);
  resolve(api->count, "nvmlDeviceGetCount_v2", true);
  resolve(api->handle_by_index, "nvmlDeviceGetHandleByIndex_v2", true);
  resolve(api->utilization, "nvmlDeviceGetUtilizationRates", true);
  resolve(api->memory, "nvmlDeviceGetMemoryInfo", true);
  resolve(api->processes, "nvmlDeviceGetComputeRunningProcesses_v3", true);
  resolve(api->minor_number, "nvmlDeviceGetMinorNumber", false);
  if (!missing.empty()) {
    n->reason_ = "no GPUs: " + n->library_ + " has no " + missing + " (an NVML too old)";
    dlclose(h);
    return n;
  }
  if (nvmlReturn_t r = api->init(); r != kNvmlSuccess) {
    n->reason_ = "no GPUs: nvmlInit_v2: " + NvmlErrorText(r);
    dlclose(h);
    return n;
  }
  n->handle_ = h;
  n->api_ = std::move(api);
  return n;
}

Result<std::vector<ChipSample>> Nvml::Read() {
  std::vector<ChipSample> chips;
  if (!ok()) {
    return chips;
  }
  unsigned int count = 0;
  if (nvmlReturn_t r = api_->count(&count); r != kNvmlSuccess) {
    return UnavailableError("nvmlDeviceGetCount_v2: " + NvmlErrorText(r));
  }
  count = std::min(count, kMaxGpus);
  std::vector<nvmlProcessInfo_v2_t> infos;
  for (unsigned int i = 0; i < count; ++i) {
    ChipSample c;
    c.index = static_cast<int>(i);
    c.kind = "gpu";
    nvmlDevice_t dev = nullptr;
    unsigned int minor = i;
    if (api_->handle_by_index(i, &dev) != kNvmlSuccess) {
      c.device = "/dev/nvidia" + std::to_string(minor);
      chips.push_back(std::move(c));
      continue;
    }
    if (api_->minor_number != nullptr && api_->minor_number(dev, &minor) != kNvmlSuccess) {
      minor = i;
    }
    c.device = "/dev/nvidia" + std::to_string(minor);
    if (nvmlUtilization_t u{}; api_->utilization(dev, &u) == kNvmlSuccess) {
      c.duty_cycle_percent = u.gpu;
      c.hbm_bandwidth_percent = u.memory;
    }
    if (nvmlMemory_t m{}; api_->memory(dev, &m) == kNvmlSuccess) {
      c.hbm_used_bytes = static_cast<int64_t>(m.used);
      c.hbm_total_bytes = static_cast<int64_t>(m.total);
    }
    // Count first; then the list, with room for a few that start meanwhile.
    unsigned int n = 0;
    nvmlReturn_t r = api_->processes(dev, &n, nullptr);
    if (r == kNvmlInsufficientSize) {
      n = std::min(n + kGpuProcessSlack, kMaxGpuProcesses);
      infos.assign(n, nvmlProcessInfo_v2_t{});
      r = api_->processes(dev, &n, infos.data());
      if (r == kNvmlSuccess) {
        infos.resize(std::min<size_t>(n, infos.size()));
        std::vector<int> pids;
        for (const nvmlProcessInfo_v2_t& p : infos) {
          pids.push_back(static_cast<int>(p.pid));
        }
        std::sort(pids.begin(), pids.end());
        pids.erase(std::unique(pids.begin(), pids.end()), pids.end());
        for (int pid : pids) {
          c.holders.push_back(ChipHolder{pid, "", "", ""});
        }
      }
    }
    chips.push_back(std::move(c));
  }
  return chips;
}

}  // namespace tpufleet::agent::host
