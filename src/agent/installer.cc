#include "agent/installer.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iostream>
#include <thread>
#include <utility>
#include <vector>

#include "agent/flags.h"
#include "api/agent.h"
#include "util/file.h"
#include "util/strings.h"
#include "util/subprocess.h"
#include "util/unique_fd.h"

namespace tpufleet::agent {
namespace {

using Steady = std::chrono::steady_clock;

constexpr const char* kUnitName = "tpufleet-agent.service";
// supervise's output (and serve's, through it) where no journal takes it.
constexpr const char* kSuperviseLog = "var/log/tpufleet-agent.log";
// The log is started afresh when an install finds it larger than this.
constexpr off_t kMaxSuperviseLog = 4 * 1024 * 1024;
// A started agent answers on its socket within this long, or install says it did not.
constexpr std::chrono::seconds kStartTimeout{15};
// A service manager restarts a serve it ran within this long (the emulator's worker
// init after 0.5 s, systemd's RestartSec=2 units after 2 s); else supervise takes over.
constexpr std::chrono::seconds kManagedRestart{5};
// systemctl's commands return within seconds; a hung systemd is an error, not a wait.
constexpr std::chrono::seconds kSystemctlTimeout{60};
constexpr std::chrono::milliseconds kPollStep{100};

// `path` (absolute, or relative to /) below `root`.
std::string Under(const std::string& root, std::string_view path) {
  std::string rel(path.substr(path.find_first_not_of('/')));
  return root.empty() || root == "/" ? "/" + rel
                                     : (root.back() == '/' ? root : root + "/") + rel;
}

Status MakeDirs(const std::string& dir, mode_t mode) {
  std::string at;
  for (const std::string& part : Split(dir, '/')) {
    if (part.empty()) {
      continue;
    }
    at += "/" + part;
    if (mkdir(at.c_str(), mode) != 0 && errno != EEXIST) {
      return ErrnoStatus(at, errno);
    }
  }
  return Status::Ok();
}

std::string Parent(const std::string& path) { return path.substr(0, path.rfind('/')); }

// argv of process `pid`, empty when it is gone (or a kernel thread).
std::vector<std::string> Cmdline(pid_t pid) {
  Result<std::string> raw = ReadFile("/proc/" + std::to_string(pid) + "/cmdline", 64 * 1024);
  if (!raw.ok() || raw->empty()) {
    return {};
  }
  std::vector<std::string> argv = Split(*raw, '\0');
  if (!argv.empty() && argv.back().empty()) {
    argv.pop_back();
  }
  return argv;
}

// "serve" or "supervise" for a `tpufleet-agent serve` or `supervise`: what an install
// replaces (a job keeper, `keep`, is never one of them); "" for anything else.
std::string AgentRole(const std::vector<std::string>& argv) {
  if (argv.size() < 2) {
    return "";
  }
  std::string_view prog = argv[0];
  prog = prog.substr(prog.rfind('/') == std::string_view::npos ? 0 : prog.rfind('/') + 1);
  return prog == "tpufleet-agent" && (argv[1] == "serve" || argv[1] == "supervise") ? argv[1]
                                                                                  : "";
}

// The parent of `pid` (field 4 of /proc/PID/stat); 0 when it is gone.
pid_t ParentOf(pid_t pid) {
  Result<std::string> stat = ReadFile("/proc/" + std::to_string(pid) + "/stat", 4096);
  size_t paren = stat.ok() ? stat->rfind(')') : std::string::npos;
  std::vector<std::string> fields =
      paren == std::string::npos ? std::vector<std::string>{} : Split(stat->substr(paren + 2), ' ');
  long long ppid = 0;
  return fields.size() > 1 && ParseInt(fields[1], &ppid) ? static_cast<pid_t>(ppid) : 0;
}

bool Gone(pid_t pid) {
  // A zombie is as good as gone: its reaper (init) is not us.
  Result<std::string> stat = ReadFile("/proc/" + std::to_string(pid) + "/stat", 4096);
  if (!stat.ok()) {
    return true;
  }
  size_t paren = stat->rfind(')');
  return paren == std::string::npos || stat->substr(paren + 2, 1) == "Z";
}

// The running supervises and serves (but this process), with their argv.
std::vector<std::pair<pid_t, std::vector<std::string>>> AgentProcesses() {
  std::vector<std::pair<pid_t, std::vector<std::string>>> out;
  for (const std::string& name : ListDirectory("/proc")) {
    long long pid = 0;
    if (!ParseInt(name, &pid) || pid == getpid()) {
      continue;
    }
    std::vector<std::string> argv = Cmdline(static_cast<pid_t>(pid));
    if (!AgentRole(argv).empty()) {
      out.emplace_back(static_cast<pid_t>(pid), std::move(argv));
    }
  }
  return out;
}

// TERMs every supervise and serve of an older install, then KILLs what is left after
// kStopGrace. Their job keepers run on (sessions of their own). True when a serve was
// not a supervise's: a service manager runs it (the emulator's worker init, after a
// boot), which starts it again by itself.
bool StopRunningAgents() {
  std::vector<pid_t> pids;
  std::vector<pid_t> supervisors;
  std::vector<pid_t> parents;  // of the serves
  for (const auto& [pid, argv] : AgentProcesses()) {
    pids.push_back(pid);
    if (AgentRole(argv) == "supervise") {
      supervisors.push_back(pid);
    } else {
      parents.push_back(ParentOf(pid));
    }
  }
  bool managed = std::any_of(parents.begin(), parents.end(), [&](pid_t parent) {
    return std::find(supervisors.begin(), supervisors.end(), parent) == supervisors.end();
  });
  for (pid_t pid : pids) {
    kill(pid, SIGTERM);
  }
  Steady::time_point deadline = Steady::now() + kStopGrace;
  while (!std::all_of(pids.begin(), pids.end(), Gone) && Steady::now() < deadline) {
    std::this_thread::sleep_for(kPollStep);
  }
  for (pid_t pid : pids) {
    if (!Gone(pid)) {
      kill(pid, SIGKILL);
    }
  }
  return managed;
}

bool Answers(const std::string& socket_path) {
  UniqueFd fd(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (fd.get() < 0 || socket_path.size() >= sizeof(addr.sun_path)) {
    return false;
  }
  std::memcpy(addr.sun_path, socket_path.c_str(), socket_path.size() + 1);
  return connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
}

Status WaitUntilAnswers(const InstallPaths& paths, std::chrono::seconds timeout,
                        const std::string& where_to_look) {
  Steady::time_point deadline = Steady::now() + timeout;
  while (!Answers(Under(paths.root, api::kAgentSocketPath))) {
    if (Steady::now() >= deadline) {
      return UnavailableError("the agent did not answer on " + std::string(api::kAgentSocketPath) +
                              " within " + std::to_string(timeout.count()) +
                              " s of its start; " + where_to_look);
    }
    std::this_thread::sleep_for(kPollStep);
  }
  return Status::Ok();
}

Status Systemctl(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"systemctl"};
  argv.insert(argv.end(), args.begin(), args.end());
  SpawnOptions options;
  options.search_path = true;
  options.inherit_env = true;
  options.output_cap = 4096;
  TPUFLEET_ASSIGN_OR_RETURN(ProgramResult r, RunSubprocess(argv, "", kSystemctlTimeout, options));
  if (r.exit_code != 0) {
    return UnavailableError(ShellJoin(argv) + " failed (exit " + std::to_string(r.exit_code) +
                            "): " + std::string(Trim(r.output)));
  }
  return Status::Ok();
}

// The options of `install` and `supervise`: --prometheus PORT.
Result<ServeOptions> ParseServeOptions(const std::vector<std::string>& args) {
  TPUFLEET_ASSIGN_OR_RETURN(Flags flags, ParseFlags(args, {"prometheus"}));
  if (!flags.positional.empty()) {
    return InvalidArgumentError("unexpected argument " + flags.positional.front());
  }
  ServeOptions options;
  if (flags.values.count("prometheus") != 0) {
    long long port = 0;
    if (!ParseInt(flags.values["prometheus"], &port) || port < 1 || port > 65535) {
      return InvalidArgumentError("--prometheus: expected a TCP port from 1 to 65535, not " +
                                  flags.values["prometheus"]);
    }
    options.prometheus_port = static_cast<int>(port);
  }
  return options;
}

// supervise's own arguments for `options` (ParseServeOptions reads them back).
std::vector<std::string> SuperviseArgs(const ServeOptions& options) {
  if (options.prometheus_port == 0) {
    return {};
  }
  return {"--prometheus", std::to_string(options.prometheus_port)};
}

Status StartSupervise(const InstallPaths& paths, const ServeOptions& serve) {
  std::string log = Under(paths.root, kSuperviseLog);
  TPUFLEET_TRY(MakeDirs(Parent(log), 0755));
  struct stat st{};
  int flags = O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW;
  if (stat(log.c_str(), &st) == 0 && st.st_size > kMaxSuperviseLog) {
    flags |= O_TRUNC;
  }
  UniqueFd out(open(log.c_str(), flags, 0640));
  if (out.get() < 0) {
    return ErrnoStatus(log, errno);
  }
  SpawnOptions options;
  options.inherit_env = false;
  options.env = {"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"};
  // Its output goes to the log, not to the SSH channel that ran install: the channel
  // (and `up`'s job) ends when install does. supervise makes a session of its own.
  std::vector<std::string> argv = {paths.Binary(), "supervise"};
  for (std::string& arg : SuperviseArgs(serve)) {
    argv.push_back(std::move(arg));
  }
  TPUFLEET_ASSIGN_OR_RETURN(pid_t pid, SpawnSubprocess(argv, options, {-1, out.get()}));
  (void)pid;  // reparented to init when install exits
  return WaitUntilAnswers(paths, kStartTimeout, "see " + log);
}

}  // namespace

std::string InstallPaths::Binary() const { return Under(root, api::kAgentBinaryPath); }
std::string InstallPaths::Unit() const {
  return Under(root, std::string("etc/systemd/system/") + kUnitName);
}
std::string InstallPaths::WantsLink() const {
  return Under(root, std::string("etc/systemd/system/multi-user.target.wants/") + kUnitName);
}
std::string InstallPaths::SystemdRun() const { return Under(root, "run/systemd/system"); }
std::string InstallPaths::SupervisePid() const {
  return Under(root, "run/tpufleet-agent/supervise.pid");
}

std::vector<std::string> ServeArgs(const ServeOptions& options) {
  std::vector<std::string> args = {"serve"};
  if (options.prometheus_port != 0) {
    args.push_back("--prometheus");
    args.push_back("0.0.0.0:" + std::to_string(options.prometheus_port));
  }
  return args;
}

std::string AgentUnitText(const ServeOptions& options) {
  return std::string(
             "# Written by `tpufleet-agent install` (tpufleet up); replaced by the next one.\n"
             "[Unit]\n"
             "Description=tpufleet node agent\n"
             "After=network.target\n"
             "\n"
             "[Service]\n"
             "ExecStart=") +
         std::string(api::kAgentBinaryPath) + " " + Join(ServeArgs(options), " ") +
         "\n"
         "Restart=always\n"
         "RestartSec=2\n"
         "# Only serve is stopped on a restart or upgrade: the job keepers it started\n"
         "# (and their jobs) live on, and the next serve finds them again.\n"
         "KillMode=process\n"
         "\n"
         "[Install]\n"
         "WantedBy=multi-user.target\n";
}

Status InstallFiles(const InstallPaths& paths, const std::string& self,
                    const ServeOptions& options) {
  std::string binary = paths.Binary();
  TPUFLEET_TRY(MakeDirs(Parent(binary), 0755));
  if (self != binary) {
    TPUFLEET_ASSIGN_OR_RETURN(std::string bytes, ReadFile(self, kMaxAgentBinary));
    // A temporary file beside it, then rename: never half a binary at that path.
    TPUFLEET_TRY(WriteFileAtomic(binary, bytes, 0755));
  }
  TPUFLEET_TRY(MakeDirs(Parent(paths.WantsLink()), 0755));
  TPUFLEET_TRY(WriteFileAtomic(paths.Unit(), AgentUnitText(options), 0644));
  // The link systemctl enable makes: absolute, to the unit as the worker names it.
  std::string link = paths.WantsLink();
  std::string target = std::string("/etc/systemd/system/") + kUnitName;
  std::string tmp = link + ".tmp";
  unlink(tmp.c_str());
  if (symlink(target.c_str(), tmp.c_str()) != 0) {
    return ErrnoStatus(tmp, errno);
  }
  if (rename(tmp.c_str(), link.c_str()) != 0) {
    int err = errno;
    unlink(tmp.c_str());
    return ErrnoStatus(link, err);
  }
  return Status::Ok();
}

Status StartAgent(const InstallPaths& paths, const ServeOptions& options) {
  struct stat st{};
  if (stat(paths.SystemdRun().c_str(), &st) == 0) {
    TPUFLEET_TRY(Systemctl({"daemon-reload"}));
    TPUFLEET_TRY(Systemctl({"enable", kUnitName}));
    TPUFLEET_TRY(Systemctl({"restart", kUnitName}));
    return WaitUntilAnswers(paths, kStartTimeout, "see `journalctl -u tpufleet-agent`");
  }
  // The service manager that ran the old serve starts the new binary itself: a second
  // serve of ours would only lose the race for the lock, again and again.
  if (StopRunningAgents() && WaitUntilAnswers(paths, kManagedRestart, "").ok()) {
    // It read the unit when it booted: a serve it starts has the arguments of then.
    std::vector<std::string> want = ServeArgs(options);
    for (const auto& [pid, argv] : AgentProcesses()) {
      if (AgentRole(argv) == "serve" && std::vector(argv.begin() + 1, argv.end()) != want) {
        return FailedPreconditionError(
            "the service manager that runs the agent started it again as `" +
            Join(argv, " ") + "`, from the unit it read at boot, not with `" +
            Join(want, " ") + "`: reboot the worker (or restart its service manager)");
      }
    }
    return Status::Ok();
  }
  return StartSupervise(paths, options);
}

int InstallMain(const std::vector<std::string>& args) {
  Result<ServeOptions> options = ParseServeOptions(args);
  if (!options.ok()) {
    return Complain(kExitUsage, "install: " + options.status().message() +
                                    "\nusage: tpufleet-agent install [--prometheus PORT] (as "
                                    "root, from a copy)");
  }
  if (geteuid() != 0) {
    return Complain(kExitFailed, "install: must run as root");
  }
  InstallPaths paths;
  Result<std::string> self = ThisProgram();
  Status s = self.ok() ? InstallFiles(paths, *self, *options) : self.status();
  if (s.ok()) {
    s = StartAgent(paths, *options);
  }
  if (!s.ok()) {
    return Complain(kExitFailed, "install: " + s.message());
  }
  std::cout << "tpufleet-agent installed at " << paths.Binary() << " and running\n";
  return kExitOk;
}

int SuperviseMain(const std::vector<std::string>& args) {
  Result<ServeOptions> options = ParseServeOptions(args);
  if (!options.ok()) {
    return Complain(kExitUsage, "supervise: " + options.status().message() +
                                    "\nusage: tpufleet-agent supervise [--prometheus PORT]");
  }
  // Out of the session of whoever started it (install, over SSH): its end is not ours.
  setsid();
  InstallPaths paths;
  std::vector<std::string> argv = {paths.Binary()};
  for (std::string& arg : ServeArgs(*options)) {
    argv.push_back(std::move(arg));
  }
  return Supervise(argv, paths.SupervisePid());
}

int Supervise(const std::vector<std::string>& argv, const std::string& pid_file,
              std::chrono::milliseconds min_backoff) {
  std::string me = std::to_string(getpid());
  Status written = MakeDirs(Parent(pid_file), 0755);
  if (written.ok()) {
    written = WriteFileAtomic(pid_file, me + "\n", 0644);
  }
  if (!written.ok()) {
    return Complain(kExitFailed, "supervise: " + written.message());
  }
  auto replaced = [&] {
    Result<std::string> now = ReadFile(pid_file, 64);
    return !now.ok() || Trim(*now) != me;
  };
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGCHLD);
  sigprocmask(SIG_BLOCK, &set, nullptr);

  SpawnOptions options;
  options.inherit_env = true;
  std::chrono::milliseconds backoff = min_backoff;
  Steady::time_point next_start = Steady::now();
  Steady::time_point started{};
  pid_t child = -1;
  bool stopping = false;
  for (;;) {
    if (child < 0 && Steady::now() >= next_start) {
      Result<pid_t> pid = SpawnSubprocess(argv, options);
      if (pid.ok()) {
        child = *pid;
        started = Steady::now();
      } else {
        Complain(kExitFailed, "supervise: " + pid.status().message());
        next_start = Steady::now() + backoff;
        backoff = std::min<std::chrono::milliseconds>(backoff * 2, kSuperviseMaxBackoff);
      }
    }
    auto wait = std::chrono::duration_cast<std::chrono::nanoseconds>(
        child < 0 ? std::max(next_start - Steady::now(), Steady::duration::zero())
                  : Steady::duration(kSupervisePidCheck));
    timespec ts{static_cast<time_t>(wait.count() / 1000000000),
                static_cast<long>(wait.count() % 1000000000)};
    int sig = sigtimedwait(&set, nullptr, &ts);
    if (sig == SIGTERM || sig == SIGINT || (!stopping && replaced())) {
      if (child < 0) {
        return kExitOk;
      }
      if (!stopping) {
        stopping = true;
        kill(child, SIGTERM);
      }
    }
    int status = 0;
    pid_t got;
    while ((got = waitpid(-1, &status, WNOHANG)) > 0) {
      if (got != child) {
        continue;
      }
      child = -1;
      if (stopping) {
        return kExitOk;
      }
      if (Steady::now() - started >= kSuperviseHealthy) {
        backoff = min_backoff;
      }
      next_start = Steady::now() + backoff;
      Complain(kExitFailed,
               "supervise: serve " +
                   (WIFSIGNALED(status) ? "was killed by signal " + std::to_string(WTERMSIG(status))
                                        : "exited " + std::to_string(WEXITSTATUS(status))) +
                   "; starting it again in " + std::to_string(backoff.count()) + " ms");
      backoff = std::min<std::chrono::milliseconds>(backoff * 2, kSuperviseMaxBackoff);
    }
  }
}

}  // namespace tpufleet::agent
