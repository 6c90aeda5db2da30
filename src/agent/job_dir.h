// The agent's state directory and one job's directory in it, shared by serve (which
// makes a job's directory and reads it back) and the job's keeper (which records the
// job's life there):
//
//   STATE_DIR/                 0700 root
//     jobs/ID/                 0700 root, ID checked by core/job.h's CheckJobId
//       job.json               the JobSpec (api/agent.h), written once by serve
//       state.json             the JobOnWorker, replaced atomically (rename) by serve
//                              before the keeper runs and by the keeper after
//       stdout.log, stderr.log the job's output, rotated (logs.h)
//       keeper.lock            the keeper holds a POSIX write lock on it for its life
//       cancel                 written by serve to ask the keeper to cancel: the grace
//                              in seconds
//
// The keeper's lock is how serve finds a live keeper after a restart (F_GETLK names the
// holder's pid) and tells a keeper that vanished without a record (no lock held). A
// POSIX lock is not inherited by the job's processes, so a job's orphan never looks
// like its keeper.
//
// Thread-safety: stateless functions over the file system.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "api/agent.h"
#include "util/status.h"
#include "util/unique_fd.h"

namespace tpufleet::agent {

inline constexpr const char* kJobSpecFile = "job.json";
inline constexpr const char* kJobStateFile = "state.json";
inline constexpr const char* kStdoutLog = "stdout.log";
inline constexpr const char* kStderrLog = "stderr.log";
inline constexpr const char* kKeeperLock = "keeper.lock";
inline constexpr const char* kCancelFile = "cancel";

/// STATE_DIR/jobs.
std::string JobsDir(const std::string& state_dir);
/// STATE_DIR/jobs/ID.
std::string JobDir(const std::string& state_dir, const std::string& id);

/// Makes STATE_DIR (and its missing parents) and STATE_DIR/jobs, 0700. FailedPrecondition
/// when STATE_DIR is not a directory of the agent's own user that no one else may write
/// (the jobs' specs and logs are in it). Without util's MakePrivateDirs, whose message
/// names users through getpwuid, which a static binary must not call.
Status MakeStateDirs(const std::string& state_dir);

/// The ids of the job directories under STATE_DIR/jobs (any order); names that are not
/// job ids are skipped.
std::vector<std::string> ListJobIds(const std::string& state_dir);

Status WriteJobSpec(const std::string& job_dir, const api::JobSpec& spec);
Result<api::JobSpec> ReadJobSpec(const std::string& job_dir);
/// Replaces state.json atomically (readers see the old or the new state, never half).
Status WriteJobState(const std::string& job_dir, const api::JobOnWorker& state);
Result<api::JobOnWorker> ReadJobState(const std::string& job_dir);

/// Takes the keeper's lock on job_dir/keeper.lock (made when missing); the lock lasts
/// as long as the descriptor is open. FailedPrecondition when another process holds it
/// (a keeper of this job runs already).
Result<UniqueFd> TakeKeeperLock(const std::string& job_dir);
/// The pid of the process holding the keeper's lock; 0 when none does.
pid_t KeeperPid(const std::string& job_dir);

}  // namespace tpufleet::agent
