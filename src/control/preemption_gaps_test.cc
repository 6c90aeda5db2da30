// The preemption gaps goodput counts, from serve's events in a real (SQLite) store.
#include "control/preemption_gaps.h"

#include <gtest/gtest.h>

#include "control/testing/test_world.h"

namespace tpufleet {
namespace {

using std::chrono::hours;
using std::chrono::minutes;
using testing::TestWorld;

TEST(PreemptionGapsTest, Issue17AGapRunsFromThePreemptionToTheJobResumed) {
  TestWorld t;
  const Clock::WallTime now = t.clock.Now();
  auto event = [&](Clock::WallTime at, const std::string& node, const std::string& kind) {
    ASSERT_TRUE(t.store->AddEvent({0, at, "lab", node, kind, ""}).ok());
  };
  // pod: the notice, then the API's state (one gap), its job resumed 40 min later, and
  // recovered just after. eval: preempted 2 days ago and deleted (outside the span).
  // spot: preempted 10 minutes ago, not back yet. trainer: a job resumed after
  // maintenance (no gap).
  event(now - hours(50), "eval", "preempted");
  event(now - hours(49), "eval", "deleted");
  event(now - hours(2), "pod", "preempted");
  event(now - hours(2) + minutes(1), "pod", "preempted");
  event(now - hours(2) + minutes(20), "pod", "ready");
  event(now - hours(2) + minutes(40), "pod", "job-resumed");
  event(now - hours(2) + minutes(41), "pod", "recovered");
  event(now - hours(1), "trainer", "job-resumed");
  event(now - minutes(10), "spot", "preempted");
  // solo: preempted, brought back READY by `up` with nothing to resume: its gap ends at
  // READY once kResumeWait has passed with no resume.
  event(now - hours(3), "solo", "preempted");
  event(now - hours(3) + minutes(5), "solo", "ready");

  Result<std::vector<PreemptionGap>> gaps = ReadPreemptionGaps(*t.store, now - hours(24), now);

  ASSERT_TRUE(gaps.ok()) << gaps.status().ToString();
  ASSERT_EQ(gaps->size(), 3u);
  EXPECT_EQ((*gaps)[0].node, "solo");
  EXPECT_EQ((*gaps)[0].end, now - hours(3) + minutes(5));
  EXPECT_EQ((*gaps)[1].node, "pod");
  EXPECT_EQ((*gaps)[1].start, now - hours(2));
  EXPECT_EQ((*gaps)[1].end, now - hours(2) + minutes(40));  // READY at 20 min: it resumed
  EXPECT_EQ((*gaps)[2].node, "spot");
  EXPECT_FALSE((*gaps)[2].end.has_value());
  // With the span reaching back: eval's gap, closed by its deletion.
  gaps = ReadPreemptionGaps(*t.store, now - hours(50), now);
  ASSERT_EQ(gaps->size(), 4u);
  EXPECT_EQ((*gaps)[0].node, "eval");
  EXPECT_EQ((*gaps)[0].end, now - hours(49));
}

}  // namespace
}  // namespace tpufleet
