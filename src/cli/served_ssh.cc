#include "cli/served_ssh.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <optional>
#include <ostream>

#include "cli/app.h"
#include "cli/stop_signals.h"
#include "control/server_ssh.h"
#include "remote/joined_servers.h"
#include "remote/server_client.h"
#include "util/log.h"
#include "util/strings.h"
#include "util/subprocess.h"

namespace tpufleet::cli {
namespace {

constexpr std::array<std::string_view, 5> kOverSsh = {"exec", "ssh", "forward", "cp", "attach"};

// The person's workers on the server `url` and a private ssh config for them, in
// `logins`; the error to print otherwise.
Status PrepareLogins(Invocation& inv, const std::string& url, ServerLogins& logins) {
  if (inv.app.server_http == nullptr) {
    return InternalError("this build of tpufleet has no HTTP client for --server");
  }
  TPUFLEET_ASSIGN_OR_RETURN(
      remote::ServerOptions options,
      remote::ResolveServer(url, inv.args.Get("server-fingerprint").value_or(""), inv.env));
  TPUFLEET_ASSIGN_OR_RETURN(std::optional<remote::JoinedServer> joined,
                            remote::FindJoinedServer(inv.env, options.server));
  logins.url = options.url;
  logins.person = joined ? joined->person : "";
  remote::ServerClient client(inv.app.server_http, options);
  std::string notice;
  TPUFLEET_ASSIGN_OR_RETURN(std::vector<api::WorkerHost> hosts, client.Hosts(&notice));
  if (!notice.empty()) {
    inv.err << "tpufleet: " << notice << std::endl;
  }
  logins.nodes = ServerNodeRecords(logins.person, hosts);
  TPUFLEET_ASSIGN_OR_RETURN(logins.ssh, MakeDirectServerSshFiles(logins.person, hosts));
  return Status::Ok();
}

}  // namespace

bool ServedOverSsh(std::string_view command) {
  return std::find(kOverSsh.begin(), kOverSsh.end(), command) != kOverSsh.end();
}

Status RefuseLabelSelectors(const std::vector<std::string>& targets) {
  for (const std::string& word : targets) {
    if (word.find('=') != std::string::npos) {
      return InvalidArgumentError("label selectors such as '" + word.substr(0, 64) +
                                  "' do not work through a team server (its answer has no "
                                  "labels); name the nodes: NODE, NODE:N, NODE:1-3 or all");
    }
  }
  return Status::Ok();
}

ExitStatus RunOverSsh(Invocation& inv, const std::string& url) {
  ServerLogins logins;
  if (Status s = PrepareLogins(inv, url, logins); !s.ok()) {
    return s.code() == StatusCode::kInvalidArgument ? UsageError(inv, s.message()) : Fail(inv, s);
  }
  const std::string& name = inv.command;
  if (name == "exec") {
    return RunExecOverSsh(inv, logins);
  }
  if (name == "cp") {
    return RunCopyOverSsh(inv, logins);
  }
  if (name == "ssh") {
    return RunSshOverSsh(inv, logins);
  }
  if (name == "forward") {
    return RunForwardOverSsh(inv, logins);
  }
  if (name == "attach") {
    return RunAttachOverSsh(inv, logins);
  }
  return Fail(inv, InternalError("`" + name + "` does not run over SSH"));
}

Result<std::vector<api::JobPlace>> JobsOnServer(Invocation& inv, const ServerLogins& logins) {
  TPUFLEET_ASSIGN_OR_RETURN(
      remote::ServerOptions options,
      remote::ResolveServer(logins.url, inv.args.Get("server-fingerprint").value_or(""), inv.env));
  remote::ServerClient client(inv.app.server_http, std::move(options));
  std::string out;
  std::string err;
  TPUFLEET_ASSIGN_OR_RETURN(
      remote::RemoteRun run,
      client.Run({{"jobs", "--json"}}, [&](api::OutputStream stream, std::string_view text) {
        (stream == api::OutputStream::kStdout ? out : err).append(text);
      }));
  if (run.exit_code != 0) {
    return UnavailableError("the team server " + logins.url +
                            " could not list the jobs: " + std::string(Trim(TerminalText(err))));
  }
  return api::ParseJobPlaces(out);
}

namespace {

// How often RunSshHere looks whether ssh ended while no signal comes.
constexpr int kSshPollMs = 100;

}  // namespace

ExitStatus RunSshHere(Invocation& inv, const std::vector<std::string>& argv) {
  inv.out.flush();
  inv.err.flush();
  // As system(3): the terminal's Ctrl-C and Ctrl-\ are ssh's to act on (the spawn
  // gives it the default actions); this process waits for it, then removes the config.
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  struct sigaction old_int {
  }, old_quit{};
  ::sigaction(SIGINT, &ignore, &old_int);
  ::sigaction(SIGQUIT, &ignore, &old_quit);
  int status = 0;
  {
    // SIGTERM or SIGHUP (a terminal closed) while ssh runs: passed on to ssh, so that
    // this process ends after it, and removes its config, rather than at once.
    StopSignals stop;
    SpawnOptions options;
    options.search_path = options.inherit_env = true;  // in the terminal's process group
    Result<pid_t> pid =
        SpawnSubprocess(argv, options, {STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO});
    if (!pid.ok()) {
      ::sigaction(SIGINT, &old_int, nullptr);
      ::sigaction(SIGQUIT, &old_quit, nullptr);
      return Fail(inv, pid.status());
    }
    while (true) {
      pid_t done = 0;
      do {
        done = ::waitpid(*pid, &status, WNOHANG);
      } while (done < 0 && errno == EINTR);
      if (done != 0) {
        break;
      }
      pollfd p{stop.fd(), POLLIN, 0};
      if (::poll(&p, stop.fd() >= 0 ? 1 : 0, kSshPollMs) > 0) {
        if (int sig = stop.Take(); sig == SIGTERM || sig == SIGHUP) {
          ::kill(*pid, sig);
        }
      }
    }
  }
  ::sigaction(SIGINT, &old_int, nullptr);
  ::sigaction(SIGQUIT, &old_quit, nullptr);
  int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return static_cast<ExitStatus>(code);
}

}  // namespace tpufleet::cli
