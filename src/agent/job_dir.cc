#include "agent/job_dir.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "core/job.h"
#include "util/file.h"

namespace tpufleet::agent {
namespace {

// job.json and state.json are the agent's own, a few KiB; bounded anyway.
constexpr size_t kMaxJobFileBytes = size_t{2} << 20;

struct flock WriteLockQuery() {
  struct flock lock {};
  lock.l_type = F_WRLCK;
  lock.l_whence = SEEK_SET;
  return lock;
}

std::string OctalMode(mode_t mode) {
  char text[8];
  std::snprintf(text, sizeof text, "%04o", static_cast<unsigned>(mode & 07777));
  return text;
}

}  // namespace

Status MakeStateDirs(const std::string& state_dir) {
  for (size_t slash = state_dir.find('/', 1); slash != std::string::npos;
       slash = state_dir.find('/', slash + 1)) {
    std::string parent = state_dir.substr(0, slash);
    if (mkdir(parent.c_str(), 0755) != 0 && errno != EEXIST) {
      return ErrnoStatus(parent, errno);
    }
  }
  for (const std::string& dir : {state_dir, JobsDir(state_dir)}) {
    if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
      return ErrnoStatus(dir, errno);
    }
  }
  struct stat st {};
  if (lstat(state_dir.c_str(), &st) != 0) {
    return ErrnoStatus(state_dir, errno);
  }
  if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 022) != 0) {
    return FailedPreconditionError(state_dir + " must be a directory of uid " +
                                   std::to_string(geteuid()) + " that only it may write (it is " +
                                   (S_ISDIR(st.st_mode) ? "a directory" : "no directory") +
                                   " of uid " + std::to_string(st.st_uid) + ", mode " + OctalMode(st.st_mode) +
                                   ")");
  }
  return Status::Ok();
}

std::string JobsDir(const std::string& state_dir) { return state_dir + "/jobs"; }

std::string JobDir(const std::string& state_dir, const std::string& id) {
  return JobsDir(state_dir) + "/" + id;
}

std::vector<std::string> ListJobIds(const std::string& state_dir) {
  std::vector<std::string> ids;
  for (std::string& name : ListDirectory(JobsDir(state_dir))) {
    if (CheckJobId(name).ok()) {
      ids.push_back(std::move(name));
    }
  }
  return ids;
}

Status WriteJobSpec(const std::string& job_dir, const api::JobSpec& spec) {
  return WriteFileAtomic(job_dir + "/" + kJobSpecFile, api::ToJson(spec) + "\n", 0600);
}

Result<api::JobSpec> ReadJobSpec(const std::string& job_dir) {
  TPUFLEET_ASSIGN_OR_RETURN(std::string text,
                            ReadFile(job_dir + "/" + kJobSpecFile, kMaxJobFileBytes));
  return api::ParseJobSpec(text);
}

Status WriteJobState(const std::string& job_dir, const api::JobOnWorker& state) {
  return WriteFileAtomic(job_dir + "/" + kJobStateFile, api::ToJson(state) + "\n", 0600);
}

Result<api::JobOnWorker> ReadJobState(const std::string& job_dir) {
  TPUFLEET_ASSIGN_OR_RETURN(std::string text,
                            ReadFile(job_dir + "/" + kJobStateFile, kMaxJobFileBytes));
  return api::ParseJobOnWorker(text);
}

Result<UniqueFd> TakeKeeperLock(const std::string& job_dir) {
  std::string path = job_dir + "/" + kKeeperLock;
  UniqueFd fd(open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (fd.get() < 0) {
    return ErrnoStatus(path, errno);
  }
  struct flock lock = WriteLockQuery();
  if (fcntl(fd.get(), F_SETLK, &lock) != 0) {
    if (errno == EACCES || errno == EAGAIN) {
      return FailedPreconditionError(path + ": a keeper of this job runs already");
    }
    return ErrnoStatus(path, errno);
  }
  return fd;
}

pid_t KeeperPid(const std::string& job_dir) {
  std::string path = job_dir + "/" + kKeeperLock;
  UniqueFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (fd.get() < 0) {
    return 0;
  }
  struct flock lock = WriteLockQuery();
  if (fcntl(fd.get(), F_GETLK, &lock) != 0 || lock.l_type == F_UNLCK) {
    return 0;
  }
  return lock.l_pid;
}

}  // namespace tpufleet::agent
