// Compute Engine persistent disks as the emulator keeps them (internal to src/emulator):
// the disk types it offers, the record of one zonal disk, the checks of a disks.insert
// body, and the sparse files behind the disks.
//
// A disk is what `gcloud compute disks create` makes and what a TPU node's dataDisks
// name ("projects/P/zones/Z/disks/D"). Its life: CREATING (a short while, as on Compute
// Engine) → READY → DELETING → gone. The Compute API handlers (compute_disks_api.cc)
// and the TPU side (compute_disks_attach.cc) keep the records in ApiServerImpl under its
// mutex; which nodes use a disk is never stored twice: it is read from the nodes'
// dataDisks (the disk's `users` are derived from them), so the two always agree.
//
// Every disk has a backing file of its size, sparse (it costs no space until written),
// in the emulator's state dir (EmulatorConfig::disk_dir), which the workers cannot see:
// the worker hosts show it to a node's workers as a block device (/dev/sdb…,
// worker_hosts.h AttachedDiskSpec). The file goes with the disk, and with the state dir
// at `emulator stop`.
//
// Thread-safety: DiskImages may be used from any thread (it only touches the file
// system); the rest are values and pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "emulator/wire.h"
#include "util/clock.h"
#include "util/status.h"

namespace tpufleet::emulator {

/// A disk type of every zone (Compute Engine's diskTypes resource), with its size
/// limits in GB (Compute Engine's GB are GiB: a disk of sizeGb N holds N × 2^30 bytes).
struct DiskTypeInfo {
  std::string_view name;         // "pd-balanced"
  std::string_view description;  // "Balanced Persistent Disk"
  long long min_gb = 0;
  long long max_gb = 0;
  long long default_gb = 0;  // the size of a disk inserted without sizeGb
  bool hyperdisk = false;    // has an accessMode (READ_WRITE_SINGLE, READ_ONLY_MANY, …)
};

/// The types the emulator offers, in the order diskTypes.list gives them.
std::span<const DiskTypeInfo> DiskTypes();
/// The type called `name`, or nullptr.
const DiskTypeInfo* FindDiskType(std::string_view name);

/// The type new disks get when an insert names none (Compute Engine's default).
inline constexpr std::string_view kDefaultDiskType = "pd-standard";

/// A disk's accessMode (Hyperdisk only): who may attach it at once.
inline constexpr std::string_view kAccessReadWriteSingle = "READ_WRITE_SINGLE";
inline constexpr std::string_view kAccessReadOnlyMany = "READ_ONLY_MANY";
inline constexpr std::string_view kAccessReadWriteMany = "READ_WRITE_MANY";

/// One zonal disk.
struct DiskRecord {
  enum class Phase { kCreating, kReady, kDeleting };

  std::string name;  // "data"
  std::string project;
  std::string zone;
  std::string id;  // uint64 in decimal, as Disk.id
  std::string type;  // a DiskTypes() name
  long long size_gb = 0;
  std::string description;
  Json labels = Json::object();  // string → string
  std::string access_mode;       // Hyperdisk only: READ_WRITE_SINGLE, …; "" otherwise
  Phase phase = Phase::kCreating;
  Clock::WallTime created;
  Clock::MonoTime due;   // when CREATING ends, or DELETING does
  std::string op;        // the zone operation that ends with the phase ("" when none)
  std::string image;     // its backing file; "" when the emulator keeps none

  /// "projects/P/zones/Z/disks/D": the key of the records and what sourceDisk names.
  std::string path() const { return DiskPath(project, zone, name); }
  static std::string DiskPath(std::string_view project, std::string_view zone,
                              std::string_view name);
};

/// "CREATING", "READY", "DELETING": Disk.status.
std::string_view DiskStatusName(DiskRecord::Phase phase);

/// What a disks.insert body asks for, checked.
struct DiskInsert {
  std::string name;
  std::string type;
  long long size_gb = 0;
  std::string description;
  Json labels = Json::object();
  std::string access_mode;
};

/// Checks a disks.insert body (a Disk resource) for zone `zone` of `project`: the name
/// (Compute Engine's resource-name pattern), the type (a name or any URL or path ending
/// in zones/ZONE/diskTypes/NAME of this zone), sizeGb (an int64 as a string or number,
/// within the type's limits; the type's default when absent), labels, accessMode.
/// Bodies that would copy an image, snapshot or disk are refused: the emulator makes
/// only blank disks. InvalidArgument with Compute Engine's wording ("Invalid value for
/// field 'resource.sizeGb': '5'. …").
Result<DiskInsert> ParseDiskInsert(const Json& body, std::string_view project,
                                   std::string_view zone);

/// The sourceDisk of a Node.dataDisks entry as the disk's path, from
/// "projects/P/zones/Z/disks/D" or a URL ending in it ("https://…/compute/v1/projects/…").
/// nullopt for anything else (a regional disk, a malformed name).
std::optional<std::string> DiskPathOfSource(std::string_view source_disk);

/// The sparse files behind the disks: DIR/PROJECT/ZONE/NAME.img.
class DiskImages {
 public:
  /// `dir`: an absolute directory only the emulator's user may enter (created when the
  /// first disk is); "" keeps no files (API-only servers and unit tests of the API that
  /// need none).
  explicit DiskImages(std::string dir) : dir_(std::move(dir)) {}

  /// Creates the file of a new disk, sparse, of `size_gb` GiB, mode 0600, and returns its
  /// path ("" when there is no dir). A file left there by an earlier disk of the same
  /// name is replaced. InvalidArgument when the state dir's file system cannot hold a
  /// file that large (EFBIG); Internal on other failures.
  Result<std::string> Create(std::string_view project, std::string_view zone,
                             std::string_view name, long long size_gb) const;

  /// Deletes a disk's file (`path` as Create returned it; "" does nothing). A file
  /// already gone is not an error.
  Status Remove(const std::string& path) const;

  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
};

/// Bytes in one GB of a disk size (Compute Engine's GB are binary).
inline constexpr uint64_t kBytesPerDiskGb = uint64_t{1} << 30;

}  // namespace tpufleet::emulator
