#include "emulator/hosts/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "util/strings.h"
#include "util/unique_fd.h"

namespace tpufleet::emulator::hosts {
namespace {

int DecodeWaitStatus(int status) {
  if (WIFEXITED(status)) {
    return WEXITSTATUS(status);
  }
  if (WIFSIGNALED(status)) {
    return 128 + WTERMSIG(status);
  }
  return -1;
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
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (stdio.input >= 0) {
    posix_spawn_file_actions_adddup2(&actions, stdio.input, 0);
  } else {
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  }
  if (stdio.output >= 0) {
    posix_spawn_file_actions_adddup2(&actions, stdio.output, 1);
    posix_spawn_file_actions_adddup2(&actions, stdio.output, 2);
  }
  posix_spawn_file_actions_addclosefrom_np(&actions, 3);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none;
  sigemptyset(&none);
  sigset_t all;
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);

  std::vector<char*> args;
  for (const std::string& a : argv) {
    args.push_back(const_cast<char*>(a.c_str()));
  }
  args.push_back(nullptr);
  std::vector<std::string> env_strings = {std::string("PATH=") + kSystemPath};
  env_strings.insert(env_strings.end(), env.begin(), env.end());
  std::vector<char*> envp;
  for (std::string& e : env_strings) {
    envp.push_back(e.data());
  }
  envp.push_back(nullptr);

  pid_t pid = -1;
  int err = ::posix_spawn(&pid, argv[0].c_str(), &actions, &attr, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (err != 0) {
    return InternalError(argv[0] + ": " + std::strerror(err));
  }
  return pid;
}

Result<CommandResult> RunCommand(const std::vector<std::string>& argv, const std::string& input,
                                 std::chrono::milliseconds timeout) {
  if (argv.empty() || argv[0].empty() || argv[0][0] != '/') {
    return InternalError("RunCommand needs an absolute program path");
  }
  int in_pipe[2];
  int out_pipe[2];
  if (::pipe2(in_pipe, O_CLOEXEC) != 0) {
    return InternalError(std::string("pipe: ") + std::strerror(errno));
  }
  UniqueFd in_r(in_pipe[0]);
  UniqueFd in_w(in_pipe[1]);
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) {
    return InternalError(std::string("pipe: ") + std::strerror(errno));
  }
  UniqueFd out_r(out_pipe[0]);
  UniqueFd out_w(out_pipe[1]);

  TPUFLEET_ASSIGN_OR_RETURN(pid_t pid, SpawnProgram(argv, {in_r.get(), out_w.get()}, {"LC_ALL=C"}));
  in_r.Reset();
  out_w.Reset();
  if (input.empty()) {
    in_w.Reset();
  } else {
    ::fcntl(in_w.get(), F_SETFL, O_NONBLOCK);
  }

  CommandResult result;
  size_t written = 0;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  bool timed_out = false;
  while (out_r.get() >= 0) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    pollfd fds[2] = {{out_r.get(), POLLIN, 0}, {in_w.get(), POLLOUT, 0}};
    int n = ::poll(fds, in_w.get() >= 0 ? 2 : 1, static_cast<int>(left.count()));
    if (n < 0 && errno != EINTR) {
      break;
    }
    if (n <= 0) {
      continue;
    }
    if (fds[0].revents != 0) {
      char buf[8192];
      ssize_t r = ::read(out_r.get(), buf, sizeof buf);
      if (r > 0) {
        result.output.append(buf, static_cast<size_t>(r));
      } else if (r == 0 || errno != EINTR) {
        out_r.Reset();
      }
    }
    if (in_w.get() >= 0 && fds[1].revents != 0) {
      ssize_t w = ::write(in_w.get(), input.data() + written, input.size() - written);
      if (w > 0) {
        written += static_cast<size_t>(w);
      }
      if ((w < 0 && errno != EAGAIN && errno != EINTR) || written == input.size()) {
        in_w.Reset();
      }
    }
  }
  if (timed_out) {
    ::kill(pid, SIGKILL);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) {
    return TimeoutError(argv[0] + " did not finish within " + std::to_string(timeout.count()) +
                        " ms");
  }
  result.exit_code = DecodeWaitStatus(status);
  return result;
}

Status RunChecked(const std::vector<std::string>& argv, const std::string& input,
                  std::chrono::milliseconds timeout) {
  TPUFLEET_ASSIGN_OR_RETURN(CommandResult r, RunCommand(argv, input, timeout));
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
