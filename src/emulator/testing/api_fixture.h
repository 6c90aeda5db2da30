// ApiFixture: a GoogleTest fixture around one ApiServer with a FakeClock, a
// FakeWorkerHosts and the built-in catalog, for the emulator's unit tests. Requests go
// through ApiServer::Handle (no sockets); time moves only when the test says so, and
// WorkerHosts calls run only when it calls RunHostWork(). Requests carry the owner's
// token (kOwnerToken) unless a test gives its own "authorization" header ("" for none).
//
// Thread-safety: one test thread.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "core/catalog.h"
#include "emulator/api_server.h"
#include "emulator/config.h"
#include "emulator/testing/fake_worker_hosts.h"
#include "util/testing/fake_clock.h"

namespace tpufleet::emulator {

class ApiFixture : public ::testing::Test {
 protected:
  using Json = nlohmann::json;
  using milliseconds = std::chrono::milliseconds;
  using seconds = std::chrono::seconds;

  /// The parent every test uses unless it says otherwise: v4 is offered only here.
  static constexpr const char* kZone = "us-central2-b";
  static constexpr const char* kParent = "/v2/projects/p/locations/us-central2-b";
  /// The owner's secret of every server the fixture builds (AuthConfig::owner_token).
  static constexpr const char* kOwnerToken = "owner-secret-for-tests";

  struct Reply {
    int status = 0;
    Json json;
    std::string text;
  };

  ApiFixture() : catalog_(ParseCatalog(BuiltinCatalogYaml(), "built-in catalog").value()) {
    Reset(EmulatorConfig());
  }

  /// Replaces the server with one built from `config` (fresh state, same clock); its
  /// owner token is kOwnerToken unless `config` names one.
  void Reset(EmulatorConfig config) {
    if (config.auth.owner_token.empty()) {
      config.auth.owner_token = kOwnerToken;
    }
    server_.reset();
    hosts_ = std::make_unique<FakeWorkerHosts>();
    server_ = std::make_unique<ApiServer>(std::move(config), clock_, hosts_.get(), catalog_);
  }

  Reply Send(const std::string& method, const std::string& path_and_query,
             const std::string& body = "", std::map<std::string, std::string> headers = {}) {
    HttpRequest req;
    req.method = method;
    size_t q = path_and_query.find('?');
    req.path = path_and_query.substr(0, q);
    if (q != std::string::npos) {
      std::string query = path_and_query.substr(q + 1);
      size_t start = 0;
      while (start <= query.size()) {
        size_t amp = query.find('&', start);
        std::string kv =
            query.substr(start, amp == std::string::npos ? std::string::npos : amp - start);
        if (!kv.empty()) {
          size_t eq = kv.find('=');
          req.query.emplace(kv.substr(0, eq), eq == std::string::npos ? "" : kv.substr(eq + 1));
        }
        if (amp == std::string::npos) {
          break;
        }
        start = amp + 1;
      }
    }
    headers.emplace("authorization", std::string("Bearer ") + kOwnerToken);
    req.headers = std::move(headers);
    req.body = body;
    HttpResponse resp = server_->Handle(req);
    Reply r;
    r.status = resp.status;
    r.text = resp.body;
    r.json = Json::parse(resp.body, nullptr, false);
    return r;
  }
  /// The HTTP status of a GET of `path_and_query` with the Authorization header
  /// `authorization` ("" for none).
  int GetStatusAs(const std::string& path_and_query, const std::string& authorization) {
    return Send("GET", path_and_query, "", {{"authorization", authorization}}).status;
  }
  Reply Get(const std::string& path) { return Send("GET", path); }
  Reply Post(const std::string& path, const Json& body = Json::object()) {
    return Send("POST", path, body.dump());
  }
  Reply Patch(const std::string& path, const Json& body) {
    return Send("PATCH", path, body.dump());
  }
  Reply Delete(const std::string& path) { return Send("DELETE", path); }

  /// Runs every queued WorkerHosts call.
  size_t RunHostWork() { return server_->RunPendingHostWork(); }

  /// Lets `d` pass in steps of `step`, running host work and ticking at each.
  void Pass(std::chrono::milliseconds d,
            std::chrono::milliseconds step = std::chrono::milliseconds(100)) {
    for (std::chrono::milliseconds t{0}; t < d; t += step) {
      RunHostWork();
      clock_.Advance(step);
      server_->Tick();
    }
    RunHostWork();
    server_->Tick();
  }

  /// Polls the operation `name` (full resource name) while time passes, until done or
  /// `limit` has passed; returns its last state.
  Json WaitOperation(const std::string& name,
                     std::chrono::milliseconds limit = std::chrono::seconds(60)) {
    Json op;
    for (std::chrono::milliseconds t{0}; t <= limit; t += std::chrono::milliseconds(100)) {
      op = Get("/v2/" + name).json;
      if (op.value("done", false)) {
        return op;
      }
      Pass(std::chrono::milliseconds(100));
    }
    return op;
  }

  /// A node body of `type` (with the default runtime of its family).
  static Json NodeBody(const std::string& type = "v4-8") {
    std::string runtime = "tpu-ubuntu2204-base";
    if (type.rfind("v5litepod", 0) == 0) {
      runtime = "v2-alpha-tpuv5-lite";
    } else if (type.rfind("v6e", 0) == 0) {
      runtime = "v2-alpha-tpuv6e";
    } else if (type.rfind("v5p", 0) == 0) {
      runtime = "v2-alpha-tpuv5";
    }
    return Json{{"acceleratorType", type}, {"runtimeVersion", runtime}};
  }

  /// Creates node `id` in kParent and waits until its create operation is done;
  /// returns the finished operation.
  Json CreateNode(const std::string& id, const Json& body = NodeBody()) {
    Reply r = Post(std::string(kParent) + "/nodes?nodeId=" + id, body);
    EXPECT_EQ(r.status, 200) << r.text;
    return WaitOperation(r.json.value("name", std::string()));
  }

  /// The Compute Engine API's error envelope (compute_wire.h) a user sees.
  static Json ComputeErrorJson(int code, const std::string& reason, const std::string& message) {
    return Json{{"error",
                 {{"code", code},
                  {"message", message},
                  {"errors", {{{"message", message}, {"domain", "global"}, {"reason", reason}}}}}}};
  }

  static std::string NodePath(const std::string& id) {
    return std::string(kParent) + "/nodes/" + id;
  }
  static std::string NodeName(const std::string& id) {
    return std::string("projects/p/locations/") + kZone + "/nodes/" + id;
  }

  FakeClock clock_;
  Catalog catalog_;
  std::unique_ptr<FakeWorkerHosts> hosts_;
  std::unique_ptr<ApiServer> server_;
};

}  // namespace tpufleet::emulator
