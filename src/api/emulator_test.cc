// The emulator's wire types (`tpufleet emulator … --json`, its admin API) encoded from
// fixed values and compared with their golden files in src/api/testdata/
// (TPUFLEET_UPDATE_GOLDEN=1 rewrites them: see api/testing/golden.h), and read back.
#include "api/emulator.h"

#include <gtest/gtest.h>

#include "api/testing/golden.h"

namespace tpufleet::api {
namespace {

using api_testing::ExpectGolden;

EmulatorDaemon Running() {
  return {.running = true,
          .state_dir = "/run/tpufleet-emulator",
          .pid = 4242,
          .endpoint = "http://127.0.0.1:8470/",
          .token_file = "/run/tpufleet-emulator/token"};
}

constexpr const char* kZone = "projects/p/locations/us-central2-b";

// A status with one of everything: a spot node of a queued resource with a worker cut
// off, a chip taken away and a preemption pending, a storm, a cut-off and a device
// fault, capacity and quota use.
EmulatorStatus BusyStatus() {
  const std::string node = std::string(kZone) + "/nodes/train-0";
  const std::string qr = std::string(kZone) + "/queuedResources/train";
  EmulatorStatus s;
  s.now = "2026-11-23T12:00:00Z";
  // name, state, type, chips, spot, workers, health, queued resource, operation,
  // preemption pending, maintenance.
  s.nodes = {{node,
              "READY",
              "v4-16",
              8,
              true,
              {{0, "198.18.0.2", "t1v-n-0-w-0", "ssh-ed25519 AAAA0", false, 3},
               {1, "198.18.0.3", "t1v-n-0-w-1", "ssh-ed25519 AAAA1", true, 4}},
              "HEALTHY",
              qr,
              "",
              true,
              ""},
             {std::string(kZone) + "/nodes/eval",
              "CREATING",
              "v4-8",
              4,
              false,
              {},
              "",
              "",
              std::string(kZone) + "/operations/op-1",
              false,
              "PENDING"}};
  s.queued_resources = {{qr, "ACTIVE", {node}}};
  EmulatorFault storm;
  storm.id = "f1";
  storm.kind = "storm";
  storm.create_time = "2026-11-23T11:59:00Z";
  storm.storm = EmulatorFault::Storm{0.3, {429, 503}, 7};
  storm.duration = "30s";
  storm.end_time = "2026-11-23T11:59:30Z";
  EmulatorFault cutoff;
  cutoff.id = "f2";
  cutoff.kind = "cutoff";
  cutoff.create_time = "2026-11-23T11:59:10Z";
  cutoff.node = node;
  cutoff.worker = 1;
  EmulatorFault device = cutoff;  // chip 2 of worker 0
  device.id = "f3";
  device.kind = "device";
  device.create_time = "2026-11-23T11:59:20Z";
  device.worker = 0;
  device.device = 2;
  s.faults = {storm, cutoff, device};
  // zone, region, tier, family, chips in use, chips limit.
  s.capacity = {{"us-central2-b", "", "", "v4", 12, 4096}};
  s.quota = {{"", "us-central2", "spot", "v4", 8, 16}};
  s.operations_total = 3;
  s.operations_pending = 1;
  s.host_work_pending = 2;
  return s;
}

TEST(ApiJson, EmulatorDaemon) {
  ExpectGolden("src/api/testdata/emulator_daemon.json", ToJson(Running()) + "\n");
  EmulatorDaemon none;
  none.state_dir = "/run/tpufleet-emulator";
  ExpectGolden("src/api/testdata/emulator_not_running.json", ToJson(none) + "\n");
}

TEST(ApiJson, EmulatorStopped) {
  ExpectGolden("src/api/testdata/emulator_stopped.json",
               ToJson(EmulatorStopped{true, "/run/tpufleet-emulator"}) + "\n");
}

TEST(ApiJson, EmulatorStatus) {
  EmulatorStatus s = BusyStatus();
  ExpectGolden("src/api/testdata/emulator_admin_status.json", ToJson(s) + "\n");
  s.daemon = Running();
  ExpectGolden("src/api/testdata/emulator_status.json", ToJson(s) + "\n");
}

TEST(ApiJson, EmulatorFaults) {
  ExpectGolden("src/api/testdata/emulator_faults.json", ToJson(BusyStatus().faults) + "\n");
  EXPECT_EQ(ToJsonLine(BusyStatus().faults[1]),
            R"({"createTime":"2026-11-23T11:59:10Z","id":"f2","kind":"cutoff",)"
            R"("node":"projects/p/locations/us-central2-b/nodes/train-0","worker":1})");
}

// What the CLI reads back from the admin API is what the daemon wrote.
TEST(ApiJson, EmulatorStatusReadsBack) {
  std::string text = ToJson(BusyStatus());
  Result<EmulatorStatus> read = ParseEmulatorStatus(text);
  ASSERT_TRUE(read.ok()) << read.status().message();
  EXPECT_EQ(ToJson(*read), text);
  EXPECT_EQ(read->nodes.at(0).workers.at(1).cut_off, true);
  EXPECT_EQ(read->nodes.at(0).workers.at(0).devices, 3);
  EXPECT_EQ(read->faults.at(2).device, 2);
  EXPECT_EQ(read->faults.at(0).storm->seed, 7u);
}

TEST(ApiJson, EmulatorStatusRefusesWhatIsNotOne) {
  EXPECT_FALSE(ParseEmulatorStatus("not json").ok());
  EXPECT_FALSE(ParseEmulatorStatus("[]").ok());
  Result<EmulatorStatus> bad = ParseEmulatorStatus(R"({"nodes": [{"chips": "many"}]})");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("\"chips\""), std::string::npos) << bad.status().message();
  EXPECT_FALSE(ParseEmulatorStatus(R"({"nodes": 3})").ok());
}

}  // namespace
}  // namespace tpufleet::api
