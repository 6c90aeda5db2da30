// EmulatorConfig: everything that shapes how the local Cloud TPU behaves — how much
// capacity each zone has, the quota of each region, how long operations take, what the
// token endpoint accepts — as a plain struct with a default and a comment on every
// field (STYLE.md rule 11). The defaults give an emulator that accepts any project,
// has ample capacity in every zone the catalog lists for a family, no quota limit, and
// fast operations (a create takes about a second), which is what tests and the demo
// want. RealisticTimings() gives operation times of the order the real service shows.
//
// A config file (`tpufleet emulator start --config FILE`) is YAML:
//
//   timings: realistic            # or fast (default), or a map overriding single fields
//   seed: 7
//   projects: [my-project]        # default: any project id
//   default_page_size: 50
//   max_multislice_nodes: 256     # most nodes of one multislice node spec
//   capacity:                     # chips a zone can hand out per family
//     - {zone: us-central2-b, family: v4, chips: 64}
//   quota:                        # chips a project may hold per region and family
//     - {region: us-central2, family: v4, chips: 32, tier: spot}
//   auth:
//     service_account_keys: [/path/sa-key.json]   # or a PEM public key file
//     authorized_users: [{client_id: a, client_secret: b, refresh_token: c}]
//     require_issued_tokens: false  # true: the API routes take only issued tokens
//
// Thread-safety: a plain value; share it read-only.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/catalog.h"
#include "util/status.h"

namespace tpufleet::emulator {

using Millis = std::chrono::milliseconds;

/// How long each kind of operation takes before it finishes. An operation that needs
/// the worker hosts (create, start, maintenance) also waits for them.
struct Timings {
  Millis create{1000};              // CREATING -> READY
  Millis start{500};                // STARTING -> READY
  Millis stop{500};                 // STOPPING -> STOPPED
  Millis remove{500};               // DELETING -> gone ("delete" is a keyword)
  Millis update{200};               // patch operation done
  Millis stockout_fail{500};        // a create or start that met a stockout fails after this
  Millis qr_accept{200};            // QR create operation done (state ACCEPTED)
  Millis qr_wait{300};              // least time a QR spends WAITING_FOR_RESOURCES
  Millis qr_delete{300};            // QR DELETING -> gone, once its nodes are gone
  Millis preemption_notice{3000};   // metadata notice -> PREEMPTED (GCE gives 30 s)
  Millis maintenance_notice{3000};  // maintenance notice -> workers halted
  Millis maintenance{1000};         // least time a node spends under maintenance
  Millis disk_create{300};          // Compute Engine disk CREATING -> READY
  Millis disk_delete{300};          // disk DELETING -> gone
};

/// Operation times of the order the real service shows (minutes, not seconds).
Timings RealisticTimings();

/// Chips of one family a zone can hand out at once. Nodes hold capacity while they run
/// (CREATING, READY, STARTING, STOPPING, REPAIRING, DELETING); STOPPED and PREEMPTED
/// nodes give it back.
struct CapacityLimit {
  std::string zone;    // "us-central2-b"
  std::string family;  // catalog family name: "v4", "v5litepod"
  long long chips = 0;
};

/// Which nodes a quota counts.
enum class QuotaTier {
  kAny,       // every node
  kSpot,      // spot or preemptible nodes ("…PreemptiblePerProjectPerRegion…")
  kOnDemand,  // the others
};
/// "any", "spot", "on_demand": as the config file and the admin status spell it.
std::string_view QuotaTierName(QuotaTier tier);

/// Chips of one family a project may hold in a region. Every node counts until it is
/// deleted, PREEMPTED ones included, as on the real service; a SUSPENDED queued
/// resource keeps counting its nodes' chips until it is deleted.
struct QuotaLimit {
  std::string region;  // "us-central2"
  std::string family;
  QuotaTier tier = QuotaTier::kAny;
  long long chips = 0;
};

/// An OAuth client allowed to trade a refresh token for an access token
/// (authorized_user credentials, as `gcloud auth application-default login` writes).
struct AuthorizedUser {
  std::string client_id;
  std::string client_secret;
  std::string refresh_token;
};

/// A public key the token endpoint accepts JWT assertions from.
struct ServiceAccountKey {
  std::string public_key_pem;  // "-----BEGIN PUBLIC KEY-----…"
  std::string client_email;    // the JWT's iss must equal it; "" accepts any iss
  std::string key_id;          // private_key_id; "" matches any kid
};

// Every request but the token endpoint's must carry a bearer token (Authorization:
// Bearer, or ?access_token=): the owner's secret or one the token endpoint issued.
// Anything else is 401 UNAUTHENTICATED: the emulator's workers give root to whoever
// may patch their ssh-keys, so no other local user may reach it.
struct AuthConfig {
  std::vector<ServiceAccountKey> service_account_keys;  // empty: every assertion is refused
  std::vector<AuthorizedUser> authorized_users;         // empty: every refresh is refused
  // The secret of whoever started the emulator, accepted as a bearer token on every
  // route. `serve` makes a fresh one at each start and writes it 0600 to STATE/token;
  // never in a config file. Empty: none (only issued tokens are accepted).
  std::string owner_token;
  // Where a rotated owner secret goes (POST /emulator/v1/token:rotate, token.h
  // RotateOwner): `serve` writes it 0600 to STATE/token, where its owner's clients read
  // it. Unset: rotation is refused (FAILED_PRECONDITION). Never in a config file.
  std::function<Status(const std::string& secret)> publish_owner_token;
  // When true, the Cloud TPU API routes accept only tokens the token endpoint issued,
  // not owner_token (which still opens /emulator/), so a client's own OAuth flow is
  // checked end to end.
  bool require_issued_tokens = false;
};

struct EmulatorConfig {
  Timings timings;
  // Seeds node ids, operation ids and host keys, so a run can be repeated.
  uint64_t seed = 1;
  // Project ids the API answers for; empty means any.
  std::vector<std::string> projects;
  // Page size of list calls that give none (the real default is not published).
  int default_page_size = 500;
  // Largest page a list call returns, whatever it asks for.
  int max_page_size = 1000;
  // Most nodes one node spec of a queued resource may ask for with
  // multisliceParams.nodeCount (400 beyond). Google publishes no limit; every node here
  // is real worker hosts, and a count in the millions held the server's lock for 40 s.
  int max_multislice_nodes = 256;
  // Overrides of the default capacity (kDefaultZoneCapacityChips in every zone the
  // catalog lists for a family; none elsewhere).
  std::vector<CapacityLimit> capacity;
  // Quota limits; a family and region with no entry has no limit.
  std::vector<QuotaLimit> quota;
  AuthConfig auth;
  // Where the Compute Engine disks' backing files go (compute_disks.h DiskImages): a
  // directory the workers cannot see. `serve` gives <state dir>/disks. Empty: disks have
  // no backing file (an API-only server); never in a config file.
  std::string disk_dir;
};

/// The largest max_multislice_nodes a config may set: a request that big already takes
/// the server a noticeable time to plan.
inline constexpr long long kMaxMultisliceNodesLimit = 100'000;

/// Chips a zone offers per family when the config says nothing: enough that nothing
/// short of a stockout fault runs out.
inline constexpr long long kDefaultZoneCapacityChips = 1'000'000;

/// Parses a config document (see the header comment). `origin` names it in errors
/// ("emu.yaml:3:5: capacity[0].family: …"). Families are checked against `catalog`.
/// Key files named under auth.service_account_keys are not read here: their paths are
/// left in `key_files` for LoadEmulatorConfig.
Result<EmulatorConfig> ParseEmulatorConfig(std::string_view yaml_text, std::string_view origin,
                                           const Catalog& catalog,
                                           std::vector<std::string>* key_files);

/// Reads and parses the config file at `path`, then the key files it names: a
/// service-account key JSON (its public key is derived from `private_key`) or a PEM
/// public key.
Result<EmulatorConfig> LoadEmulatorConfig(const std::string& path, const Catalog& catalog);

/// A ServiceAccountKey from the text of a Google service-account key JSON file or of a
/// PEM public key. InvalidArgument when it is neither.
Result<ServiceAccountKey> ParseServiceAccountKey(std::string_view text, std::string_view origin);

}  // namespace tpufleet::emulator
