#include "ssh/openssh.h"

namespace tpufleet {

Status WithOpenSshHint(const Status& s) {
  if (s.code() != StatusCode::kFailedPrecondition) {
    return s;
  }
  return FailedPreconditionError(s.message() + "; install OpenSSH (Debian: openssh-client)");
}

Result<ProgramResult> RunOpenSsh(const std::vector<std::string>& argv, std::string_view input,
                                 std::chrono::milliseconds timeout) {
  Result<ProgramResult> r = RunUserCommand(argv, input, timeout);
  if (!r.ok()) {
    return WithOpenSshHint(r.status());
  }
  return r;
}

}  // namespace tpufleet
