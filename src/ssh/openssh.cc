#include "ssh/openssh.h"

namespace tpufleet {

Result<ProgramResult> RunOpenSsh(const std::vector<std::string>& argv, std::string_view input,
                                 std::chrono::milliseconds timeout) {
  Result<ProgramResult> r = RunUserCommand(argv, input, timeout);
  if (r.status().code() == StatusCode::kFailedPrecondition) {
    return FailedPreconditionError(r.status().message() +
                                   "; install OpenSSH (Debian: openssh-client)");
  }
  return r;
}

}  // namespace tpufleet
