// `tpufleet doctor` through Main over a TestWorld whose workers answer as node agents
// (FakeAgents, which knows no doctor op: every worker then fails its agent check): a
// target that names no worker is a usage error, failing workers print first with what
// to do, the exit status says whether every check passed, --json says the same. The
// checks themselves: control/doctor_test.cc; against real agents: test/agent_e2e.sh.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/testing/lent_world.h"
#include "cli/testing/run_cli.h"
#include "control/testing/job_lab.h"
#include "util/strings.h"

namespace tpufleet::cli {
namespace {

using cli_testing::Contains;
using cli_testing::Output;
using cli_testing::Tpufleet;

class DoctorCommandTest : public tpufleet::testing::JobLab {
 protected:
  int opened_ = 0;
  App app_ = cli_testing::AppLending(t_.world, &opened_);
};

TEST_F(DoctorCommandTest, ATargetWithNoWorkersIsAUsageError) {
  Output o = Tpufleet(app_, {"doctor", "team=nobody"});
  EXPECT_EQ(o.code, 2) << o.err;
  EXPECT_TRUE(Contains(o.err, "team=nobody")) << o.err;
  EXPECT_TRUE(t_.fanout.jobs.empty()) << "nothing was asked";
}

TEST_F(DoctorCommandTest, EachFailingWorkerIsALineSayingWhatToDoAndTheExitIs1) {
  agents_.worker("solo/w0").agent_running = false;
  Output o = Tpufleet(app_, {"doctor", "solo"});
  EXPECT_EQ(o.code, 1) << o.err;
  std::vector<std::string> lines = Split(std::string(Trim(o.out)), '\n');
  ASSERT_GE(lines.size(), 2u) << o.out;
  EXPECT_TRUE(Contains(lines[0], "solo/w0: FAIL agent: ")) << lines[0];
  EXPECT_TRUE(Contains(lines[0], "not running")) << lines[0];
  EXPECT_TRUE(Contains(lines[0], "-> run `tpufleet up`")) << lines[0];
  EXPECT_EQ(lines.back(), "0 of 1 workers healthy.");

  Output j = Tpufleet(app_, {"doctor", "solo", "--json"});
  EXPECT_EQ(j.code, 1);
  nlohmann::json doc = nlohmann::json::parse(j.out);
  EXPECT_EQ(doc["ok"], false);
  EXPECT_EQ(doc["failed"], 1);
  EXPECT_EQ(doc["workers"][0]["worker"], "solo/w0");
  EXPECT_EQ(doc["workers"][0]["checks"][0]["name"], "agent");
}

}  // namespace
}  // namespace tpufleet::cli
