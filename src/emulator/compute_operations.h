// ComputeOperations: the long-running operations of the emulator's Compute Engine API
// v1 (compute#operation), global (projects/p/global/operations/…) and zonal
// (projects/p/zones/z/operations/…).
//
// A module that changes a Compute resource starts an operation here (Start: RUNNING,
// its targetLink the resource), answers the call with it (Render), and later finishes
// it (Finish: DONE) or fails it (Fail: DONE with error, httpErrorStatusCode and
// httpErrorMessage), when its work is done. Clients poll operations.get or block in
// operations.wait (compute_api.cc) until status is DONE; neither changes an operation.
// Compute has no PENDING phase the emulator would show: work starts at once.
//
// Done operations are kept for get and list until kMaxComputeOperations are done; then
// the oldest done ones go (Google keeps completed operations for "a limited retention
// period").
//
// Thread-safety: none; the owner (ApiServerImpl) keeps it under its mutex.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "emulator/compute_wire.h"
#include "emulator/wire.h"
#include "util/clock.h"

namespace tpufleet::emulator {

struct ComputeOperation {
  std::string name;     // "operation-1767225600000-5f4a…-1a2b3c4d-5e6f7a8b"
  std::string id;       // a uint64 in decimal: operations.get takes it for the name too
  std::string project;  // "p"
  std::string zone;     // "us-central2-b"; "" for a global operation
  std::string type;     // operationType: "insert", "delete", "setCommonInstanceMetadata"
  std::string target;   // the resource it changes, relative: "projects/p/zones/z/disks/d"
  std::string target_id;            // the target's numeric id; "" when it has none
  std::string client_operation_id;  // the call's requestId, if it gave one
  Clock::WallTime insert_time;
  std::optional<Clock::WallTime> end_time;
  bool done = false;
  std::optional<ComputeError> error;

  /// "projects/p/zones/z" or "projects/p/global": where it is listed.
  std::string Scope() const;
  /// Scope() + "/operations/" + name.
  std::string Path() const;
};

/// Done operations kept for get and list.
inline constexpr size_t kMaxComputeOperations = 10000;

class ComputeOperations {
 public:
  explicit ComputeOperations(uint64_t seed) : rng_(seed) {}
  ComputeOperations(const ComputeOperations&) = delete;
  ComputeOperations& operator=(const ComputeOperations&) = delete;

  /// A new RUNNING operation of `type` on `target` in `zone` ("" for global). The
  /// reference stays valid until the operation is erased.
  ComputeOperation& Start(std::string_view project, std::string_view zone, std::string_view type,
                          std::string_view target, std::string_view target_id,
                          Clock::WallTime now);
  /// DONE without error. No-op when `path` (ComputeOperation::Path) is unknown or done.
  void Finish(const std::string& path, Clock::WallTime now);
  /// DONE with `error` (its op_code, message and HTTP status). No-op like Finish.
  void Fail(const std::string& path, ComputeError error, Clock::WallTime now);

  /// The operation named, or numbered, `name_or_id` in `scope`; null when none.
  ComputeOperation* Find(std::string_view scope, std::string_view name_or_id);
  /// Every operation in `scope`, by name (oldest first: names start with the time).
  std::vector<const ComputeOperation*> List(std::string_view scope) const;
  void Erase(const std::string& path);

  /// The compute#operation document, its links under `root` (ComputeRoot).
  static Json Render(const ComputeOperation& op, std::string_view root);

 private:
  void Retire(const std::string& path);

  std::mt19937_64 rng_;
  std::map<std::string, ComputeOperation> ops_;  // by Path()
  std::deque<std::string> done_;                 // paths of done operations, oldest first
};

}  // namespace tpufleet::emulator
