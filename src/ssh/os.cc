#include "ssh/os.h"

#include <sys/stat.h>

#include <cerrno>

#include "util/file.h"

namespace tpufleet {

Result<ProgramResult> RunProgram(const std::vector<std::string>& argv, std::string_view input,
                                 std::chrono::milliseconds timeout) {
  SpawnOptions options{.search_path = true,
                       .inherit_env = true,
                       .env = {},
                       .own_process_group = true,
                       .close_other_fds = true,
                       .output_cap = kMaxProgramOutput};
  Result<ProgramResult> r = RunSubprocess(argv, input, timeout, options);
  if (r.status().code() == StatusCode::kFailedPrecondition) {
    return FailedPreconditionError(r.status().message() +
                                   "; install OpenSSH (Debian: openssh-client)");
  }
  return r;
}

Status MakePrivateDirs(const std::string& dir) {
  if (dir.empty()) {
    return InvalidArgumentError("empty directory name");
  }
  struct stat st;
  if (::stat(dir.c_str(), &st) == 0) {
    if (!S_ISDIR(st.st_mode)) {
      return FailedPreconditionError(dir + " exists and is not a directory");
    }
    return Status::Ok();
  }
  size_t slash = dir.find_last_of('/');
  if (slash != std::string::npos && slash > 0) {
    TPUFLEET_TRY(MakePrivateDirs(dir.substr(0, slash)));
  }
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return ErrnoStatus("mkdir " + dir, errno);
  }
  return Status::Ok();
}

}  // namespace tpufleet
