#include "ssh/os.h"

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

}  // namespace tpufleet
