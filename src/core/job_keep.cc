#include "core/job_keep.h"

namespace tpufleet {
namespace {

JobKeepDecision Restart(std::string reason) {
  return {JobKeepAction::kRestart, std::move(reason)};
}

}  // namespace

JobKeepDecision DecideJob(const JobRecord& job, const JobSighting& seen,
                          bool maintenance_since_start) {
  if (!seen.known) {
    return Restart("not on the node's workers (the node was made again)");
  }
  std::string state(NameIn(kJobStateNames, seen.state));
  std::string by = maintenance_since_start ? "maintenance" : "a reboot";
  switch (seen.state) {
    case JobState::kStarting:
    case JobState::kWaiting:
    case JobState::kRunning:
      return {};
    case JobState::kSucceeded:
      return {JobKeepAction::kDone, "succeeded"};
    case JobState::kCancelled:
    case JobState::kLost:
      return Restart(by + " (" + state + " while its record was active)");
    case JobState::kFailed:
      break;
  }
  std::string failed = "failed" + (seen.first_failure.empty() ? "" : " (" + seen.first_failure + ")");
  if (job.restart == "on-failure") {
    return Restart(failed);
  }
  if (maintenance_since_start) {
    return Restart("maintenance (" + failed + ")");
  }
  return {JobKeepAction::kDone, failed + "; " + job.restart + " does not restart it"};
}

}  // namespace tpufleet
