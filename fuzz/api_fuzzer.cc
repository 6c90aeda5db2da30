// libFuzzer target for what the gcp-tpu provider reads from the Cloud TPU API: the
// input is the body of an API answer. Every GcpTpuProvider call is answered with it as
// HTTP 200 (operations, nodes, queued resources, list pages, guest attributes), and
// one call as each error status (Google's error envelope, or a proxy's page). On any
// body each call returns a value that keeps its promises or one classified error; it
// never crashes, throws, hangs or runs out of memory. Run it as fuzz/README.md says.
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "provider/gcp_tpu.h"
#include "provider/testing/fake_token_source.h"
#include "provider/testing/scripted_http_client.h"
#include "util/testing/fake_clock.h"

namespace {

using tpufleet::CloudNode;
using tpufleet::CloudOperation;
using tpufleet::CloudQueuedResource;
using tpufleet::GcpTpuProvider;
using tpufleet::Result;
using tpufleet::Status;
using tpufleet::StatusCode;

constexpr const char* kZone = "us-central2-b";
constexpr const char* kNode = "trainer";

// The error statuses the TPU API (or a proxy in front of it) answers with: each is
// classified from the body's envelope, or from the code when there is none.
constexpr std::array<int, 9> kErrorStatuses = {400, 401, 403, 404, 409, 429, 500, 503, 504};

void Require(bool ok) {
  if (!ok) {
    std::abort();  // a broken promise is a crash
  }
}

// A failure is one classified error with something to show the user.
void CheckError(const Status& status) {
  Require(!status.ok() && !status.message().empty());
}

void CheckNode(const Result<CloudNode>& node) {
  if (!node.ok()) {
    CheckError(node.status());
    return;
  }
  Require(!node->id.empty() && !node->zone.empty());
  Require(node->cloud_name.starts_with("projects/") &&
          node->cloud_name.ends_with("/locations/" + node->zone + "/nodes/" + node->id));
  for (size_t i = 0; i < node->workers.size(); ++i) {
    Require(node->workers[i].index == static_cast<int>(i));
  }
}

void CheckQueuedResource(const Result<CloudQueuedResource>& qr) {
  if (!qr.ok()) {
    CheckError(qr.status());
    return;
  }
  Require(!qr->id.empty() && !qr->zone.empty());
  // Only a FAILED queued resource carries a failure, and then always one.
  Require((qr->state == tpufleet::NodeState::kFailed) == !qr->failure.ok());
}

void CheckOperation(const Result<CloudOperation>& op) {
  if (!op.ok()) {
    CheckError(op.status());
    return;
  }
  Require(!op->name.empty());
  Require(op->done || op->error.ok());
}

tpufleet::CreateNodeRequest Request(bool queued) {
  tpufleet::CreateNodeRequest r;
  r.zone = kZone;
  r.node_id = kNode;
  r.type = "v4-32";
  r.runtime_version = "tpu-ubuntu2204-base";
  r.request_id = "6f1c2a7e-0000-4000-8000-000000000001";
  if (queued) {
    r.queued = tpufleet::QueuedSpec{};
  }
  return r;
}

// A provider whose every request is answered `status` with `body`; one attempt per
// call, so nothing is retried and the fake clock never moves.
struct Harness {
  explicit Harness(int status, const std::string& body) {
    http.Handle([status, body](const tpufleet::HttpRequest&) -> Result<tpufleet::HttpResponse> {
      return tpufleet::HttpResponse{status, {}, body};
    });
    tpufleet::GcpTpuOptions options;
    options.project = "p";
    options.endpoint = "http://tpu.test/";
    options.retry.max_attempts = 1;
    provider.emplace(options, tokens, http, clock);
  }

  tpufleet::FakeTokenSource tokens;
  tpufleet::ScriptedHttpClient http;
  tpufleet::FakeClock clock;
  std::optional<GcpTpuProvider> provider;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string body(reinterpret_cast<const char*>(data), size);

  Harness ok(200, body);
  GcpTpuProvider& p = *ok.provider;
  CheckOperation(p.CreateNode(Request(false)));
  CheckOperation(p.CreateNode(Request(true)));
  CheckOperation(p.DeleteNode(kZone, kNode));
  CheckOperation(p.DeleteQueuedResource(kZone, kNode, true));
  CheckOperation(p.SetSshKeys(kZone, kNode, "alice:ssh-ed25519 AAAA alice"));
  CheckOperation(p.GetOperation("projects/p/locations/us-central2-b/operations/operation-1"));
  CheckNode(p.GetNode(kZone, kNode));
  CheckQueuedResource(p.GetQueuedResource(kZone, kNode));
  if (auto nodes = p.ListNodes({kZone}); nodes.ok()) {
    for (const CloudNode& n : *nodes) {
      CheckNode(n);
    }
  } else {
    CheckError(nodes.status());
  }
  if (auto qrs = p.ListQueuedResources({kZone}); qrs.ok()) {
    for (const CloudQueuedResource& qr : *qrs) {
      CheckQueuedResource(qr);
    }
  } else {
    CheckError(qrs.status());
  }
  if (auto workers = p.GetWorkerIdentities(kZone, kNode); workers.ok()) {
    for (size_t i = 0; i < workers->size(); ++i) {
      Require((*workers)[i].index == static_cast<int>(i));
    }
  } else {
    CheckError(workers.status());
  }

  // Every error answer is classified the same way whichever call met it.
  for (int status : kErrorStatuses) {
    Harness failing(status, body);
    Result<CloudNode> node = failing.provider->GetNode(kZone, kNode);
    Require(!node.ok());
    CheckError(node.status());
    Require(node.status().code() != StatusCode::kOk);
  }
  return 0;
}
