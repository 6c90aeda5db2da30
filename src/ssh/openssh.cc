#include "ssh/openssh.h"

#include "util/strings.h"

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

std::string LastSshLine(std::string_view output, std::string_view fallback) {
  std::vector<std::string> lines = Split(output, '\n');
  for (auto it = lines.rbegin(); it != lines.rend(); ++it) {
    std::string_view l = Trim(*it);
    if (!l.empty()) {
      return std::string(l.substr(0, 1024));
    }
  }
  return std::string(fallback);
}

}  // namespace tpufleet
