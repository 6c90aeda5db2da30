// `tpufleet emulator start`, `stop` and `serve` (the daemon itself), and the table of
// actions (command.h). status and inject are in command_admin.cc.
#include "emulator/command.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <ostream>
#include <thread>

#include "core/catalog.h"
#include "emulator/api_server.h"
#include "emulator/command_internal.h"
#include "emulator/config.h"
#include "emulator/hosts/namespace_hosts.h"
#include "emulator/http_server.h"
#include "util/clock.h"
#include "util/file.h"
#include "util/secret.h"
#include "util/strings.h"

namespace tpufleet::emulator {

using command_internal::Inv;
using command_internal::Usage;

namespace {

using command_internal::ToApi;
using command_internal::StateDir;
using nlohmann::json;
using Daemon = EmulatorDaemon;

// How long `start` waits for the daemon to serve: creating the bridge and binding is
// quick; a minute covers a loaded machine.
constexpr std::chrono::seconds kStartTimeout{60};
// How long `stop` lets the daemon destroy its workers before it is killed. 256 workers
// halt in about 2 s; the rest is margin.
constexpr std::chrono::seconds kStopTimeout{60};
// How often start and stop look whether the daemon is up, or gone.
constexpr std::chrono::milliseconds kPollInterval{50};
// argv[0] of the daemon, which `stop` checks before it signals a recorded pid.
constexpr const char* kDaemonName = kEmulatorDaemonName;
// How long `stop` waits for a SIGKILLed daemon to disappear.
constexpr std::chrono::seconds kKillWait{5};
// How much of a daemon's log `start` shows when it died while starting.
constexpr size_t kLogTailBytes = 2000;
// The workers' shared bucket, <state dir>/gcs, mounted at /gcs on every worker (a
// stand-in for a gcsfuse-mounted Cloud Storage bucket); `stop` removes it with the rest.
constexpr const char* kBucketDirName = "gcs";

void PrintEndpointHelp(std::ostream& out, const Daemon& d, const std::string& dir) {
  std::string token = ShellQuote(d.token_file);
  out << "Emulator running (pid " << d.pid << "): " << d.endpoint << "\n"
      << "  Cloud TPU API v2  " << d.endpoint << "v2/projects/PROJECT/locations/ZONE/nodes\n"
      << "  token             " << d.token_file
      << " (every call needs it: Authorization: Bearer <its content>)\n"
      << "  Compute API v1    " << d.endpoint << "compute/v1/projects/PROJECT\n"
      << "  gcloud            export CLOUDSDK_API_ENDPOINT_OVERRIDES_TPU=" << d.endpoint
      << " CLOUDSDK_AUTH_ACCESS_TOKEN_FILE=" << token
      << " CLOUDSDK_API_ENDPOINT_OVERRIDES_COMPUTE=" << d.endpoint << "compute/v1/\n"
      // printf is the shell's own: the token never stands in a process's argv.
      << "  curl              printf 'header \"Authorization: Bearer %s\"\\n' \"$(cat "
      << token << ")\" | curl -K - " << d.endpoint << "emulator/v1/status\n"
      << "  state and log     " << dir << "\n"
      << "Stop it with: tpufleet emulator stop\n";
}

ActionResult Start(Inv& inv) {
  std::string dir = StateDir(inv);
  if (Status s = CheckEmulatorStateDir(dir, inv.env); !s.ok()) {
    return ActionResult(s);
  }
  if (std::optional<Daemon> d = RunningEmulator(dir)) {
    if (inv.json) {
      inv.out << api::ToJson(ToApi(*d, dir)) << "\n";
    } else {
      inv.out << "Already running.\n";
      PrintEndpointHelp(inv.out, *d, dir);
    }
    return Status::Ok();
  }
  if (Status s = NamespaceHosts::CheckSupport(); !s.ok()) {
    return ActionResult(s);
  }
  // The daemon serves the catalog's types: a catalog that does not load fails here,
  // with its own message, not in the daemon's log.
  if (Result<const Catalog*> catalog = inv.line.load_catalog(); !catalog.ok()) {
    return ActionResult(catalog.status());
  }
  if (Status s = ClaimEmulatorStateDir(dir, inv.env); !s.ok()) {
    return ActionResult(s);
  }
  // A crashed emulator's leftovers go before a new one starts.
  if (Status s = NamespaceHosts::CleanStale(dir + "/hosts"); !s.ok()) {
    return ActionResult(s.WithContext("cleaning up after an earlier emulator"));
  }
  std::error_code ec;
  std::filesystem::remove(dir + "/daemon.json", ec);
  std::vector<std::string> argv = {kDaemonName, "serve", "--state-dir", dir,
                                   "--port", inv.Get("port").value_or("0")};
  // The daemon's files by absolute names: it need not run where start was run.
  for (auto [flag, path] : {std::pair{"config", inv.Get("config")},
                            std::pair{"catalog", inv.line.catalog_path}}) {
    if (path) {
      std::error_code bad;
      std::filesystem::path absolute = std::filesystem::absolute(*path, bad);
      if (bad) {
        return ActionResult(InvalidArgumentError("--" + std::string(flag) + " " + *path +
                                                 ": " + bad.message()));
      }
      argv.push_back("--" + std::string(flag));
      argv.push_back(absolute.string());
    }
  }
  std::string log = dir + "/emulator.log";
  pid_t child = ::fork();
  if (child < 0) {
    return ActionResult(InternalError("fork failed"));
  }
  if (child == 0) {
    ::setsid();
    int null_fd = ::open("/dev/null", O_RDONLY);
    int log_fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
    ::dup2(null_fd, 0);
    ::dup2(log_fd, 1);
    ::dup2(log_fd, 2);
    std::vector<char*> cargv;
    for (std::string& a : argv) {
      cargv.push_back(a.data());
    }
    cargv.push_back(nullptr);
    ::execv("/proc/self/exe", cargv.data());
    ::_exit(127);
  }
  auto deadline = std::chrono::steady_clock::now() + kStartTimeout;
  while (std::chrono::steady_clock::now() < deadline) {
    int wstatus = 0;
    if (::waitpid(child, &wstatus, WNOHANG) == child) {
      Result<std::string> text = ReadFile(log);
      std::string tail = text.ok() ? *text : "";
      if (tail.size() > kLogTailBytes) {
        tail = tail.substr(tail.size() - kLogTailBytes);
      }
      return ActionResult(UnavailableError("the emulator exited while starting; its log (" +
                                             log + ") ends:\n" + tail));
    }
    if (std::optional<Daemon> d = RunningEmulator(dir); d && d->pid == child) {
      if (inv.json) {
        inv.out << api::ToJson(ToApi(*d, dir)) << "\n";
      } else {
        PrintEndpointHelp(inv.out, *d, dir);
      }
      return Status::Ok();
    }
    std::this_thread::sleep_for(kPollInterval);
  }
  ::kill(child, SIGKILL);
  return ActionResult(TimeoutError("the emulator did not start within " +
                                     FormatDuration(kStartTimeout) + "; see " + log));
}

// The user who owns `path` ("root (uid 0)"), for messages.
std::string OwnerOf(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return "another user";
  }
  std::string uid = "uid " + std::to_string(st.st_uid);
  return st.st_uid == 0 ? "root (" + uid + ")" : uid;
}

// Only the daemon's user can end it, and only a user who may change the state dir can
// remove what is in it. Anyone else is told so before anything is touched: not a kill
// that fails unnoticed (and a minute's wait for a daemon that never stops), nor a
// "nothing was running" about a directory they cannot look into.
Status CheckMayStop(const std::string& dir, const std::optional<EmulatorDaemon>& d) {
  const std::string how = "; stop it as its user: sudo -E tpufleet emulator stop";
  if (d && ::kill(d->pid, 0) != 0 && errno == EPERM) {
    return PermissionDeniedError("the emulator (pid " + std::to_string(d->pid) + ") runs as " +
                                 OwnerOf("/proc/" + std::to_string(d->pid)) + ", not as you" +
                                 how);
  }
  struct stat st {};
  if (::geteuid() != 0 && ::stat(dir.c_str(), &st) == 0 &&
      ::access(dir.c_str(), R_OK | W_OK | X_OK) != 0) {
    return PermissionDeniedError("the emulator's state dir " + dir + " belongs to " +
                                 OwnerOf(dir) + ", and you may not change it" + how);
  }
  return Status::Ok();
}

ActionResult Stop(Inv& inv) {
  std::string dir = StateDir(inv);
  // Someone else's directory names no daemon of ours and holds nothing to delete.
  if (Status s = CheckEmulatorStateDir(dir, inv.env); !s.ok()) {
    return ActionResult(s);
  }
  std::optional<Daemon> d = RunningEmulator(dir);
  if (Status s = CheckMayStop(dir, d); !s.ok()) {
    return ActionResult(s);
  }
  if (d) {
    if (!inv.json) {
      inv.out << "Stopping the emulator (pid " << d->pid << ") and its workers...\n";
    }
    ::kill(d->pid, SIGTERM);
    auto deadline = std::chrono::steady_clock::now() + kStopTimeout;
    while (IsEmulatorDaemon(d->pid) && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(kPollInterval);
    }
    if (IsEmulatorDaemon(d->pid)) {
      inv.err << "tpufleet: the emulator did not stop within " << FormatDuration(kStopTimeout)
              << "; killing it\n";
      ::kill(d->pid, SIGKILL);
      // Its lock on the hosts' state dir goes only when it is gone.
      auto killed_by = std::chrono::steady_clock::now() + kKillWait;
      while (::kill(d->pid, 0) == 0 && std::chrono::steady_clock::now() < killed_by) {
        std::this_thread::sleep_for(kPollInterval);
      }
    }
  }
  if (!IsEmulatorStateDir(dir)) {
    // Never delete a directory the emulator did not make: --state-dir may be a typo.
    if (inv.json) {
      inv.out << api::ToJson(api::EmulatorStopped{d.has_value(), dir}) << "\n";
    } else {
      inv.out << (d ? "Emulator stopped" : "No emulator was running") << "; " << dir
              << " is not an emulator state dir, so nothing was removed.\n";
    }
    return Status::Ok();
  }
  std::error_code ec;
  if (std::filesystem::exists(dir + "/hosts", ec)) {
    if (Status s = NamespaceHosts::CleanStale(dir + "/hosts"); !s.ok()) {
      return ActionResult(s.WithContext("cleaning up the emulator's worker hosts"));
    }
  }
  bool had_dir = std::filesystem::exists(dir, ec);
  std::filesystem::remove_all(dir, ec);
  if (ec) {
    return ActionResult(InternalError("removing " + dir + ": " + ec.message()));
  }
  if (inv.json) {
    inv.out << api::ToJson(api::EmulatorStopped{d.has_value(), dir}) << "\n";
  } else if (d) {
    inv.out << "Emulator stopped; its workers, network and " << dir << " are gone.\n";
  } else {
    inv.out << "No emulator was running" << (had_dir ? "; cleaned up " + dir : "") << ".\n";
  }
  return Status::Ok();
}

// The daemon itself: serves until SIGTERM or SIGINT, then destroys every worker.
ActionResult Serve(Inv& inv) {
  // Block the stop signals before any thread starts, so every thread inherits the mask
  // and sigwait below is the only place they arrive.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  std::string dir = StateDir(inv);
  if (Status s = ClaimEmulatorStateDir(dir, inv.env); !s.ok()) {
    return ActionResult(s);
  }
  Result<const Catalog*> catalog = inv.line.load_catalog();
  if (!catalog.ok()) {
    return ActionResult(catalog.status());
  }
  EmulatorConfig config;
  if (auto path = inv.Get("config")) {
    Result<EmulatorConfig> loaded = LoadEmulatorConfig(*path, **catalog);
    if (!loaded.ok()) {
      return ActionResult(loaded.status());
    }
    config = std::move(*loaded);
  }
  long long port = 0;
  if (!ParseInt(inv.Get("port").value_or("0"), &port) || port < 0 || port > 65535) {
    return Usage("--port expects a port number (0 picks a free one)");
  }
  // A fresh secret at each start (an old token file dies with its emulator), readable
  // by the owner alone, before anything listens.
  std::string token_file = dir + "/" + kEmulatorTokenFile;
  Result<std::string> secret = NewSecretToken(kEmulatorTokenPrefix);
  if (!secret.ok()) {
    return ActionResult(secret.status());
  }
  if (Status s = WriteFileAtomic(token_file, *secret + "\n", 0600); !s.ok()) {
    return ActionResult(s);
  }
  // What the owner's own tpufleet reads without sudo: the token, daemon.json, the log.
  EmulatorOwner owner = EmulatorOwnerOf(inv.env);
  auto give_to_owner = [&](const std::string& path) {
    return ::geteuid() != 0 || ::lchown(path.c_str(), owner.uid, owner.gid) == 0
               ? Status::Ok()
               : ErrnoStatus("chown " + path, errno);
  };
  for (const std::string& path : {token_file, dir + "/emulator.log"}) {
    if (Status s = give_to_owner(path); !s.ok() && s.code() != StatusCode::kNotFound) {
      return ActionResult(s);
    }
  }
  config.auth.owner_token = *std::move(secret);
  // `tpufleet emulator token rotate`: the new secret goes where the first one went, with
  // its mode and owner, replacing it in one rename.
  config.auth.publish_owner_token = [token_file, give_to_owner](const std::string& fresh) {
    TPUFLEET_TRY(WriteFileAtomic(token_file, fresh + "\n", 0600));
    return give_to_owner(token_file);
  };
  RealClock clock;
  Result<std::unique_ptr<NamespaceHosts>> hosts = NamespaceHosts::Create(
      {dir + "/hosts", NamespaceHosts::DefaultWorkerBinary(),
       NamespaceHosts::DefaultStandinBinary(), dir + "/" + kBucketDirName, dir},
      clock);
  if (!hosts.ok()) {
    return ActionResult(hosts.status());
  }
  ApiServer api(config, clock, hosts->get(), **catalog);
  HttpServerOptions options;
  options.port = static_cast<int>(port);
  HttpServer http(&api, options);
  Result<int> bound = http.Start();
  if (!bound.ok()) {
    return ActionResult(bound.status());
  }
  std::string endpoint = "http://127.0.0.1:" + std::to_string(*bound) + "/";
  json daemon = {{"pid", ::getpid()}, {"port", *bound}, {"endpoint", endpoint}};
  if (Status s = WriteFileAtomic(dir + "/daemon.json", daemon.dump() + "\n", 0600); !s.ok()) {
    return ActionResult(s);
  }
  if (Status s = give_to_owner(dir + "/daemon.json"); !s.ok()) {
    return ActionResult(s);
  }
  inv.out << "tpufleet emulator serving " << endpoint << std::endl;
  int sig = 0;
  sigwait(&stop_signals, &sig);
  inv.out << "tpufleet emulator: signal " << sig << ", destroying every worker" << std::endl;
  std::error_code ec;
  std::filesystem::remove(dir + "/daemon.json", ec);
  std::filesystem::remove(token_file, ec);
  http.Stop();
  hosts->reset();
  return Status::Ok();
}

}  // namespace

ActionResult RunEmulatorAction(const CommandLine& line) {
  Inv inv(line);
  static const std::vector<std::pair<std::string, ActionResult (*)(Inv&)>> kActions = {
      {"start", Start},
      {"stop", Stop},
      {"status", command_internal::ShowStatus},
      {"inject", command_internal::Inject},
      {"token", command_internal::Token},
      {"serve", Serve}};
  std::vector<std::string> names;
  for (const auto& [name, run] : kActions) {
    if (!inv.positional.empty() && inv.positional[0] == name) {
      return run(inv);
    }
    names.push_back(name);
  }
  if (inv.positional.empty()) {
    return Usage("emulator needs an action: start, stop, status, inject or token "
                 "(see tpufleet emulator --help)");
  }
  return Usage("unknown emulator action '" + inv.positional[0] + "'" +
               DidYouMean(inv.positional[0], names));
}

}  // namespace tpufleet::emulator
