// The fleet commands' own checks, in-process: what is refused before the world (state,
// cloud) is touched at all. Their work against a cloud is tested in src/control and,
// through the binary against the emulator, in test/fleet_e2e_test.sh.
#include <gtest/gtest.h>

#include <string>

#include "cli/fleet_world.h"
#include "cli/testing/run_cli.h"

namespace tpufleet::cli {
namespace {

using cli_testing::Contains;
using cli_testing::Output;
using cli_testing::Tpufleet;

class FleetCommandsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    opened_ = 0;
    SetWorldFactory([](Invocation&, bool) -> Result<std::unique_ptr<WorldHandle>> {
      ++opened_;
      return FailedPreconditionError("test world: not available");
    });
  }
  void TearDown() override { SetWorldFactory(nullptr); }

  static inline int opened_ = 0;  // how often a command reached for the world
};

TEST_F(FleetCommandsTest, BadSpecStopsUpBeforeAnyStateOrApiCall) {
  Output o = Tpufleet({"up", std::string(TPUFLEET_SOURCE_DIR) + "/examples/broken/wrong-type.yaml"});
  EXPECT_EQ(o.code, 1);
  EXPECT_TRUE(Contains(o.err, "wrong-type.yaml:")) << o.err;
  EXPECT_EQ(opened_, 0);
}

TEST_F(FleetCommandsTest, UsageErrorsExit2AndTouchNothing) {
  EXPECT_EQ(Tpufleet({"up"}).code, 2);
  EXPECT_EQ(Tpufleet({"up", "a.yaml", "--timeout", "soon"}).code, 2);
  EXPECT_EQ(Tpufleet({"down"}).code, 2);
  EXPECT_EQ(Tpufleet({"down", "trainer", "--all"}).code, 2);
  EXPECT_EQ(Tpufleet({"import", "--zones", "us-central2-b"}).code, 2);
  Output bad_fleet = Tpufleet({"import", "--project", "p", "--zones", "z", "--fleet", "Bad Name"});
  EXPECT_EQ(bad_fleet.code, 2);
  EXPECT_TRUE(Contains(bad_fleet.err, "--fleet")) << bad_fleet.err;
  EXPECT_EQ(opened_, 0);
}

TEST_F(FleetCommandsTest, WorldErrorsAreReportedOnce) {
  Output o = Tpufleet({"status"});
  EXPECT_EQ(o.code, 1);
  EXPECT_TRUE(Contains(o.err, "test world: not available")) << o.err;
  EXPECT_EQ(opened_, 1);
}

}  // namespace
}  // namespace tpufleet::cli
