// `tpufleet-agent call` (serve.h).
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "agent/flags.h"
#include "agent/serve.h"
#include "agent/unix_socket.h"
#include "api/agent.h"
#include "util/strings.h"
#include "util/unique_fd.h"

namespace tpufleet::agent {
namespace {

// One line of stdin, without its newline; at most one byte past the limit is read, so
// a line too long reaches the agent as too long and is refused there.
std::string ReadRequestLine() {
  std::string line;
  char c = 0;
  while (line.size() <= api::kMaxAgentLineBytes && read(STDIN_FILENO, &c, 1) == 1 && c != '\n') {
    line.push_back(c);
  }
  return line;
}

}  // namespace

int CallMain(const std::vector<std::string>& args) {
  Result<Flags> flags = ParseFlags(args, {"worker", "socket"});
  long long worker = -1;
  if (!flags.ok() || !flags->positional.empty() ||
      (flags->values.count("worker") > 0 && (!ParseInt(flags->Get("worker", ""), &worker) || worker < 0))) {
    return Complain(kExitUsage, (flags.ok() ? std::string() : flags.status().message() + "\n") +
                                    "usage: tpufleet-agent call [--worker N] [--socket PATH] < REQUEST");
  }
  std::string socket_path = flags->Get("socket", std::string(api::kAgentSocketPath));
  std::string line = ReadRequestLine();
  if (worker >= 0) {
    Result<std::string> with_worker = api::AddWorkerToRequest(line, static_cast<int>(worker));
    if (!with_worker.ok()) {
      return Complain(kExitUsage, with_worker.status().message());
    }
    line = std::move(*with_worker);
  }
  Result<sockaddr_un> addr = UnixAddress(socket_path);
  if (!addr.ok()) {
    return Complain(kExitUsage, addr.status().message());
  }
  UniqueFd fd(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (fd.get() < 0 ||
      connect(fd.get(), reinterpret_cast<const sockaddr*>(&*addr), sizeof *addr) != 0) {
    return Complain(api::kAgentNotRunningExit, "no tpufleet-agent is running on this host (" +
                                                   socket_path + ": " + std::strerror(errno) + ")");
  }
  line += '\n';
  if (!WriteAll(fd.get(), line)) {
    return Complain(api::kAgentNotRunningExit, "the agent closed the connection (" +
                                                   std::string(std::strerror(errno)) + ")");
  }
  // The agent closes the connection after the answer's last line.
  bool any = false;
  char buf[65536];
  while (true) {
    ssize_t n = read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      break;
    }
    any = true;
    if (!WriteAll(STDOUT_FILENO, {buf, static_cast<size_t>(n)})) {
      return kExitFailed;  // whoever reads us is gone
    }
  }
  return any ? kExitOk : Complain(kExitFailed, "the agent closed the connection without an answer");
}

}  // namespace tpufleet::agent
