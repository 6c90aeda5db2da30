#include "emulator/hosts/system_programs.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "util/strings.h"

namespace tpufleet::emulator::hosts {
namespace {

// The policy of this file's header: system programs by absolute path, PATH=kSystemPath
// and `env` as the whole environment, nothing inherited but stdin/stdout/stderr.
SpawnOptions SystemProgram(const std::vector<std::string>& env) {
  SpawnOptions options{.search_path = false,
                       .inherit_env = false,
                       .env = {std::string("PATH=") + kSystemPath},
                       .own_process_group = false,
                       .close_other_fds = true,
                       .output_cap = 0};
  options.env.insert(options.env.end(), env.begin(), env.end());
  return options;
}

}  // namespace

Result<std::string> FindProgram(const std::string& name, const std::string& package) {
  for (const std::string& dir : Split(kSystemPath, ':')) {
    std::string path = dir + "/" + name;
    if (::access(path.c_str(), X_OK) == 0) {
      return path;
    }
  }
  std::string m = name + " not found in " + kSystemPath;
  if (!package.empty()) {
    m += ": install the Debian package " + package + " (scripts/setup-deps.sh does)";
  }
  return FailedPreconditionError(m);
}

Result<pid_t> SpawnProgram(const std::vector<std::string>& argv, SpawnStdio stdio,
                           const std::vector<std::string>& env) {
  return SpawnSubprocess(argv, SystemProgram(env), stdio);
}

Result<ProgramResult> RunCommand(const std::vector<std::string>& argv, const std::string& input,
                                 std::chrono::milliseconds timeout) {
  return RunSubprocess(argv, input, timeout, SystemProgram({"LC_ALL=C"}));
}

Status RunChecked(const std::vector<std::string>& argv, const std::string& input,
                  std::chrono::milliseconds timeout) {
  TPUFLEET_ASSIGN_OR_RETURN(ProgramResult r, RunCommand(argv, input, timeout));
  if (r.exit_code != 0) {
    std::string out(Trim(r.output));
    return InternalError(argv[0] + " failed (exit " + std::to_string(r.exit_code) + ")" +
                         (out.empty() ? "" : ": " + out));
  }
  return Status::Ok();
}

bool Reaped(pid_t pid) {
  int status = 0;
  pid_t r = ::waitpid(pid, &status, WNOHANG);
  return r == pid || (r < 0 && errno == ECHILD);
}

std::string Errno(const std::string& what) {
  return what + ": " + std::strerror(errno);
}

}  // namespace tpufleet::emulator::hosts
