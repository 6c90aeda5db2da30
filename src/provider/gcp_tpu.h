// GcpTpuProvider: the `gcp-tpu` provider, Cloud TPU API v2 over REST
// (shared/reference/tpu-api.md §1–§6), to Google or to the local emulator; only the
// endpoint and the credentials differ, and nothing here knows which it talks to.
//
// Each CloudProvider method is one or two API calls (tpu-api.md §2):
//   CreateNode            nodes.create ?nodeId, or queuedResources.create
//                         ?queuedResourceId=node_id&requestId when request.queued is set
//   DeleteNode            nodes.delete
//   StopNode              nodes.stop (POST …/nodes/N:stop, body {})
//   StartNode             nodes.start (POST …/nodes/N:start, body {})
//   DeleteQueuedResource  queuedResources.delete ?force&requestId
//   SetSshKeys            nodes.get, then nodes.patch ?updateMask=metadata with the whole
//                         metadata map and only ssh-keys replaced
//   GetOperation          operations.get
//   GetNode, GetQueuedResource, ListNodes, ListQueuedResources  get / list (every page;
//                         several zones asked at once, at most max_parallel_zones)
//   GetWorkerIdentities   nodes.getGuestAttributes {"workerIds": [""]} (all workers)
// Transient failures are retried inside each call (gcp_api_client.h); errors are
// classified as provider.h says (gcp_errors.h).
//
// Safe to repeat: a nodes.create whose answer was lost and that is sent again gets
// AlreadyExists (control adopts the node); a queued-resource create carries
// request.request_id, so the API makes it at most once.
//
// Ownership: the TokenSource, HttpClient and Clock must outlive the provider.
// Thread-safety: every method may be called from several threads at once.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "provider/gcp_api_client.h"
#include "provider/gcp_credentials.h"
#include "provider/provider.h"
#include "util/clock.h"
#include "util/http_client.h"
#include "util/status.h"

namespace tpufleet {

/// Google's endpoint for the TPU API.
inline constexpr std::string_view kTpuEndpoint = "https://tpu.googleapis.com/";
/// Zones listed at once by ListNodes and ListQueuedResources: a fleet spans a handful;
/// the cap only keeps a long zone list from opening dozens of connections.
inline constexpr int kMaxParallelZones = 8;
/// Pages of one list call (one collection in one zone). The API returns hundreds of
/// items a page, so this is far more than any project holds; a server that keeps
/// sending a nextPageToken past it is broken, and the list fails (Internal) instead of
/// going on for ever.
inline constexpr int kMaxListPages = 1000;
/// Items of one list call, all pages together: a project's quota holds far fewer nodes
/// in a zone, and each item is kept in memory until the list is parsed.
inline constexpr size_t kMaxListItems = 100'000;
/// One HTTP request to the API; its own calls answer in well under a second.
inline constexpr std::chrono::milliseconds kTpuRequestTimeout{30000};

/// The TPU API endpoint: $CLOUDSDK_API_ENDPOINT_OVERRIDES_TPU when set (gcloud's own
/// override, so one setting points both at the emulator), else kTpuEndpoint.
/// InvalidArgument, as gcloud's validator says it, unless the override is an absolute
/// http:// or https:// URL ending in "/".
Result<std::string> ResolveTpuEndpoint(const EnvLookup& env);

struct GcpTpuOptions {
  std::string project;                               // REQUIRED: the project id
  std::string endpoint = std::string(kTpuEndpoint);  // ends in "/" (ResolveTpuEndpoint)
  RetryPolicy retry;                                 // per API call
  uint64_t seed = 0;                                 // seeds retry jitter and request ids
  int max_parallel_zones = kMaxParallelZones;        // zones listed at once
  std::chrono::milliseconds request_timeout = kTpuRequestTimeout;
  int page_size = 0;  // pageSize of list calls; 0 leaves it to the API
};

class GcpTpuProvider final : public CloudProvider {
 public:
  GcpTpuProvider(GcpTpuOptions options, TokenSource& tokens, HttpClient& http, Clock& clock);

  std::string_view Name() const override { return "gcp-tpu"; }

  Result<CloudOperation> CreateNode(const CreateNodeRequest& request) override;
  Result<CloudOperation> DeleteNode(std::string_view zone, std::string_view node_id) override;
  Result<CloudOperation> StopNode(std::string_view zone, std::string_view node_id) override;
  Result<CloudOperation> StartNode(std::string_view zone, std::string_view node_id) override;
  Result<CloudOperation> DeleteQueuedResource(std::string_view zone, std::string_view id,
                                              bool force) override;
  Result<CloudOperation> SetSshKeys(std::string_view zone, std::string_view node_id,
                                    std::string_view ssh_keys) override;
  Result<CloudOperation> GetOperation(std::string_view name) override;

  Result<CloudNode> GetNode(std::string_view zone, std::string_view node_id) override;
  Result<CloudQueuedResource> GetQueuedResource(std::string_view zone,
                                                std::string_view id) override;
  Result<std::vector<CloudNode>> ListNodes(const std::vector<std::string>& zones) override;
  Result<std::vector<CloudQueuedResource>> ListQueuedResources(
      const std::vector<std::string>& zones) override;
  /// One entry per worker the API reports (a worker not booted yet may be missing or
  /// have an empty host_key).
  Result<std::vector<WorkerIdentity>> GetWorkerIdentities(std::string_view zone,
                                                          std::string_view node_id) override;

 private:
  /// "v2/projects/{p}/locations/{zone}".
  std::string ZonePath(std::string_view zone) const;
  /// Every item of `field` in every page of the list at `path`: at most kMaxListPages
  /// pages and kMaxListItems items (Internal beyond).
  Result<std::vector<nlohmann::json>> ListAll(const std::string& path, const char* field);
  /// ListAll of `collection` in each zone, the zones at once, in zone order.
  Result<std::vector<nlohmann::json>> ListZones(const std::vector<std::string>& zones,
                                                const char* collection);
  Result<CloudOperation> StartOperation(const ApiRequest& request);
  /// POST …/nodes/NODE:VERB with {} (stop, start).
  Result<CloudOperation> NodeVerb(std::string_view zone, std::string_view node_id,
                                  std::string_view verb);

  const GcpTpuOptions options_;
  TpuApiClient api_;
};

}  // namespace tpufleet
