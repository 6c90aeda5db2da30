#include "app/holder_command.h"

#include <fcntl.h>
#include <spawn.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ostream>

#include "app/fleet_world.h"
#include "ssh/holder.h"
#include "util/clock.h"
#include "util/file.h"

extern char** environ;

namespace tpufleet::app {

std::string HolderSocketPath(const std::map<std::string, std::string>& env) {
  return FleetStateDir(env) + "/holder.sock";
}

Status StartCliDetached(const std::vector<std::string>& args, const std::string& log) {
  TPUFLEET_ASSIGN_OR_RETURN(std::string self, BesideThisProgram(kCliProgram));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(),
                                   O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW, 0600);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  // Nothing else of the caller's: a pipe a script waits on for its end, or the state
  // database, must not be held open by a process that outlives the command.
  posix_spawn_file_actions_addclosefrom_np(&actions, 3);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID);
  std::vector<std::string> words = {self};
  words.insert(words.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& w : words) {
    argv.push_back(w.data());
  }
  argv.push_back(nullptr);
  pid_t pid = 0;
  int err = ::posix_spawn(&pid, self.c_str(), &actions, &attr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (err != 0) {
    return InternalError("cannot start `tpufleet " + args.front() + "`: " + std::strerror(err));
  }
  return Status::Ok();  // not waited for: it outlives this command, init reaps it
}

Status StartHolderProcess(const std::string& socket_path) {
  std::string log = socket_path.substr(0, socket_path.rfind('/') + 1) + "holder.log";
  return StartCliDetached({"holder", "serve", "--socket", socket_path}, log);
}

namespace {

cli::ExitStatus RunHolder(cli::Invocation& inv) {
  const auto& pos = inv.args.positional;
  std::string action = pos.empty() ? "status" : pos[0];
  std::string socket = inv.args.Get("socket").value_or(HolderSocketPath(inv.env));
  if (pos.size() > 1 || (action != "serve" && action != "status" && action != "stop")) {
    return cli::UsageError(inv, "holder takes one of serve, status or stop");
  }
  if (action == "serve") {
    RealClock clock;
    Status s = ServeHolder(socket, clock);
    return s.ok() ? cli::ExitStatus::kOk : cli::Fail(inv, s);
  }
  if (action == "stop") {
    Status s = StopHolder(socket);
    if (!s.ok() && s.code() != StatusCode::kUnavailable) {
      return cli::Fail(inv, s);
    }
    inv.out << (inv.json ? std::string("{\"stopped\": ") + (s.ok() ? "true" : "false") + "}\n"
                         : s.ok() ? "Connection holder stopped.\n"
                                  : "No connection holder is running.\n");
    return cli::ExitStatus::kOk;
  }
  Result<std::string> status = HolderStatus(socket);
  if (status.status().code() == StatusCode::kPermissionDenied) {
    return cli::Fail(inv, status.status());  // a socket or listener not ours: say so
  }
  if (!status.ok()) {
    inv.out << (inv.json ? "{\"running\": false}\n" : "No connection holder is running.\n");
    return cli::ExitStatus::kOk;
  }
  inv.out << *status << "\n";
  return cli::ExitStatus::kOk;
}

}  // namespace

cli::Command HolderCommandRow() {
  return {"holder", "Look at or stop the connection holder that keeps exec's SSH warm",
          "[status|stop|serve] [--socket PATH]",
          "exec runs through a small per-user process that keeps the workers' SSH connections\n"
          "open, so a repeated command costs about one round trip instead of a new login per\n"
          "worker. exec starts it when needed; it ends itself after 15 minutes without work,\n"
          "or when its socket (STATE/holder.sock) is removed. status prints its pid and open\n"
          "connections as JSON; stop ends it now (the next exec connects cold). Set\n"
          "TPUFLEET_HOLDER=off to run exec without it. serve is what exec starts.",
          {{"socket", "PATH", "the holder's socket (default STATE/holder.sock)"}},
          true, RunHolder};
}

}  // namespace tpufleet::app
