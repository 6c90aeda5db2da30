#include "control/ssh_login.h"

#include <unistd.h>

#include <cerrno>

#include "control/port_forward.h"
#include "ssh/runner.h"
#include "ssh/ssh_files.h"
#include "util/file.h"
#include "util/strings.h"

namespace tpufleet {

Result<std::vector<std::string>> SshLoginArgv(const std::string& config, const WorkerTarget& target,
                                              const std::vector<std::string>& command, bool tty) {
  TPUFLEET_TRY(CheckSshAlias(target.alias));
  std::vector<std::string> argv = {"ssh", "-F", config};
  if (tty) {
    argv.push_back("-t");
  }
  argv.push_back("--");
  argv.push_back(target.alias);
  if (!command.empty()) {
    // ssh would join several arguments with spaces for the remote shell anyway; one
    // string of quoted words is what that shell reads.
    argv.push_back(ShellJoin(command));
  }
  return argv;
}

Result<std::vector<std::string>> ForwardArgv(const std::string& config, const WorkerTarget& target,
                                             int local_port, int remote_port) {
  TPUFLEET_TRY(CheckSshAlias(target.alias));
  if (local_port < 1 || local_port > kMaxTcpPort || remote_port < 1 || remote_port > kMaxTcpPort) {
    return InternalError("ForwardArgv: ports out of range");
  }
  return std::vector<std::string>{
      "ssh",
      "-F",
      config,
      "-N",
      "-o",
      "ExitOnForwardFailure=yes",
      "-o",
      "ConnectTimeout=" + std::to_string(kSshConnectTimeout.count()),
      "-o",
      "ServerAliveInterval=" + std::to_string(kForwardAliveInterval.count()),
      "-o",
      "ServerAliveCountMax=" + std::to_string(kForwardAliveCount),
      "-L",
      "127.0.0.1:" + std::to_string(local_port) + ":localhost:" + std::to_string(remote_port),
      "--",
      target.alias};
}

}  // namespace tpufleet
