// The worker's half of `tpufleet doctor`: what this host can say about itself, each
// check {name, ok, detail, fix} (fix empty when ok), and this host's clock so the CLI
// can compute the offset. The CLI's half (the agent runs at its version, per-worker
// lines, failures first) is control/doctor.h.
//
//   accelerators  the TPU chips in sysfs (accelerators.h) and their device nodes, and
//                 their count against the chips per host the CLI expects for the
//                 node's type. No chip expected (chips_per_host 0: a CPU or GPU host,
//                 or a type the CLI does not know) and none there is fine.
//   tpu_use       the lockfile and the device holders, judged as a job's start would be
//                 (tpu_verdict.h): free or held by a live job is ok; a stale lockfile
//                 or an orphaned holder fails, naming pid, user and command.
//   metadata      the metadata server answers (http://$GCE_METADATA_IP, else
//                 169.254.169.254, `Metadata-Flavor: Google`, kMetadataTimeout a
//                 request) with agent-worker-number, worker-network-endpoints and
//                 accelerator-type equal to what the CLI expects (each one it gives).
//                 Endpoints compare by address: the old format
//                 "name:uid:10.130.0.26" gives 10.130.0.26.
//   free_space_root, free_space_tmp
//                 space an unprivileged user may still use on / and /tmp:
//                 fails below kMinFreeBytes.
//
// The Check* functions are pure (table-tested); RunHostDoctor gathers the facts.
// Thread-safety: stateless; RunHostDoctor blocks up to 3 metadata timeouts.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "agent/host/accelerators.h"
#include "agent/host/host_paths.h"
#include "agent/host/tpu_verdict.h"
#include "util/clock.h"
#include "util/http_client.h"
#include "util/status.h"

namespace tpufleet::agent::host {

/// The metadata server of every GCE and TPU VM (and of the emulator's workers).
inline constexpr const char* kDefaultMetadataIp = "169.254.169.254";
/// A metadata server answers in milliseconds; three seconds covers a loaded worker
/// without letting one dead server hold the whole fleet's doctor.
inline constexpr std::chrono::milliseconds kMetadataTimeout{3000};
/// Below 2 GiB a pip install, libtpu's compilation cache or the next checkpoint fails
/// (an orbax checkpoint of a small model is already hundreds of MiB).
inline constexpr uint64_t kMinFreeBytes = 2ull << 30;

struct DoctorCheck {
  std::string name;
  bool ok = true;
  std::string detail;  // what was found, for a person
  std::string fix;     // what to do about it; "" when ok
};

/// What the CLI knows of this worker from the TPU API and the catalog.
struct DoctorExpect {
  std::string accelerator_type;        // "v4-32"; "" skips the comparison
  int chips_per_host = 0;              // 0: no chips expected
  int worker = -1;                     // this worker's number; -1 skips it
  std::vector<std::string> endpoints;  // every worker's address, worker 0 first; empty skips
};

struct HostDoctorReport {
  std::vector<DoctorCheck> checks;
  int64_t time_unix_ms = 0;  // this host's wall clock when the checks ended
};

/// `accelerators` with the device nodes of `missing_nodes` absent from /dev.
DoctorCheck CheckAccelerators(const std::vector<Accelerator>& accelerators,
                              const std::vector<std::string>& missing_nodes,
                              const DoctorExpect& expect);

DoctorCheck CheckTpuUse(const TpuVerdict& verdict);

/// What the metadata server said; `error` set when a request failed or was not a 200.
struct MetadataAnswers {
  Status error;
  std::string worker_number;
  std::string endpoints;
  std::string accelerator_type;
};

/// `where`: the server's address, as the detail names it.
DoctorCheck CheckMetadata(const MetadataAnswers& answers, const DoctorExpect& expect,
                          const std::string& where);

/// `name` is the check's; `mount` the path as people know it ("/", "/tmp").
DoctorCheck CheckFreeSpace(const std::string& name, const std::string& mount, uint64_t free_bytes,
                           uint64_t total_bytes);

/// The addresses of a worker-network-endpoints value, worker 0 first.
std::vector<std::string> EndpointAddresses(const std::string& value);

/// "http://IP/computeMetadata/v1/" for $GCE_METADATA_IP (may carry ":PORT"), or for
/// kDefaultMetadataIp when it is null or empty.
std::string MetadataBaseUrl(const char* gce_metadata_ip);

/// Every check above, in that order, on this host. `live` as for ClaimTpu.
HostDoctorReport RunHostDoctor(const HostPaths& paths, const DoctorExpect& expect,
                               const LiveJobPids& live, HttpClient& http,
                               const std::string& metadata_base_url, const Clock& clock);

}  // namespace tpufleet::agent::host
