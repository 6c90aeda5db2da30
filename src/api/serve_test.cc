// serve's API documents, read back as a program reading them would.
#include "api/serve.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace tpufleet::api {
namespace {

using nlohmann::json;

TEST(ServeJson, StatusCarriesTheProcessAndEachNode) {
  ServeStatus s;
  s.serve = {1234, "lab-1", {"lab"}, "2026-01-01T00:00:00Z", "2026-01-01T00:01:00Z", 3.5, 12,
             40, 1, 1};
  s.nodes = {{"trainer", "lab", "us-central2-b", "v4-32", "spot", "READY", 60, 41.5},
             {"eval", "lab", "us-central2-b", "v4-8", "on-demand", "CREATING", 5, std::nullopt}};
  s.warnings = {"trainer: the provider refused the credential (HTTP 401)"};
  json j = json::parse(ToJson(s));
  EXPECT_EQ(j["serve"]["pid"], 1234);
  EXPECT_EQ(j["serve"]["host"], "lab-1");
  EXPECT_EQ(j["serve"]["fleets"], json::array({"lab"}));
  EXPECT_EQ(j["serve"]["last_pass_seconds_ago"], 3.5);
  EXPECT_EQ(j["serve"]["passes"], 12);
  EXPECT_EQ(j["nodes"].size(), 2u);
  EXPECT_EQ(j["nodes"][0]["state"], "READY");
  EXPECT_EQ(j["nodes"][0]["last_recover_seconds"], 41.5);
  EXPECT_TRUE(j["nodes"][1]["last_recover_seconds"].is_null());
  EXPECT_EQ(j["warnings"][0], s.warnings[0]);
}

TEST(ServeJson, BeforeTheFirstPassTheLastPassIsNull) {
  ServeStatus s;
  json j = json::parse(ToJson(s));
  EXPECT_EQ(j["serve"]["last_pass"], "");
  EXPECT_TRUE(j["serve"]["last_pass_seconds_ago"].is_null());
  EXPECT_EQ(j["nodes"], json::array());
}

TEST(ServeJson, JobsAreAList) {
  std::vector<RestartableJob> jobs = {{"j-1", "train", "lab", "trainer", "on-preemption", 10, 2,
                                       "active", "preempted", "2026-01-01T00:00:00Z",
                                       "2026-01-01T00:05:00Z"}};
  json j = json::parse(ToJson(jobs));
  ASSERT_EQ(j["jobs"].size(), 1u);
  EXPECT_EQ(j["jobs"][0]["restarts"], 2);
  EXPECT_EQ(j["jobs"][0]["restart"], "on-preemption");
  EXPECT_EQ(j["jobs"][0]["last_reason"], "preempted");
  EXPECT_EQ(json::parse(ToJson(std::vector<RestartableJob>{}))["jobs"], json::array());
}

}  // namespace
}  // namespace tpufleet::api
