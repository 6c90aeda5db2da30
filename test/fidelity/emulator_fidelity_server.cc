// emulator_fidelity_server: the emulator's HTTP server with fake worker hosts, for the
// fidelity tests that drive it with Google's own Node.js clients (run.sh).
//
//   emulator_fidelity_server --token-out FILE [--config FILE] [--sa-key-out FILE]
//                            [--require-tokens]
//
// It binds 127.0.0.1 on a free port, prints one line `LISTENING <port>` on stdout and
// serves until its standard input closes (so it never outlives the harness).
//   --config FILE      an emulator config (config.h); default: fast timings, shortened
//                      further so a scripted session takes seconds.
//   --token-out FILE   writes the owner's secret (mode 0600), as `tpufleet emulator
//                      start` writes STATE/token; every call but /token needs it or an
//                      issued token. POST /emulator/v1/token:rotate writes a new one there.
//   --sa-key-out FILE  writes a fresh service-account key JSON (mode 0600) whose public
//                      key the token endpoint accepts.
//   --require-tokens   the Cloud TPU API routes take only tokens the token endpoint
//                      issued, not the owner's secret.
// The authorized_user fidelity-client/fidelity-secret/fidelity-refresh may get a token.
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>

#include "core/catalog.h"
#include "emulator/api_server.h"
#include "emulator/config.h"
#include "emulator/http_server.h"
#include "emulator/testing/fake_worker_hosts.h"
#include "emulator/token.h"
#include "util/clock.h"
#include "util/file.h"
#include "util/secret.h"

namespace {

using tpufleet::emulator::EmulatorConfig;
using Millis = std::chrono::milliseconds;

int Fail(const std::string& message) {
  std::fprintf(stderr, "emulator_fidelity_server: %s\n", message.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::string config_path;
  std::string sa_key_out;
  std::string token_out;
  bool require_tokens = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--config" && i + 1 < argc) {
      config_path = argv[++i];
    } else if (arg == "--sa-key-out" && i + 1 < argc) {
      sa_key_out = argv[++i];
    } else if (arg == "--token-out" && i + 1 < argc) {
      token_out = argv[++i];
    } else if (arg == "--require-tokens") {
      require_tokens = true;
    } else {
      return Fail("usage: emulator_fidelity_server --token-out FILE [--config FILE] "
                  "[--sa-key-out FILE] [--require-tokens]");
    }
  }
  if (token_out.empty()) {
    return Fail("--token-out FILE is required: the server answers nothing without its token");
  }
  tpufleet::Result<tpufleet::Catalog> catalog =
      tpufleet::ParseCatalog(tpufleet::BuiltinCatalogYaml(), "built-in catalog");
  if (!catalog.ok()) {
    return Fail(catalog.status().ToString());
  }
  EmulatorConfig config;
  if (!config_path.empty()) {
    tpufleet::Result<EmulatorConfig> loaded =
        tpufleet::emulator::LoadEmulatorConfig(config_path, *catalog);
    if (!loaded.ok()) {
      return Fail(loaded.status().ToString());
    }
    config = std::move(loaded).value();
  } else {
    // Quicker than the fast defaults: the scripted session makes dozens of operations.
    config.timings.create = Millis(300);
    config.timings.start = Millis(200);
    config.timings.stop = Millis(200);
    config.timings.remove = Millis(200);
    config.timings.update = Millis(100);
    config.timings.stockout_fail = Millis(200);
    config.timings.qr_accept = Millis(100);
    config.timings.qr_wait = Millis(100);
    config.timings.qr_delete = Millis(100);
  }
  config.auth.authorized_users.push_back(
      {"fidelity-client", "fidelity-secret", "fidelity-refresh"});
  config.auth.require_issued_tokens = config.auth.require_issued_tokens || require_tokens;
  if (!sa_key_out.empty()) {
    auto key = tpufleet::emulator::GenerateServiceAccountKey(
        "fidelity@fidelity.iam.gserviceaccount.com", "fidelity", "http://127.0.0.1/token");
    if (!key.ok()) {
      return Fail(key.status().ToString());
    }
    if (tpufleet::Status s = tpufleet::WriteFileAtomic(sa_key_out, key->key_json, 0600); !s.ok()) {
      return Fail(s.ToString());
    }
    config.auth.service_account_keys.push_back(key->accepted);
  }

  tpufleet::Result<std::string> token = tpufleet::NewSecretToken("tpufleet-emulator-");
  if (!token.ok()) {
    return Fail(token.status().ToString());
  }
  if (tpufleet::Status s = tpufleet::WriteFileAtomic(token_out, *token + "\n", 0600); !s.ok()) {
    return Fail(s.ToString());
  }
  config.auth.owner_token = *token;
  // POST /emulator/v1/token:rotate writes the new secret where the first went, as the
  // daemon does.
  config.auth.publish_owner_token = [token_out](const std::string& fresh) {
    return tpufleet::WriteFileAtomic(token_out, fresh + "\n", 0600);
  };

  tpufleet::RealClock clock;
  tpufleet::emulator::FakeWorkerHosts hosts;
  tpufleet::emulator::ApiServer api(config, clock, &hosts, *catalog);
  tpufleet::emulator::HttpServer http(&api, tpufleet::emulator::HttpServerOptions{});
  tpufleet::Result<int> port = http.Start();
  if (!port.ok()) {
    return Fail(port.status().ToString());
  }
  std::printf("LISTENING %d\n", *port);
  std::fflush(stdout);
  // Serve until the harness closes our stdin (or goes away).
  char buf[256];
  while (std::fread(buf, 1, sizeof buf, stdin) > 0) {
  }
  http.Stop();
  return 0;
}
