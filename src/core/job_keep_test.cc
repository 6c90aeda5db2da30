#include "core/job_keep.h"

#include <gtest/gtest.h>

namespace tpufleet {
namespace {

JobRecord Job(const std::string& restart) {
  JobRecord j;
  j.fleet = "f";
  j.node = "trainer";
  j.id = "j1";
  j.restart = restart;
  j.state = "active";
  return j;
}

JobSighting Seen(JobState state, std::string first_failure = "") {
  return {true, state, std::move(first_failure)};
}

TEST(Issue14, AJobKilledByMaintenanceIsRestartedUnderOnPreemption) {
  // The reboot's SIGTERM reaches the keeper as a cancel; a SIGKILL loses the job.
  for (JobState s : {JobState::kCancelled, JobState::kLost}) {
    JobKeepDecision d = DecideJob(Job("on-preemption"), Seen(s), /*maintenance_since_start=*/true);
    EXPECT_EQ(d.action, JobKeepAction::kRestart);
    EXPECT_EQ(d.reason.rfind("maintenance (", 0), 0u) << d.reason;
  }
  JobKeepDecision d = DecideJob(Job("on-preemption"), Seen(JobState::kFailed, "w1 failed first: signal TERM"), true);
  EXPECT_EQ(d.action, JobKeepAction::kRestart);
  EXPECT_EQ(d.reason, "maintenance (failed (w1 failed first: signal TERM))");
}

TEST(JobKeep, AJobTheNodesAgentsDoNotHaveIsRestarted) {
  JobKeepDecision d = DecideJob(Job("on-preemption"), JobSighting{}, false);
  EXPECT_EQ(d.action, JobKeepAction::kRestart);
  EXPECT_EQ(d.reason, "not on the node's workers (the node was made again)");
}

TEST(JobKeep, ARunningJobIsLeftAndASucceededOneIsDone) {
  for (JobState s : {JobState::kStarting, JobState::kWaiting, JobState::kRunning}) {
    EXPECT_EQ(DecideJob(Job("on-preemption"), Seen(s), true).action, JobKeepAction::kNone);
  }
  JobKeepDecision d = DecideJob(Job("on-failure"), Seen(JobState::kSucceeded), true);
  EXPECT_EQ(d.action, JobKeepAction::kDone);
  EXPECT_EQ(d.reason, "succeeded");
}

TEST(JobKeep, AJobsOwnFailureIsRestartedOnlyUnderOnFailure) {
  JobKeepDecision d = DecideJob(Job("on-failure"), Seen(JobState::kFailed, "w0 failed first: exit 1"), false);
  EXPECT_EQ(d.action, JobKeepAction::kRestart);
  EXPECT_EQ(d.reason, "failed (w0 failed first: exit 1)");
  d = DecideJob(Job("on-preemption"), Seen(JobState::kFailed, "w0 failed first: exit 1"), false);
  EXPECT_EQ(d.action, JobKeepAction::kDone);
  EXPECT_EQ(d.reason, "failed (w0 failed first: exit 1); on-preemption does not restart it");
}

TEST(JobKeep, ACancelledOrLostJobWithoutMaintenanceWasStoppedByAReboot) {
  JobKeepDecision d = DecideJob(Job("on-preemption"), Seen(JobState::kCancelled), false);
  EXPECT_EQ(d.action, JobKeepAction::kRestart);
  EXPECT_EQ(d.reason, "a reboot (cancelled while its record was active)");
}

}  // namespace
}  // namespace tpufleet
