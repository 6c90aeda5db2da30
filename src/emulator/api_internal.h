// ApiServerImpl: the state and handlers behind ApiServer (api_server.h). Internal to
// src/emulator; split over api_server.cc (routing, operations, catalog endpoints),
// api_nodes.cc, api_queued.cc, api_progress.cc (time-driven transitions, host work)
// and api_admin.cc (status and faults).
//
// Locking: every member marked "guarded by mu_" is read and written only with mu_
// held; methods whose name ends in Locked REQUIRE mu_ held. WorkerHosts is called only
// from host-work tasks, without mu_; a task takes mu_ afterwards to report back.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "api/emulator.h"
#include "core/catalog.h"
#include "core/node_state.h"
#include "emulator/compute_disks.h"
#include "emulator/compute_operations.h"
#include "emulator/compute_wire.h"
#include "emulator/config.h"
#include "emulator/faults.h"
#include "emulator/host_work.h"
#include "emulator/http_types.h"
#include "emulator/token.h"
#include "emulator/wire.h"
#include "emulator/worker_hosts.h"
#include "util/clock.h"
#include "util/status.h"
#include "util/strings.h"

namespace tpufleet::emulator {

/// A value or an RpcError (a ComputeError in the Compute API): the result of a step of
/// request handling.
template <typename T, typename Error = RpcError>
class RpcOr {
 public:
  RpcOr(T value) : v_(std::move(value)) {}       // NOLINT: implicit, like Result
  RpcOr(Error error) : v_(std::move(error)) {}   // NOLINT
  bool ok() const { return std::holds_alternative<T>(v_); }
  T& value() { return std::get<T>(v_); }
  const T& value() const { return std::get<T>(v_); }
  const Error& error() const { return std::get<Error>(v_); }

 private:
  std::variant<T, Error> v_;
};
template <typename T>
using ComputeOr = RpcOr<T, ComputeError>;

/// `lhs = value of rexpr` (an RpcOr), or return its RpcError from the enclosing
/// function (one that returns an RpcOr or an optional RpcError); lhs may declare.
/// The RpcOr twin of TPUFLEET_ASSIGN_OR_RETURN.
#define EMULATOR_ASSIGN_OR_RETURN_RPC(lhs, rexpr) \
  EMULATOR_ASSIGN_OR_IMPL(TPUFLEET_CONCAT(emulator_rpc_, __COUNTER__), lhs, rexpr, )
/// The same in a request handler: returns the RpcError as its ErrorResponse.
#define EMULATOR_ASSIGN_OR_RESPOND(lhs, rexpr) \
  EMULATOR_ASSIGN_OR_IMPL(TPUFLEET_CONCAT(emulator_rpc_, __COUNTER__), lhs, rexpr, ErrorResponse)
#define EMULATOR_ASSIGN_OR_IMPL(tmp, lhs, rexpr, wrap) \
  auto tmp = (rexpr);                                   \
  if (!tmp.ok()) {                                      \
    return wrap(tmp.error());                           \
  }                                                     \
  lhs = std::move(tmp.value())

/// The non-empty segments of a request path: "/v2/projects/p" → {"v2", "projects", "p"}.
std::vector<std::string> PathSegments(std::string_view path);

/// The JSON of `r`, or its error.
inline HttpResponse Respond(const RpcOr<Json>& r) {
  return r.ok() ? JsonResponse(r.value()) : ErrorResponse(r.error());
}

/// Whether a Node's stored schedulingConfig asks for a preemptible node: spot,
/// preemptible, or v2alpha1's provisioningModel SPOT.
inline bool IsSpotScheduling(const Json& scheduling_config) {
  return scheduling_config.value("spot", false) || scheduling_config.value("preemptible", false) ||
         scheduling_config.value("provisioningModel", std::string()) == "SPOT";
}

// A node's and a queued resource's states are core's NodeState (core/node_state.h):
// the same Node.State and QueuedResourceState values, spelled on the wire by Name().

/// A user-visible transition of a node, finished by Advance when its time has come and
/// its host calls are done.
struct NodeStep {
  enum Kind { kCreate, kStart, kStop, kDelete, kUpdate } kind = kCreate;
  uint64_t seq = 0;  // tells this step's host-call reports from stale ones
  std::string op;    // the operation it finishes; "" for service-driven steps
  Clock::MonoTime due;
  int host_calls = 0;            // WorkerHosts calls still running
  Status host_status;            // the first of them that failed
  std::optional<RpcError> fail;  // finish with this error (a stockout) instead
};

struct NodeMaintenance {
  enum Phase { kNotice, kOngoing } phase = kNotice;
  uint64_t seq = 0;
  Clock::MonoTime due;
  int host_calls = 0;
  Status host_status;
  Clock::WallTime window_start;
  Clock::WallTime window_end;
  std::string fault_id;
};

struct NodePreemption {
  Clock::MonoTime at;
  std::string fault_id;
};

/// A node as the emulator stores it: the server side of the Cloud TPU API, with the
/// steps, faults and hosts behind it (core/node_record.h is the CLI's record of a node).
struct EmulatedNode {
  std::string name;  // projects/p/locations/z/nodes/n
  std::string project;
  std::string zone;
  std::string node_id;  // n
  std::string uid;      // Node.id, 19 digits
  std::string api_version;  // the version that created it: "v2" or "v2alpha1"
  Json spec;  // the user-settable fields as given (canonical names, enum names; every
              // version's: schema.h's ForVersion projects them per request)
  AcceleratorType type;
  bool spot = false;  // schedulingConfig.spot or .preemptible
  NodeState state = NodeState::kCreating;
  std::string health;  // "", "HEALTHY", "UNHEALTHY_MAINTENANCE"
  Clock::WallTime create_time;
  std::vector<WorkerInfo> workers;  // empty until the first Boot returns
  std::vector<bool> cut_off;        // per worker
  std::string queued_resource;      // the QR that made it, or ""
  bool multislice = false;
  std::optional<NodeStep> step;
  std::optional<NodeMaintenance> maintenance;
  std::optional<NodePreemption> preemption;
};

struct OperationRecord {
  std::string name;
  std::string version;        // "v2": the API version in @type names
  std::string verb;           // "create", "delete", "stop", "start", "update", "reset"
  std::string target;         // the resource it works on
  std::string response_type;  // "Node", "QueuedResource" or "" (google.protobuf.Empty)
  Clock::WallTime create_time;
  std::optional<Clock::WallTime> end_time;
  bool done = false;
  bool cancel_requested = false;
  Json response;  // with "@type", once done without error
  std::optional<RpcError> error;
};

/// One node a queued resource will make.
struct NodePlan {
  std::string name;  // full resource name
  std::string node_id;
  Json spec;
  AcceleratorType type;
  bool multislice = false;
};

struct QueuedResourceRecord {
  std::string name;
  std::string project;
  std::string zone;
  std::string version;
  Json spec;  // the QR as given: tpu, spot, guaranteed, queueingPolicy, reservationName
  std::vector<NodePlan> plan;
  bool spot = false;
  NodeState state = NodeState::kCreating;
  std::string initiator = "USER";
  std::optional<RpcError> failure;
  Clock::WallTime create_time;
  Clock::MonoTime state_since;
  Clock::MonoTime due;  // end of the accept or delete step
  std::optional<Clock::WallTime> valid_after;
  std::optional<Clock::WallTime> valid_until;
  std::string pending_op;  // create/reset op (done on ACCEPTED), delete op (done when gone)
};

/// The request being handled.
struct Call {
  const HttpRequest* req = nullptr;
  std::string version;  // "v2", "v2alpha1", "v1"
  std::string project;
  std::string zone;
  std::string parent;  // projects/p/locations/z
  Clock::WallTime wall;
  Clock::MonoTime now;
};

class ApiServerImpl {
 public:
  ApiServerImpl(EmulatorConfig config, Clock& clock, WorkerHosts* hosts, const Catalog& catalog);
  ~ApiServerImpl();

  HttpResponse Handle(const HttpRequest& req);
  void Tick();
  std::string StatusJson();
  void DestroyAllHosts();

  HostWorkQueue& work() { return work_; }

 private:
  friend class ApiServer;

  // api_server.cc: routing and shared helpers.
  HttpResponse HandleApi(const HttpRequest& req);
  HttpResponse RouteLocked(Call& c, const std::vector<std::string>& segs);
  // The 401 for a request without an accepted bearer token (AuthConfig), or nullopt.
  // Needs no lock: the config is constant and tokens_ locks itself.
  std::optional<RpcError> CheckAuth(const HttpRequest& req, bool admin) const;
  std::optional<RpcError> CheckProjectLocked(const Call& c);
  bool ZoneKnown(std::string_view zone) const;
  RpcOr<Json> ParseBody(const Call& c) const;
  /// The body as a `type` message of schema.h (Canonicalize), `at` its field path.
  RpcOr<Json> ParseBodyAs(const Call& c, std::string_view type, std::string_view at) const;
  /// A page of `items` (key, JSON) for the call's pageSize and pageToken. `sorted`:
  /// keys ascend, so a token whose key is gone still finds its place.
  RpcOr<Json> Page(const Call& c, const std::vector<std::pair<std::string, Json>>& items,
                   std::string_view field, bool sorted) const;
  /// The record `id` of the call's parent's `collection` ("nodes") in `records`, or
  /// NOT_FOUND naming it.
  template <typename Record>
  static RpcOr<Record*> FindIn(const Call& c, std::map<std::string, Record>& records,
                               std::string_view collection, const std::string& id) {
    std::string name = c.parent + "/" + std::string(collection) + "/" + id;
    auto it = records.find(name);
    if (it == records.end()) {
      return NotFound(name);
    }
    return &it->second;
  }
  /// One page of the call's parent's `collection` in `records`, each as `render` gives.
  template <typename Record, typename Render>
  HttpResponse ListIn(const Call& c, const std::map<std::string, Record>& records,
                      std::string_view collection, Render render) const {
    std::vector<std::pair<std::string, Json>> items;
    std::string prefix = c.parent + "/" + std::string(collection) + "/";
    for (auto it = records.lower_bound(prefix);
         it != records.end() && StartsWith(it->first, prefix); ++it) {
      items.emplace_back(it->first, render(it->second));
    }
    return Respond(Page(c, items, collection, /*sorted=*/true));
  }
  std::string NewOperationNameLocked(const Call& c);
  OperationRecord& NewOperationLocked(const Call& c, std::string_view verb, std::string_view target,
                                      std::string_view response_type);
  Json RenderOperation(const OperationRecord& op) const;
  void FinishOperationLocked(const std::string& name, Json response);
  void FailOperationLocked(const std::string& name, RpcError error);
  std::string ProjectNumber(std::string_view project) const;
  std::string Eid();  // "[EID: 0x…]"; REQUIRES mu_ held (uses rng_)
  /// requestId de-duplication: the operation an earlier call with the same id made, if
  /// it was within kRequestIdLifetime.
  const OperationRecord* FindRequestLocked(const Call& c, std::string_view method);
  void RememberRequestLocked(const Call& c, std::string_view method, const std::string& op);
  /// Forgets requestIds older than kRequestIdLifetime, and the oldest beyond
  /// kMaxRequestIds.
  void PruneRequestIdsLocked(Clock::MonoTime now);

  HttpResponse ListOperations(const Call& c);
  HttpResponse GetOperation(const Call& c, const std::string& id);
  HttpResponse CancelOperation(const Call& c, const std::string& id);
  HttpResponse DeleteOperation(const Call& c, const std::string& id);
  HttpResponse ListLocations(const Call& c);
  HttpResponse GetLocation(const Call& c);
  HttpResponse GenerateServiceIdentity(const Call& c);
  HttpResponse ListAcceleratorTypes(const Call& c);
  HttpResponse GetAcceleratorType(const Call& c, const std::string& id);
  HttpResponse ListRuntimeVersions(const Call& c);
  HttpResponse GetRuntimeVersion(const Call& c, const std::string& id);
  std::vector<const Family*> FamiliesInZone(std::string_view zone) const;

  // api_nodes.cc
  struct NodeInput {
    Json spec;
    AcceleratorType type;
    bool spot = false;
  };
  /// Canonicalises and checks a Node from a request (`at`: its path in errors,
  /// "node" or "queued_resource.tpu.node_spec[0].node").
  RpcOr<NodeInput> ParseNodeInput(const Json& body, std::string_view at, std::string_view zone,
                                  std::string_view version) const;
  Json RenderNode(const EmulatedNode& n) const;
  HttpResponse ListNodes(const Call& c);
  HttpResponse GetNode(const Call& c, const std::string& id);
  HttpResponse CreateNode(const Call& c);
  HttpResponse DeleteNode(const Call& c, const std::string& id);
  HttpResponse StopNode(const Call& c, const std::string& id);
  HttpResponse StartNode(const Call& c, const std::string& id);
  HttpResponse PatchNode(const Call& c, const std::string& id);
  HttpResponse GetGuestAttributes(const Call& c, const std::string& id);
  /// The node `id` that stop or start (`verb`) acts on: NotFound when there is none,
  /// InvalidArgument when it has several workers (Cloud TPU stops and starts only
  /// single TPU nodes), BadState unless it is in state `from`, Busy while a step of
  /// it runs.
  RpcOr<EmulatedNode*> SingleWorkerNodeLocked(const Call& c, const std::string& id,
                                            std::string_view verb, NodeState from);
  RpcError BadState(std::string_view verb, const EmulatedNode& n);
  RpcError Busy(const EmulatedNode& n) const;

  // api_queued.cc
  Json RenderQueuedResource(const QueuedResourceRecord& q) const;
  HttpResponse ListQueuedResources(const Call& c);
  HttpResponse GetQueuedResource(const Call& c, const std::string& id);
  HttpResponse CreateQueuedResource(const Call& c);
  HttpResponse DeleteQueuedResource(const Call& c, const std::string& id);
  HttpResponse ResetQueuedResource(const Call& c, const std::string& id);
  /// Moves `q` on; true when it is gone and must be erased.
  bool AdvanceQueuedResourceLocked(QueuedResourceRecord& q, Clock::MonoTime now,
                                   Clock::WallTime wall);
  void SetQrStateLocked(QueuedResourceRecord& q, NodeState s, Clock::MonoTime now,
                        std::string initiator = "USER");
  std::vector<EmulatedNode*> NodesOfLocked(const std::string& qr_name);
  void ProvisionLocked(QueuedResourceRecord& q, Clock::MonoTime now, Clock::WallTime wall);

  // api_progress.cc: time-driven transitions, capacity and quota, host work.
  void AdvanceLocked(Clock::MonoTime now, Clock::WallTime wall);
  void FinishStepLocked(const std::string& name, Clock::MonoTime now, Clock::WallTime wall);
  void AdvanceMaintenanceLocked(EmulatedNode& n, Clock::MonoTime now, Clock::WallTime wall);
  void PreemptLocked(EmulatedNode& n);
  /// Creates a node record in CREATING and starts its create step (Boot, or a stockout
  /// failure when capacity is short). `op` may be "".
  EmulatedNode& StartCreateLocked(const Call& c, const std::string& node_id, NodeInput input,
                                  const std::string& op, const std::string& queued_resource,
                                  bool multislice);
  /// Starts deleting `n` (DELETING, Destroy), aborting any step it had.
  void StartDeleteLocked(EmulatedNode& n, const std::string& op, Clock::MonoTime now);
  NodeStep& NewStepLocked(EmulatedNode& n, NodeStep::Kind kind, const std::string& op,
                          Millis duration, Clock::MonoTime now);
  /// Ends `n`'s pending maintenance and preemption and removes their faults: a node
  /// that stops, is deleted or is preempted keeps neither.
  void DropNodeEventsLocked(EmulatedNode& n);
  void EraseNodeLocked(const std::string& name);
  Millis Scaled(Millis d, Clock::MonoTime now) const;

  enum class Waiter { kNone, kStep, kMaintenance };
  /// Counts one more host call for `waiter` (the node's step or maintenance, which must
  /// exist) and returns the seq its report must carry; 0 for Waiter::kNone.
  uint64_t AddHostCallLocked(EmulatedNode& n, Waiter waiter);
  void PostBootLocked(EmulatedNode& n, bool new_addresses, Waiter waiter);
  void PostHostCallLocked(EmulatedNode& n, std::string what,
                          std::function<Status(WorkerHosts&)> call, Waiter waiter);
  /// Records the end of a host call for the step or maintenance numbered `seq`.
  void ReportHostCallLocked(const std::string& name, const std::string& uid, Waiter waiter,
                            uint64_t seq, const Status& status);
  std::string NewUidLocked();

  bool HoldsCapacity(const EmulatedNode& n) const;
  long long CapacityLimitOf(std::string_view zone, const Family& family) const;
  long long CapacityUsedLocked(std::string_view zone, const Family& family) const;
  /// The stockout error when `chips` more of `family` do not fit in `zone` now.
  std::optional<RpcError> CheckCapacityLocked(std::string_view zone, const Family& family,
                                              long long chips, Clock::MonoTime now);
  long long QuotaUsedLocked(const QuotaLimit& limit) const;
  /// The 429 when `chips` more chips of `family` (spot or not) exceed a quota of the
  /// zone's region now. `queued`: word it as queued resources see it.
  std::optional<RpcError> CheckQuotaLocked(const Call& c, const Family& family, bool spot,
                                           long long chips, Clock::MonoTime now,
                                           bool queued = false);
  RpcError StockoutError(std::string_view zone);

  // compute_api.cc: the Compute Engine API v1 under /compute/v1/ (compute_wire.h,
  // compute_operations.h). Takes mu_ itself: operations.wait sleeps without it.
  HttpResponse HandleCompute(const HttpRequest& req);
  /// One pass of a Compute call; `first`: faults are drawn only on a call's first pass.
  HttpResponse RouteComputeLocked(Call& c, const std::vector<std::string>& segs, bool first);
  /// A new RUNNING operation in `zone` ("" for global) of the call's project; its
  /// clientOperationId is the call's requestId.
  ComputeOperation& StartComputeOperationLocked(const Call& c, std::string_view zone,
                                                std::string_view type, std::string_view target,
                                                std::string_view target_id);
  HttpResponse ListComputeOperations(const Call& c, const std::string& id);
  HttpResponse GetComputeOperation(const Call& c, const std::string& id);
  HttpResponse DeleteComputeOperation(const Call& c, const std::string& id);
  /// The request's JSON object, or Compute's 400.
  ComputeOr<Json> ParseComputeBody(const Call& c) const;

  // compute_projects.cc: projects.get and setCommonInstanceMetadata.
  struct ComputeProject {
    std::vector<std::pair<std::string, std::string>> items;  // commonInstanceMetadata, in order
    std::string fingerprint;                                 // of items
    Clock::WallTime created;                                 // when the emulator first saw it
  };
  ComputeProject& ComputeProjectLocked(const Call& c);
  HttpResponse GetComputeProject(const Call& c, const std::string& id);
  HttpResponse SetCommonInstanceMetadata(const Call& c, const std::string& id);

  // compute_disks_attach.cc: Node.dataDisks and the Compute Engine disks they name.
  /// `disks` (a canonical Node.dataDisks) for node `node_name` of `type` in the call's
  /// zone, checked, with every mode spelled (READ_WRITE where none was given). Each
  /// disk must exist in that zone, be READY and of a type the TPU version takes; a
  /// READ_WRITE disk goes to one node only, never beside READ_ONLY ones, and never to a
  /// multi-host node (the node's other attachments do not count against it).
  RpcOr<Json> CheckDataDisksLocked(const Call& c, const std::string& node_name,
                                   const AcceleratorType& type, const Json& disks) const;
  /// Makes `given.dataDisks` (absent: none) node `n`'s, checked as above; `changed`:
  /// whether they differ from what it had. Nothing changes on error.
  std::optional<RpcError> PatchDataDisksLocked(const Call& c, EmulatedNode& n,
                                               const Json& given, bool* changed);
  /// Tells the hosts `n`'s data disks (SetDataDisks), for the node's running step.
  void PostDataDisksLocked(EmulatedNode& n);
  /// The hosts' view of a node spec's dataDisks, in attachment order.
  std::vector<AttachedDiskSpec> AttachedDisksLocked(const Json& node_spec) const;
  /// Each node that has disk `path` ("projects/p/zones/z/disks/d"), with its entry.
  std::vector<std::pair<const EmulatedNode*, const Json*>> DiskAttachmentsLocked(
      const std::string& path) const;
  /// Disk.users of disk `path`, relative to the API root: every worker of every node
  /// that has it, as the nodes' dataDisks say at this moment.
  std::vector<std::string> DiskUsersLocked(const std::string& path) const;
  /// "projects/P/zones/Z/instances/t1v-n-…-w-N": worker `worker` of `n` as a Compute
  /// Engine instance, named as its hostname.
  static std::string WorkerInstancePath(const EmulatedNode& n, int worker);

  // compute_disks_api.cc: disks and diskTypes of the Compute API (compute_disks.h).
  HttpResponse InsertDisk(const Call& c, const std::string&);
  HttpResponse GetDisk(const Call& c, const std::string& id);
  HttpResponse ListDisks(const Call& c, const std::string&);
  /// aggregated/disks (`id` is the collection after aggregated/).
  HttpResponse AggregatedListDisks(const Call& c, const std::string& id);
  HttpResponse DeleteDisk(const Call& c, const std::string& id);
  HttpResponse GetDiskType(const Call& c, const std::string& id);
  HttpResponse ListDiskTypes(const Call& c, const std::string&);
  Json RenderDiskLocked(const DiskRecord& d, const std::string& root) const;
  /// ComputePage over the disks whose path starts with `prefix`.
  ComputeOr<Json> DiskPageLocked(const Call& c, const std::string& prefix) const;
  Json RenderDiskType(const DiskTypeInfo& t, const Call& c) const;
  /// Ends the disk phases whose time has come: CREATING → READY, DELETING → gone (its
  /// file too), finishing their operations.
  void AdvanceDisksLocked(Clock::MonoTime now, Clock::WallTime wall);
  /// One page of a Compute list: `items` (key, resource), keys ascending, that pass the
  /// call's `filter`, from its pageToken, at most maxResults → {"items", "nextPageToken"}.
  ComputeOr<Json> ComputePage(const Call& c,
                              const std::vector<std::pair<std::string, Json>>& items) const;

  // api_admin.cc
  HttpResponse HandleAdmin(const HttpRequest& req);
  // POST /emulator/v1/token:rotate: a new owner secret, published through the config's
  // publish_owner_token; the old one is refused from then on. Takes no lock of ours.
  HttpResponse RotateOwnerToken();
  api::EmulatorStatus StatusLocked();
  api::EmulatorFault RenderFault(const Fault& f) const;
  RpcOr<api::EmulatorFault> AddFaultLocked(Fault f, Clock::MonoTime now, Clock::WallTime wall);
  void EndFaultLocked(const Fault& f);

  const EmulatorConfig config_;
  Clock& clock_;
  std::unique_ptr<WorkerHosts> synthetic_;  // when constructed without hosts
  WorkerHosts* const hosts_;
  const Catalog catalog_;
  TokenService tokens_;
  HostWorkQueue work_;

  std::mutex mu_;
  std::mt19937_64 rng_;                              // guarded by mu_
  uint64_t next_seq_ = 1;                            // guarded by mu_
  std::map<std::string, EmulatedNode> nodes_;        // by name; guarded by mu_
  std::map<std::string, QueuedResourceRecord> qrs_;  // by name; guarded by mu_
  std::map<std::string, OperationRecord> ops_;       // by name; guarded by mu_
  struct RequestId {
    std::string op;  // the operation the first call made
    uint64_t seq = 0;
  };
  struct RequestIdAge {
    Clock::MonoTime at;
    uint64_t seq = 0;  // the entry is stale when request_ids_ has another seq for key
    std::string key;
  };
  std::map<std::string, RequestId> request_ids_;  // by "parent|method|id"; guarded by mu_
  std::deque<RequestIdAge> request_id_order_;     // oldest first; guarded by mu_
  uint64_t next_request_id_seq_ = 1;              // guarded by mu_
  FaultSet faults_;  // guarded by mu_
  ComputeOperations compute_ops_;  // guarded by mu_
  std::map<std::string, ComputeProject> compute_projects_;  // by project id; guarded by mu_
  std::map<std::string, DiskRecord> disks_;  // by path (DiskRecord::path); guarded by mu_
  const DiskImages disk_images_;             // config_.disk_dir
};

/// Done operations kept for operations.get/list; the oldest go first beyond this.
inline constexpr size_t kMaxDoneOperations = 10000;
/// How long a requestId is remembered: AIP-155 asks servers to honour one for at least
/// 60 minutes, and Cloud TPU documents no longer.
inline constexpr std::chrono::minutes kRequestIdLifetime{60};
/// requestIds remembered at most; the oldest are forgotten first beyond this, so a
/// client that sends a fresh one with every call cannot grow the server without bound.
inline constexpr size_t kMaxRequestIds = 100000;

}  // namespace tpufleet::emulator
