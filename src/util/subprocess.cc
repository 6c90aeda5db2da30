#include "util/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>

#include "util/file.h"
#include "util/unique_fd.h"

extern char** environ;

namespace tpufleet {
namespace {

using Mono = std::chrono::steady_clock;

// Writing to the stdin of a program that has exited raises SIGPIPE, which would kill
// this whole process. Blocking it in this thread turns it into EPIPE; a SIGPIPE left
// pending is taken back before the old mask returns.
class ScopedSigpipeBlock {
 public:
  ScopedSigpipeBlock() {
    sigemptyset(&pipe_);
    sigaddset(&pipe_, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_, &old_);
  }
  ~ScopedSigpipeBlock() {
    if (sigismember(&old_, SIGPIPE) == 0) {
      timespec zero{};
      while (sigtimedwait(&pipe_, nullptr, &zero) > 0) {
      }
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }
  ScopedSigpipeBlock(const ScopedSigpipeBlock&) = delete;
  ScopedSigpipeBlock& operator=(const ScopedSigpipeBlock&) = delete;

 private:
  sigset_t pipe_;
  sigset_t old_;
};

int DecodeWaitStatus(int status) {
  if (status == -1) {
    return -1;  // reaped by someone else: unknown
  }
  if (WIFEXITED(status)) {
    return WEXITSTATUS(status);
  }
  if (WIFSIGNALED(status)) {
    return 128 + WTERMSIG(status);
  }
  return -1;
}

// Appends `data` to `out`, keeping only the last `cap` bytes (0: all). Trimmed in
// batches, so a chatty program costs amortized O(1) per byte.
void AppendTail(std::string& out, const char* data, size_t n, size_t cap) {
  out.append(data, n);
  if (cap > 0 && out.size() > 2 * cap) {
    out.erase(0, out.size() - cap);
  }
}

// Moves `input` into `in` and the program's output into `result` until the output ends
// or `deadline` passes. False on the deadline.
bool Pump(UniqueFd& in, UniqueFd& out, std::string_view input, Mono::time_point deadline,
          size_t cap, ProgramResult& result) {
  size_t written = 0;
  while (out.get() >= 0) {
    auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Mono::now());
    if (left.count() <= 0) {
      return false;
    }
    pollfd fds[2] = {{out.get(), POLLIN, 0}, {in.get(), POLLOUT, 0}};
    int n = ::poll(fds, in.get() >= 0 ? 2 : 1, static_cast<int>(left.count()));
    if (n <= 0) {
      continue;  // EINTR or the deadline, which the next turn sees
    }
    if (fds[0].revents != 0) {
      char buf[16384];
      ssize_t r = ::read(out.get(), buf, sizeof buf);
      if (r > 0) {
        AppendTail(result.output, buf, static_cast<size_t>(r), cap);
      } else if (r == 0 || (errno != EINTR && errno != EAGAIN)) {
        out.Reset();
      }
    }
    if (in.get() >= 0 && fds[1].revents != 0) {
      ssize_t w = ::write(in.get(), input.data() + written, input.size() - written);
      if (w > 0) {
        written += static_cast<size_t>(w);
      }
      // EPIPE: the program stopped reading; its exit status will say why.
      if ((w < 0 && errno != EINTR && errno != EAGAIN) || written == input.size()) {
        in.Reset();
      }
    }
  }
  return true;
}

// Waits for `pid` until `deadline` (it may close its output a little before it exits,
// or long before). False when it is still running then.
bool WaitUntil(pid_t pid, Mono::time_point deadline, int* status) {
  // Short first pauses: a program whose output just ended is usually gone within
  // microseconds. Capped so that one still running costs little CPU.
  auto pause = std::chrono::microseconds(50);
  while (true) {
    pid_t r = ::waitpid(pid, status, WNOHANG);
    if (r == pid) {
      return true;
    }
    if (r < 0 && errno != EINTR) {
      *status = -1;
      return true;
    }
    if (Mono::now() >= deadline) {
      return false;
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(10'000));
  }
}

}  // namespace

Result<pid_t> SpawnSubprocess(const std::vector<std::string>& argv, const SpawnOptions& options,
                              SpawnStdio stdio) {
  if (argv.empty() || argv[0].empty()) {
    return InternalError("SpawnSubprocess needs a program");
  }
  if (!options.search_path && argv[0][0] != '/') {
    return InternalError("SpawnSubprocess needs an absolute program path, not " + argv[0]);
  }
  if (options.inherit_env && !options.env.empty()) {
    return InternalError("SpawnOptions: an env together with inherit_env");
  }
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
  if (stdio.error >= 0) {
    posix_spawn_file_actions_adddup2(&actions, stdio.error, 2);
  }
  if (options.close_other_fds) {
    posix_spawn_file_actions_addclosefrom_np(&actions, 3);
  }
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none;
  sigemptyset(&none);
  sigset_t all;
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);
  short flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF;
  if (options.own_process_group) {
    posix_spawnattr_setpgroup(&attr, 0);
    flags |= POSIX_SPAWN_SETPGROUP;
  }
  posix_spawnattr_setflags(&attr, flags);

  std::vector<char*> args;
  for (const std::string& a : argv) {
    args.push_back(const_cast<char*>(a.c_str()));
  }
  args.push_back(nullptr);
  std::vector<char*> envp;
  for (const std::string& e : options.env) {
    envp.push_back(const_cast<char*>(e.c_str()));
  }
  envp.push_back(nullptr);
  char** child_env = options.inherit_env ? environ : envp.data();

  pid_t pid = -1;
  int err = options.search_path
                ? ::posix_spawnp(&pid, argv[0].c_str(), &actions, &attr, args.data(), child_env)
                : ::posix_spawn(&pid, argv[0].c_str(), &actions, &attr, args.data(), child_env);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (err == ENOENT) {
    return FailedPreconditionError(argv[0] + (options.search_path
                                                  ? " is not installed (not found in PATH)"
                                                  : " is not installed (no such file)"));
  }
  if (err != 0) {
    return InternalError("cannot start " + argv[0] + ": " + std::strerror(err));
  }
  return pid;
}

Status ExecProgram(const std::vector<std::string>& argv) {
  if (argv.empty() || argv[0].empty()) {
    return InternalError("ExecProgram needs a program");
  }
  std::vector<char*> args;
  for (const std::string& a : argv) {
    args.push_back(const_cast<char*>(a.c_str()));
  }
  args.push_back(nullptr);
  // A mask survives exec; the program should start as it would from a shell.
  sigset_t none;
  sigemptyset(&none);
  sigset_t old;
  pthread_sigmask(SIG_SETMASK, &none, &old);
  ::execvp(args[0], args.data());
  int err = errno;
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (err == ENOENT) {
    return FailedPreconditionError(argv[0] + " is not installed (not found in PATH)");
  }
  return InternalError("cannot run " + argv[0] + ": " + std::strerror(err));
}

Result<Pipe> MakePipe() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    return ErrnoStatus("pipe", errno);
  }
  return Pipe{UniqueFd(fds[0]), UniqueFd(fds[1])};
}

Result<ProgramResult> RunSubprocess(const std::vector<std::string>& argv, std::string_view input,
                                    std::chrono::milliseconds timeout,
                                    const SpawnOptions& options) {
  auto deadline = Mono::now() + timeout;
  TPUFLEET_ASSIGN_OR_RETURN(Pipe in, MakePipe());
  TPUFLEET_ASSIGN_OR_RETURN(Pipe out, MakePipe());

  ScopedSigpipeBlock no_sigpipe;
  TPUFLEET_ASSIGN_OR_RETURN(pid_t pid,
                            SpawnSubprocess(argv, options, {in.read.get(), out.write.get()}));
  in.read.Reset();
  out.write.Reset();
  ::fcntl(in.write.get(), F_SETFL, O_NONBLOCK);
  ::fcntl(out.read.get(), F_SETFL, O_NONBLOCK);
  if (input.empty()) {
    in.write.Reset();
  }

  ProgramResult result;
  int status = 0;
  bool finished = Pump(in.write, out.read, input, deadline, options.output_cap, result) &&
                  WaitUntil(pid, deadline, &status);
  if (!finished) {
    // A group leader not yet reaped keeps its group id from being reused, so killing
    // the group cannot hit a stranger.
    ::kill(options.own_process_group ? -pid : pid, SIGKILL);
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return TimeoutError(argv[0] + " did not finish within " + std::to_string(timeout.count()) +
                        " ms and was killed");
  }
  if (options.output_cap > 0 && result.output.size() > options.output_cap) {
    result.output.erase(0, result.output.size() - options.output_cap);
  }
  result.exit_code = DecodeWaitStatus(status);
  return result;
}

Result<ProgramResult> RunUserCommand(const std::vector<std::string>& argv, std::string_view input,
                                     std::chrono::milliseconds timeout) {
  SpawnOptions options{.search_path = true,
                       .inherit_env = true,
                       .env = {},
                       .own_process_group = true,
                       .close_other_fds = true,
                       .output_cap = kMaxProgramOutput};
  return RunSubprocess(argv, input, timeout, options);
}

}  // namespace tpufleet
