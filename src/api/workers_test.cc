// The exec, cp and forward wire types encoded from fixed values and compared with their
// golden files in src/api/testdata/ (TPUFLEET_UPDATE_GOLDEN=1 rewrites them: see
// api/testing/golden.h).
#include "api/workers.h"

#include <gtest/gtest.h>

#include "api/testing/golden.h"

namespace tpufleet::api {
namespace {

using api_testing::ExpectGolden;

TEST(ApiJson, ExecReport) {
  ExecReport report;
  ExecWorker ok;
  ok.worker = "pod/w0";
  ok.node = "pod";
  ok.index = 0;
  ok.outcome = "exited";
  ok.ok = true;
  ok.stdout_text = "hello\n";
  ok.exit_code = 0;
  ExecWorker cut = ok;
  cut.worker = "pod/w1";
  cut.index = 1;
  cut.ok = false;
  cut.stdout_text = "a line cut in the mid";
  cut.stderr_text = "warning: \xff not UTF-8\n";
  cut.truncated = true;
  cut.dropped_stdout = 1048576;
  cut.dropped_stderr = 0;
  cut.exit_code = 3;
  ExecWorker killed;
  killed.worker = "eval/w0";
  killed.node = "eval";
  killed.outcome = "signaled";
  killed.signal = "TERM";
  killed.message = "killed by SIGTERM";
  ExecWorker down;
  down.worker = "eval/w1";
  down.node = "eval";
  down.index = 1;
  down.outcome = "unreachable";
  down.message = "connect to 198.18.0.9:22: connection refused";
  report.workers = {ok, cut, killed, down};
  report.ok = false;
  report.failed = 3;
  report.truncated = true;
  ExpectGolden("src/api/testdata/exec_report.json", ToJson(report) + "\n");
}

TEST(ApiJson, CopyReport) {
  CopyReport report;
  report.workers = {{"pod/w0", true, "ssh", ""},
                    {"pod/w1", true, "relay", ""},
                    {"pod/w2", false, "ssh", "connect to 198.18.0.4:22: timed out"}};
  report.bytes = 16777216;
  report.seconds = 1.5;
  report.security_events = {"pod/w1: unauthenticated-connector 10.0.0.9: wrong key"};
  report.ok = false;
  ExpectGolden("src/api/testdata/copy_report.json", ToJson(report) + "\n");
}

TEST(ApiJson, ForwardStartedIsOneLine) {
  ForwardStarted f{"http://127.0.0.1:18888/", 18888, 8888, "pod/w0"};
  std::string json = ToJson(f);
  EXPECT_EQ(json.find('\n'), std::string::npos) << json;
  ExpectGolden("src/api/testdata/forward_started.json", json + "\n");
}

TEST(ApiJson, JobPlacesAreReadBackFromAJobsList) {
  JobsList list;
  list.jobs.push_back({});
  list.jobs[0].id = "j-1";
  list.jobs[0].name = "train";
  list.jobs[0].node = "pod";
  list.jobs[0].created_unix_ms = 7;
  list.jobs.push_back(list.jobs[0]);
  list.jobs[1].id = "j-2";
  list.jobs[1].ended = true;
  Result<std::vector<JobPlace>> places = ParseJobPlaces(ToJson(list));
  ASSERT_TRUE(places.ok()) << places.status().message();
  ASSERT_EQ(places->size(), 2u);
  EXPECT_EQ((*places)[0].id, "j-1");
  EXPECT_EQ((*places)[0].name, "train");
  EXPECT_EQ((*places)[0].node, "pod");
  EXPECT_EQ((*places)[0].created_unix_ms, 7);
  EXPECT_FALSE((*places)[0].ended);
  EXPECT_TRUE((*places)[1].ended);
  EXPECT_EQ(ParseJobPlaces("{\"jobs\": [{\"id\": \"j-1\"}]}").status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseJobPlaces("not json").status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tpufleet::api
