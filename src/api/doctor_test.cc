#include "api/doctor.h"

#include <gtest/gtest.h>

namespace tpufleet::api {
namespace {

TEST(ApiJson, DoctorListsEachWorkersChecksWithWhatToDo) {
  DoctorSummary s;
  s.workers.push_back({"pod/w1", "pod", 1, false,
                       {{"agent", true, "answers", ""},
                        {"agent_version", false, "runs 0123, the CLI has 4567",
                         "old agent version: run `tpufleet up` to replace it"}}});
  s.failed = 1;
  EXPECT_EQ(ToJson(s), R"({
  "failed": 1,
  "ok": false,
  "workers": [
    {
      "checks": [
        {
          "detail": "answers",
          "fix": "",
          "name": "agent",
          "ok": true
        },
        {
          "detail": "runs 0123, the CLI has 4567",
          "fix": "old agent version: run `tpufleet up` to replace it",
          "name": "agent_version",
          "ok": false
        }
      ],
      "index": 1,
      "node": "pod",
      "ok": false,
      "worker": "pod/w1"
    }
  ]
})");
}

}  // namespace
}  // namespace tpufleet::api
