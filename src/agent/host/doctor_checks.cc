#include "agent/host/doctor_checks.h"

#include <sys/stat.h>
#include <sys/statvfs.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "util/strings.h"

namespace tpufleet::agent::host {
namespace {

DoctorCheck Fail(const std::string& name, std::string detail, std::string fix) {
  return {name, false, std::move(detail), std::move(fix)};
}

// "pid 4242 (alice): python3 train.py; pid 77 (bob): …"
std::string Claimants(const std::vector<TpuClaimant>& claimants) {
  std::vector<std::string> parts;
  for (const TpuClaimant& c : claimants) {
    parts.push_back(c.process.pid > 0 ? "pid " + std::to_string(c.process.pid) + " (" +
                                            c.process.user + "): " + c.process.command
                                      : "a process this agent cannot see");
  }
  return Join(parts, "; ");
}

std::string Compared(const std::string& what, const std::string& metadata, const std::string& api) {
  return "metadata says " + what + " " + (metadata.empty() ? "(nothing)" : metadata) +
         ", the TPU API " + api;
}

}  // namespace

DoctorCheck CheckAccelerators(const std::vector<Accelerator>& accelerators,
                              const std::vector<std::string>& missing_nodes,
                              const DoctorExpect& expect) {
  const std::string name = "accelerators";
  const int chips = ChipCount(accelerators);
  std::vector<std::string> nodes;
  for (const Accelerator& a : accelerators) {
    std::string node = a.path.empty() ? a.pci_address + " (no device node)" : a.path;
    if (std::find(nodes.begin(), nodes.end(), node) == nodes.end()) {
      nodes.push_back(std::move(node));  // tpu7x: two functions, one group
    }
  }
  // "4 v4 TPU chips (/dev/accel0, …)"
  std::string found = std::to_string(chips) +
                      (accelerators.empty() ? "" : " " + accelerators[0].family) + " TPU chip" +
                      (chips == 1 ? "" : "s") +
                      (accelerators.empty() ? "" : " (" + Join(nodes, ", ") + ")");
  if (chips != expect.chips_per_host) {
    return Fail(name,
                found + "; " + std::to_string(expect.chips_per_host) + " expected on a worker of " +
                    (expect.accelerator_type.empty() ? "this node" : expect.accelerator_type),
                "a chip is missing from this worker (a hardware or driver fault): recreate the "
                "node (`tpufleet down` it, then `tpufleet up`), and tell Cloud TPU support if it "
                "happens again");
  }
  for (const Accelerator& a : accelerators) {
    if (a.path.empty()) {
      return Fail(name, found + "; the chip at " + a.pci_address + " has no iommu group",
                  "the VFIO driver does not hold the chip: reboot the worker, or recreate the node");
    }
  }
  if (!missing_nodes.empty()) {
    return Fail(name, found + "; missing device node" + (missing_nodes.size() == 1 ? " " : "s ") +
                          Join(missing_nodes, ", "),
                "the TPU driver did not create the node: reboot the worker, or recreate the node");
  }
  return {name, true, chips == 0 ? "no TPU chips (none expected)" : found, ""};
}

DoctorCheck CheckTpuUse(const TpuVerdict& verdict) {
  const std::string name = "tpu_use";
  switch (verdict.kind) {
    case TpuVerdictKind::kFree:
      return {name, true, "free: no process holds the TPU and there is no lockfile", ""};
    case TpuVerdictKind::kHeldByJob:
      return {name, true, "in use by job " + verdict.job + ": " + Claimants(verdict.claimants), ""};
    case TpuVerdictKind::kStaleLockfile:
      return Fail(name,
                  std::string(kLibtpuLockfile) +
                      " is left over: no process holds its lock or a TPU device",
                  "the next `tpufleet run` removes it; a program started by hand may fail until "
                  "then: `sudo rm " + std::string(kLibtpuLockfile) + "`");
    case TpuVerdictKind::kOrphan:
      break;
  }
  std::vector<std::string> pids;
  for (const TpuClaimant& c : verdict.claimants) {
    if (c.process.pid > 0) {
      pids.push_back(std::to_string(c.process.pid));
    }
  }
  return Fail(name, "held by " + Claimants(verdict.claimants) + ", a process of no tpufleet job",
              pids.empty() ? "find the holder with `sudo lsof " + std::string(kLibtpuLockfile) +
                                 "` and stop it"
                           : "stop it (`sudo kill " + Join(pids, " ") +
                                 "`), or start the next job with `tpufleet run --kill-stale`");
}

std::vector<std::string> EndpointAddresses(const std::string& value) {
  std::vector<std::string> out;
  for (const std::string& entry : Split(Trim(value), ',')) {
    std::string_view e = Trim(entry);
    if (!e.empty()) {
      out.emplace_back(e.substr(e.rfind(':') == std::string_view::npos ? 0 : e.rfind(':') + 1));
    }
  }
  return out;
}

DoctorCheck CheckMetadata(const MetadataAnswers& answers, const DoctorExpect& expect,
                          const std::string& where) {
  const std::string name = "metadata";
  if (!answers.error.ok()) {
    return Fail(name, "the metadata server at " + where + " does not answer: " +
                          answers.error.message(),
                "check this worker's route to " + where +
                    " (`ip route`); without it JAX cannot find its peers. Recreate the node if "
                    "it persists");
  }
  const std::string fix =
      "this worker's metadata disagrees with the TPU API: run `tpufleet up` to refresh the "
      "node's record, and recreate the node if it persists";
  const std::string worker = std::string(Trim(answers.worker_number));
  if (expect.worker >= 0 && worker != std::to_string(expect.worker)) {
    return Fail(name, Compared("worker", worker, "worker " + std::to_string(expect.worker)), fix);
  }
  const std::string type = std::string(Trim(answers.accelerator_type));
  if (!expect.accelerator_type.empty() && type != expect.accelerator_type) {
    return Fail(name, Compared("accelerator type", type, expect.accelerator_type), fix);
  }
  const std::vector<std::string> endpoints = EndpointAddresses(answers.endpoints);
  if (!expect.endpoints.empty() && endpoints != expect.endpoints) {
    return Fail(name, Compared("worker endpoints", Join(endpoints, ","), Join(expect.endpoints, ",")),
                fix);
  }
  return {name, true,
          "worker " + worker + " of " + std::to_string(endpoints.size()) + ", " + type +
              ", answered by " + where,
          ""};
}

DoctorCheck CheckFreeSpace(const std::string& name, const std::string& mount, uint64_t free_bytes,
                           uint64_t total_bytes) {
  std::string detail = FormatBytes(free_bytes) + " free of " + FormatBytes(total_bytes) + " on " + mount;
  if (free_bytes >= kMinFreeBytes) {
    return {name, true, detail, ""};
  }
  return Fail(name, detail + " (less than " + FormatBytes(kMinFreeBytes) + ")",
              "free space on " + mount + ": remove old checkpoints, logs or caches (`sudo du -xh " +
                  mount + " | sort -h | tail`), or put them on a data disk");
}

std::string MetadataBaseUrl(const char* gce_metadata_ip) {
  std::string ip = gce_metadata_ip != nullptr && *gce_metadata_ip != '\0' ? gce_metadata_ip
                                                                         : kDefaultMetadataIp;
  return "http://" + ip + "/computeMetadata/v1/";
}

HostDoctorReport RunHostDoctor(const HostPaths& paths, const DoctorExpect& expect,
                               const LiveJobPids& live, HttpClient& http,
                               const std::string& metadata_base_url, const Clock& clock) {
  HostDoctorReport report;
  TpuFacts facts = ScanTpu(paths);
  std::vector<std::string> missing;
  for (const Accelerator& a : facts.accelerators) {
    struct stat st;
    if (!a.path.empty() && ::stat(a.path.c_str(), &st) != 0) {
      missing.push_back(a.path);
    }
  }
  report.checks.push_back(CheckAccelerators(facts.accelerators, missing, expect));
  report.checks.push_back(CheckTpuUse(DecideTpu(facts, live)));

  MetadataAnswers answers;
  for (auto [path, out] : {std::pair{"instance/attributes/agent-worker-number", &answers.worker_number},
                           std::pair{"instance/attributes/worker-network-endpoints", &answers.endpoints},
                           std::pair{"instance/attributes/accelerator-type", &answers.accelerator_type}}) {
    HttpRequest request;
    request.url = metadata_base_url + path;
    request.headers = {{"Metadata-Flavor", "Google"}, {"Host", "metadata.google.internal"}};
    request.timeout = kMetadataTimeout;
    request.max_response_bytes = 1u << 20;  // a 256-worker endpoint list is ~10 KiB
    Result<HttpResponse> r = http.Send(request);
    if (!r.ok()) {
      answers.error = r.status();
      break;
    }
    if (r->status != 200) {
      answers.error = UnavailableError("HTTP " + std::to_string(r->status) + " for " + path);
      break;
    }
    *out = r->body;
  }
  const std::string where = metadata_base_url.substr(7, metadata_base_url.find('/', 7) - 7);
  report.checks.push_back(CheckMetadata(answers, expect, where));

  for (auto [name, mount] : {std::pair{"free_space_root", ""}, std::pair{"free_space_tmp", "tmp"}}) {
    const std::string path = paths.root + (paths.root == "/" ? "" : "/") + mount;
    const std::string shown = std::string("/") + mount;
    struct statvfs vfs;
    if (::statvfs(path.c_str(), &vfs) != 0) {
      report.checks.push_back(Fail(name, "cannot tell the free space of " + shown + ": " +
                                             std::strerror(errno), "check that " + shown +
                                             " is mounted"));
      continue;
    }
    report.checks.push_back(CheckFreeSpace(name, shown, uint64_t{vfs.f_bavail} * vfs.f_frsize,
                                           uint64_t{vfs.f_blocks} * vfs.f_frsize));
  }
  report.time_unix_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                            clock.Now().time_since_epoch()).count();
  return report;
}

}  // namespace tpufleet::agent::host
