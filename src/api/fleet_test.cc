// Each fleet wire type encoded from a fixed value and compared with its golden file in
// src/api/testdata/ (TPUFLEET_UPDATE_GOLDEN=1 rewrites them: see api/testing/golden.h).
// The values set every field, and both sides of each field written only sometimes.
#include "api/fleet.h"

#include <gtest/gtest.h>

#include "api/testing/golden.h"

namespace tpufleet::api {
namespace {

using api_testing::ExpectGolden;

Error Stockout() { return {"resource_exhausted", "no capacity for v4-32 in us-central2-b"}; }

std::vector<NodeOutcome> Outcomes() {
  return {{"trainer", true, std::nullopt}, {"eval", false, Stockout()}};
}

std::vector<LeftoverOutcome> LeftoversTried() {
  return {{"old", "us-central2-a", "lab", std::nullopt},
          {"stuck", "us-central2-b", "lab", Error{"unavailable", "HTTP 503"}}};
}

std::vector<Leftover> Leftovers() {
  return {{"stuck", "us-central2-b", "lab", true, "stockout", "HTTP 503"}};
}

std::vector<UntrackedNode> Untracked() {
  return {{"stray", "us-central2-a", "lab", "lab-project", "READY", ""},
          {"trainer", "us-central2-a", "lab", "lab-project", "CREATING", "us-central2-b"}};
}

TEST(ApiJson, UpPlan) {
  UpPlan plan;
  plan.nodes = {{"trainer", "create", {"us-central2-b", "us-central2-a"}, "", "", 0,
                 "v4-32", "spot", 6.44},
                {"eval", "keep", {"us-central2-b"}, "READY", "", 4, "v4-8", "on-demand", 12.88},
                {"lab1", "keep", {}, "", "", 0, "", "on-demand", 0}};
  plan.usd_per_hour = 19.32;
  plan.leftovers = Leftovers();
  plan.untracked = Untracked();
  ExpectGolden("src/api/testdata/up_plan.json", ToJson(plan) + "\n");
}

TEST(ApiJson, UpReport) {
  UpReport report;
  report.fleet = "lab";
  report.nodes = Outcomes();
  report.not_in_spec = {"retired"};
  report.leftovers_tried = LeftoversTried();
  report.leftovers = Leftovers();
  report.untracked = Untracked();
  report.ssh_config = "/var/lib/tpufleet/ssh/config";
  ExpectGolden("src/api/testdata/up_report.json", ToJson(report) + "\n");
}

TEST(ApiJson, EmptyUpReportHasEveryKey) {
  ExpectGolden("src/api/testdata/up_report_empty.json", ToJson(UpReport{}) + "\n");
}

TEST(ApiJson, DownReport) {
  DownReport report;
  report.nodes = Outcomes();
  report.leftovers_tried = LeftoversTried();
  ExpectGolden("src/api/testdata/down_report.json", ToJson(report) + "\n");
}

TEST(ApiJson, ImportReport) {
  ImportReport report;
  report.nodes = Outcomes();
  ExpectGolden("src/api/testdata/import_report.json", ToJson(report) + "\n");
}

TEST(ApiJson, StatusReport) {
  StatusReport report;
  NodeStatus pod;
  pod.node = "pod";
  pod.fleet = "lab";
  pod.provider = "gcp-tpu";
  pod.project = "lab-project";
  pod.zone = "us-central2-b";
  pod.type = "v4-16";
  pod.capacity = "spot";
  pod.state = "READY";
  pod.health = "HEALTHY";
  pod.workers = {{0, "198.18.0.2", "t1v-n-pod-w-0", true}, {1, "198.18.0.3", "", false}};
  pod.age_seconds = 5400;
  pod.labels = {{"team", "a"}, {"role", "train"}};
  pod.data_disks = {{"data", "projects/p/zones/us-central2-b/disks/data", "read-only"}};
  pod.cost_usd = 4.83;
  pod.cost_is_upper_bound = true;
  NodeStatus lab;
  lab.node = "lab1";
  lab.fleet = "lab";
  lab.provider = "ssh-hosts";
  lab.refresh_error = "unavailable: connection refused";
  report.nodes = {pod, lab};
  report.leftovers = {{"stuck", "lab", "us-central2-b", true, "v4-32", "spot", "stockout",
                       "HTTP 503", 600, 0.54, true},
                      {"odd", "lab", "us-central2-a", false, "v9-1", "on-demand", "superseded",
                       "", 60, std::nullopt, false}};
  report.untracked = Untracked();
  ExpectGolden("src/api/testdata/status_report.json", ToJson(report) + "\n");
}

TEST(ApiJson, Events) {
  std::vector<Event> events = {
      {1, "2026-01-01T00:00:00Z", "lab", "trainer", "create-requested", "zone=us-central2-b"},
      {2, "2026-01-01T00:00:05Z", "lab", "trainer", "stockout",
       "zone=us-central2-b type=v4-32"},
      {3, "2026-01-01T00:04:10Z", "lab", "trainer", "ready", ""}};
  ExpectGolden("src/api/testdata/events.json", ToJson(events) + "\n");
}

TEST(ApiJson, ErrorOfNamesTheCode) {
  EXPECT_FALSE(ErrorOf(Status::Ok()));
  std::optional<Error> e = ErrorOf(NotFoundError("no node named 'x'"));
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code, "not_found");
  EXPECT_EQ(e->message, "no node named 'x'");
}

// What the cloud says is bytes, not always UTF-8: the document says it with U+FFFD
// rather than failing (nlohmann's strict default throws, which ended the process).
TEST(ApiJson, BytesThatAreNotUtf8BecomeReplacementCharacters) {
  StatusReport report;
  NodeStatus n;
  n.node = "pod";
  n.state = "READY\xff\xfe";
  report.nodes = {n};
  std::string json = ToJson(report);
  EXPECT_NE(json.find("\"READY\xef\xbf\xbd\xef\xbf\xbd\""), std::string::npos) << json;
}

}  // namespace
}  // namespace tpufleet::api
