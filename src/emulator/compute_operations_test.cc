#include "emulator/compute_operations.h"

#include <gtest/gtest.h>

#include "util/testing/fake_clock.h"

namespace tpufleet::emulator {
namespace {

constexpr const char* kRoot = "http://127.0.0.1:8080/compute/v1/";

TEST(ComputeOperations, AZoneOperationRunsUntilItsModuleFinishesIt) {
  FakeClock clock;
  ComputeOperations ops(7);
  ComputeOperation& op =
      ops.Start("p", "us-central2-b", "insert", "projects/p/zones/us-central2-b/disks/d", "42",
                clock.Now());
  std::string path = op.Path();
  EXPECT_EQ(path.rfind("projects/p/zones/us-central2-b/operations/operation-1767225600000-", 0),
            0u)
      << path;
  Json running = ComputeOperations::Render(op, kRoot);
  EXPECT_EQ(running["kind"], "compute#operation");
  EXPECT_EQ(running["status"], "RUNNING");
  EXPECT_EQ(running["operationType"], "insert");
  EXPECT_EQ(running["targetLink"], std::string(kRoot) + "projects/p/zones/us-central2-b/disks/d");
  EXPECT_EQ(running["targetId"], "42");
  EXPECT_EQ(running["zone"], std::string(kRoot) + "projects/p/zones/us-central2-b");
  EXPECT_EQ(running["selfLink"], std::string(kRoot) + path);
  EXPECT_EQ(running["insertTime"], "2026-01-01T00:00:00.000-00:00");
  EXPECT_FALSE(running.contains("endTime"));
  EXPECT_FALSE(running.contains("error"));

  clock.Advance(std::chrono::milliseconds(1500));
  ops.Finish(path, clock.Now());
  Json done = ComputeOperations::Render(*ops.Find("projects/p/zones/us-central2-b", op.name), kRoot);
  EXPECT_EQ(done["status"], "DONE");
  EXPECT_EQ(done["progress"], 100);
  EXPECT_EQ(done["endTime"], "2026-01-01T00:00:01.500-00:00");
  // Found by its numeric id as well as by its name.
  EXPECT_EQ(ops.Find("projects/p/zones/us-central2-b", done["id"].get<std::string>()), &op);
  EXPECT_EQ(ops.Find("projects/p/global", op.name), nullptr);
}

TEST(ComputeOperations, AFailedOperationCarriesComputesErrorFields) {
  FakeClock clock;
  ComputeOperations ops(7);
  std::string path = ops.Start("p", "", "setCommonInstanceMetadata", "projects/p", "", clock.Now())
                         .Path();
  EXPECT_EQ(path.rfind("projects/p/global/operations/", 0), 0u);
  ops.Fail(path,
           {409, "resourceInUseByAnotherResource", "The disk 'd' is in use",
            "RESOURCE_IN_USE_BY_ANOTHER_RESOURCE"},
           clock.Now());
  // A later Finish does not undo the failure.
  ops.Finish(path, clock.Now());
  Json j = ComputeOperations::Render(*ops.List("projects/p/global").at(0), kRoot);
  EXPECT_EQ(j["status"], "DONE");
  EXPECT_FALSE(j.contains("zone"));
  EXPECT_EQ(j["error"], (Json{{"errors",
                               {{{"code", "RESOURCE_IN_USE_BY_ANOTHER_RESOURCE"},
                                 {"message", "The disk 'd' is in use"}}}}}));
  EXPECT_EQ(j["httpErrorStatusCode"], 409);
  EXPECT_EQ(j["httpErrorMessage"], "CONFLICT");
}

TEST(ComputeOperations, ListsByScopeOldestFirstAndForgetsTheOldestDone) {
  FakeClock clock;
  ComputeOperations ops(1);
  std::vector<std::string> paths;
  for (size_t i = 0; i < kMaxComputeOperations + 2; ++i) {
    clock.Advance(std::chrono::milliseconds(1));
    paths.push_back(ops.Start("p", "", "x", "projects/p", "", clock.Now()).Path());
  }
  ops.Start("p", "z", "x", "projects/p", "", clock.Now());
  ops.Start("q", "", "x", "projects/q", "", clock.Now());
  std::vector<const ComputeOperation*> global = ops.List("projects/p/global");
  ASSERT_EQ(global.size(), paths.size());
  EXPECT_EQ(global.front()->Path(), paths.front());
  EXPECT_EQ(global.back()->Path(), paths.back());
  for (const std::string& p : paths) {
    ops.Finish(p, clock.Now());
  }
  global = ops.List("projects/p/global");
  ASSERT_EQ(global.size(), kMaxComputeOperations);
  EXPECT_EQ(global.front()->Path(), paths[2]);
  EXPECT_EQ(ops.List("projects/p/zones/z").size(), 1u);
  ops.Erase(paths.back());
  EXPECT_EQ(ops.List("projects/p/global").size(), kMaxComputeOperations - 1);
}

}  // namespace
}  // namespace tpufleet::emulator
