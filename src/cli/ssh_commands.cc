// `tpufleet ssh` and `tpufleet forward`: one worker, reached with the system's OpenSSH and
// tpufleet's ssh config (control/ssh_login.h), or, through a team server, the person's
// own login and the host keys the server gave (cli/served_ssh.h).
#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <memory>
#include <optional>
#include <ostream>
#include <variant>

#include "api/workers.h"
#include "cli/command.h"
#include "cli/fleet_world.h"
#include "cli/served_ssh.h"
#include "cli/stop_signals.h"
#include "control/port_forward.h"
#include "control/ssh_login.h"
#include "control/targets.h"
#include "util/file.h"
#include "util/strings.h"
#include "util/subprocess.h"
#include "util/unique_fd.h"

namespace tpufleet::cli {
namespace {

constexpr char kForwardUsage[] =
    "forward takes a worker and a port: tpufleet forward NODE[:N] PORT[:LOCAL], e.g. "
    "tpufleet forward trainer 6006";

// A target the user got wrong is a usage error; one the state cannot serve is a failure.
ExitStatus TargetError(Invocation& inv, const Status& status) {
  return status.code() == StatusCode::kInvalidArgument ? UsageError(inv, status.message())
                                                       : Fail(inv, status);
}

// The one worker `word` names, with the ssh config to reach it, and the world it was
// found in (`forward` starts its forwards there; `ssh` closes it before ssh runs).
struct Login {
  WorkerTarget target;
  std::string config;
  std::unique_ptr<WorldHandle> world;
};

// The worker and config, or the exit status of the error already printed.
std::variant<Login, ExitStatus> FindLogin(Invocation& inv, const std::string& word) {
  Result<std::unique_ptr<WorldHandle>> handle = OpenWorld(inv, false);
  if (!handle.ok()) {
    return Fail(inv, handle.status());
  }
  World& world = (*handle)->world();
  Result<WorkerTarget> target = ResolveOneTarget(world.store, word);
  if (!target.ok()) {
    return TargetError(inv, target.status());
  }
  Result<std::string> config = world.ssh_files.Config();
  if (!config.ok()) {
    return Fail(inv, config.status());
  }
  return Login{std::move(*target), std::move(*config), std::move(*handle)};
}

std::optional<int> ParsePort(std::string_view text) {
  long long port = 0;
  if (!ParseInt(text, &port) || port < 1 || port > kMaxTcpPort) {
    return std::nullopt;
  }
  return static_cast<int>(port);
}

// Pauses for `delay`, or until `stop_fd` turns readable: true then.
bool StoppedWhileWaiting(int stop_fd, std::chrono::seconds delay) {
  pollfd p{stop_fd, POLLIN, 0};
  int n = 0;
  do {
    n = ::poll(&p, 1, static_cast<int>(std::chrono::milliseconds(delay).count()));
  } while (n < 0 && errno == EINTR);
  return n > 0;
}

// Runs a forward that listens until it is stopped (exit 0), starting ssh again each
// time its connection drops, after ForwardRetryDelay; gives up (exit 1) only when
// PermanentForwardFailure says another attempt cannot help.
ExitStatus KeepForwarding(Invocation& inv, int stop_fd, Forwarder& forwarder,
                          std::unique_ptr<Forward> forward, const std::vector<std::string>& argv,
                          int local, const std::string& worker) {
  int attempt = 0;
  while (true) {
    if (forward->Wait(stop_fd, inv.err) == Forward::Event::kStopped) {
      return ExitStatus::kOk;
    }
    std::string why = forward->ExitMessage();
    if (PermanentForwardFailure(why)) {
      return Fail(inv, UnavailableError("the forward to " + worker + " ended: " + why));
    }
    std::chrono::seconds delay = ForwardRetryDelay(attempt++);
    inv.err << "tpufleet: the forward to " << worker << " dropped (" << why << "); reconnecting in "
            << FormatDuration(delay) << std::endl;
    if (StoppedWhileWaiting(stop_fd, delay)) {
      return ExitStatus::kOk;
    }
    forward.reset();  // reaped: the local port is free for the next ssh
    Result<std::unique_ptr<Forward>> next = forwarder.Start(argv, local);
    if (!next.ok()) {
      return Fail(inv, next.status());
    }
    forward = std::move(*next);
    Forward::Event e = forward->Wait(stop_fd, inv.err);
    if (e == Forward::Event::kStopped) {
      return ExitStatus::kOk;
    }
    if (e == Forward::Event::kListening) {
      attempt = 0;
      inv.err << "tpufleet: the forward to " << worker << " is back: http://127.0.0.1:" << local
              << "/" << std::endl;
    }
    // kExited before it listened: the loop's top sees it exited and asks why.
  }
}

// ssh's worker word and remote command, or the usage error printed.
std::variant<std::vector<std::string>, ExitStatus> SshWords(Invocation& inv) {
  const std::vector<std::string>& pos = inv.args.positional;
  size_t split = std::min(inv.args.after_dashdash, pos.size());
  if (split != 1) {
    return UsageError(inv,
                      "ssh takes one worker, then optionally `--` and a command: "
                      "tpufleet ssh NODE[:N] [-- COMMAND...], e.g. tpufleet ssh trainer:1 "
                      "-- nvidia-smi");
  }
  return pos;
}

// ssh's command line for `words` (SshWords) to `target` with `config`. -t only for a
// command at a terminal: a login shell gets one anyway, and a command whose input is a
// pipe or file must not get one.
Result<std::vector<std::string>> SshArgv(Invocation& inv, const std::string& config,
                                         const WorkerTarget& target,
                                         const std::vector<std::string>& words) {
  std::vector<std::string> command(words.begin() + 1, words.end());
  return SshLoginArgv(config, target, command, !command.empty() && inv.terminal.in != nullptr);
}

// forward's PORT[:LOCAL]: the remote port and the local one asked for.
struct ForwardPorts {
  int remote = 0;
  std::optional<int> wanted;
};

std::variant<ForwardPorts, ExitStatus> ForwardArgs(Invocation& inv) {
  const std::vector<std::string>& pos = inv.args.positional;
  if (pos.size() != 2) {
    return UsageError(inv, kForwardUsage);
  }
  std::vector<std::string> ports = Split(pos[1], ':');
  std::optional<int> remote = ParsePort(ports[0]);
  std::optional<int> wanted;
  if (ports.size() == 2) {
    wanted = ParsePort(ports[1]);
  }
  if (!remote || ports.size() > 2 || (ports.size() == 2 && !wanted)) {
    return UsageError(inv, "forward: expected PORT or PORT:LOCAL, ports 1-65535, got '" + pos[1] +
                               "'; e.g. 8888 (the same port here) or 8888:18888");
  }
  return ForwardPorts{*remote, wanted};
}

// Forwards `ports` to `target` through `config` with `forwarder` until stopped.
ExitStatus Forwarding(Invocation& inv, Forwarder& forwarder, const std::string& config,
                      const WorkerTarget& target, const ForwardPorts& ports) {
  Result<int> local = ChooseLocalPort(ports.remote, ports.wanted);
  if (!local.ok()) {
    return Fail(inv, local.status());
  }
  Result<std::vector<std::string>> argv = ForwardArgv(config, target, *local, ports.remote);
  if (!argv.ok()) {
    return Fail(inv, argv.status());
  }

  StopSignals stop;
  if (stop.fd() < 0) {
    return Fail(inv, ErrnoStatus("signalfd", errno));
  }
  Result<std::unique_ptr<Forward>> forward = forwarder.Start(*argv, *local);
  if (!forward.ok()) {
    return Fail(inv, forward.status());
  }
  Forward::Event started = (*forward)->Wait(stop.fd(), inv.err);
  if (started == Forward::Event::kStopped) {
    return ExitStatus::kInterrupted;
  }
  if (started == Forward::Event::kExited) {
    return Fail(inv,
                UnavailableError("could not forward to " + target.name + ":" +
                                 std::to_string(ports.remote) + ": " + (*forward)->ExitMessage()));
  }
  std::string url = "http://127.0.0.1:" + std::to_string(*local) + "/";
  if (inv.json) {
    // One line: a script reads it as soon as the forward works.
    inv.out << api::ToJson(api::ForwardStarted{url, *local, ports.remote, target.name})
            << std::endl;
  } else {
    inv.out << "Forwarding " << url << " -> " << target.name << ":" << ports.remote
            << " (Ctrl-C to stop)" << std::endl;
  }
  return KeepForwarding(inv, stop.fd(), forwarder, std::move(*forward), *argv, *local, target.name);
}

}  // namespace

ExitStatus RunSsh(Invocation& inv) {
  std::variant<std::vector<std::string>, ExitStatus> words = SshWords(inv);
  if (const ExitStatus* failed = std::get_if<ExitStatus>(&words)) {
    return *failed;
  }
  const std::vector<std::string>& w = std::get<std::vector<std::string>>(words);
  std::variant<Login, ExitStatus> login = FindLogin(inv, w[0]);
  if (const ExitStatus* failed = std::get_if<ExitStatus>(&login)) {
    return *failed;
  }
  Login& l = std::get<Login>(login);
  l.world.reset();  // ssh runs without the state store
  Result<std::vector<std::string>> argv = SshArgv(inv, l.config, l.target, w);
  if (!argv.ok()) {
    return Fail(inv, argv.status());
  }
  inv.out.flush();
  inv.err.flush();
  return Fail(inv, ExecProgram(*argv));  // returns only when ssh could not be run
}

ExitStatus RunSshOverSsh(Invocation& inv, const ServerLogins& logins) {
  std::variant<std::vector<std::string>, ExitStatus> words = SshWords(inv);
  if (const ExitStatus* failed = std::get_if<ExitStatus>(&words)) {
    return *failed;
  }
  const std::vector<std::string>& w = std::get<std::vector<std::string>>(words);
  if (Status s = RefuseLabelSelectors({w[0]}); !s.ok()) {
    return UsageError(inv, s.message());
  }
  Result<WorkerTarget> target = ResolveOneTarget(logins.nodes, w[0]);
  if (!target.ok()) {
    return TargetError(inv, target.status());
  }
  Result<std::vector<std::string>> argv = SshArgv(inv, logins.ssh.config.path(), *target, w);
  if (!argv.ok()) {
    return Fail(inv, argv.status());
  }
  return RunSshHere(inv, *argv);
}

ExitStatus RunForward(Invocation& inv) {
  std::variant<ForwardPorts, ExitStatus> ports = ForwardArgs(inv);
  if (const ExitStatus* failed = std::get_if<ExitStatus>(&ports)) {
    return *failed;
  }
  std::variant<Login, ExitStatus> login = FindLogin(inv, inv.args.positional[0]);
  if (const ExitStatus* failed = std::get_if<ExitStatus>(&login)) {
    return *failed;
  }
  const Login& l = std::get<Login>(login);
  return Forwarding(inv, l.world->world().forwarder, l.config, l.target,
                    std::get<ForwardPorts>(ports));
}

ExitStatus RunForwardOverSsh(Invocation& inv, const ServerLogins& logins) {
  std::variant<ForwardPorts, ExitStatus> ports = ForwardArgs(inv);
  if (const ExitStatus* failed = std::get_if<ExitStatus>(&ports)) {
    return *failed;
  }
  const std::string& word = inv.args.positional[0];
  if (Status s = RefuseLabelSelectors({word}); !s.ok()) {
    return UsageError(inv, s.message());
  }
  Result<WorkerTarget> target = ResolveOneTarget(logins.nodes, word);
  if (!target.ok()) {
    return TargetError(inv, target.status());
  }
  SshForwarder forwarder;  // the system's ssh, as the World's (app/fleet_world.cc)
  return Forwarding(inv, forwarder, logins.ssh.config.path(), *target,
                    std::get<ForwardPorts>(ports));
}

}  // namespace tpufleet::cli
