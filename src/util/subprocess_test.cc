#include "util/subprocess.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "util/file.h"
#include "util/testing/status_printer.h"
#include "util/testing/temp_dir.h"
#include "util/unique_fd.h"

namespace tpufleet {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// A shell with just enough environment to find coreutils; every test states the rest.
SpawnOptions Sh() {
  SpawnOptions options;
  options.env = {"PATH=/usr/bin:/bin"};
  return options;
}

std::vector<std::string> ShC(const std::string& script) {
  return {"/bin/sh", "-c", script};
}

// True when no child of this process is left unreaped.
bool NoChildLeft() {
  int status = 0;
  return ::waitpid(-1, &status, WNOHANG) < 0 && errno == ECHILD;
}

// True when `pid` is gone or a zombie (killed, but its new parent has not reaped it yet).
bool Gone(pid_t pid) {
  if (::kill(pid, 0) != 0) {
    return true;
  }
  Result<std::string> stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
  return !stat.ok() || stat->find(") Z ") != std::string::npos;
}

bool GoneSoon(pid_t pid) {
  for (int i = 0; i < 200 && !Gone(pid); ++i) {
    std::this_thread::sleep_for(milliseconds(10));
  }
  return Gone(pid);
}

TEST(RunSubprocess, FeedsStdinAndCollectsStdoutAndStderr) {
  Result<ProgramResult> r =
      RunSubprocess(ShC("cat; echo err >&2; exit 3"), "hello\n", seconds(10), Sh());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->exit_code, 3);
  EXPECT_EQ(r->output, "hello\nerr\n");
  EXPECT_TRUE(NoChildLeft());
}

TEST(RunSubprocess, LargeInputAndOutputTogetherDoNotDeadlock) {
  // cat writes back while it reads: both pipes fill unless input and output are pumped
  // at the same time.
  std::string input(4 << 20, 'x');
  Result<ProgramResult> r = RunSubprocess({"/bin/cat"}, input, seconds(20), Sh());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->exit_code, 0);
  EXPECT_EQ(r->output.size(), input.size());
  EXPECT_EQ(r->output, input);
}

TEST(RunSubprocess, SurvivesAProgramThatIgnoresItsInput) {
  // `true` exits without reading: the write gets EPIPE, and no SIGPIPE kills us.
  Result<ProgramResult> r =
      RunSubprocess({"/bin/true"}, std::string(1 << 20, 'x'), seconds(10), Sh());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->exit_code, 0);
}

TEST(RunSubprocess, OutputCapKeepsTheTail) {
  SpawnOptions options = Sh();
  options.output_cap = 1000;
  Result<ProgramResult> r = RunSubprocess(ShC("head -c 300000 /dev/zero | tr '\\0' x; echo END"),
                                          "", seconds(10), options);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->output, std::string(996, 'x') + "END\n");
}

TEST(RunSubprocess, NoCapKeepsEverything) {
  Result<ProgramResult> r = RunSubprocess(ShC("head -c 300000 /dev/zero"), "", seconds(10), Sh());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->output.size(), 300000u);
}

TEST(RunSubprocess, NonZeroExitAndDeathBySignal) {
  Result<ProgramResult> exited = RunSubprocess(ShC("exit 7"), "", seconds(10), Sh());
  ASSERT_TRUE(exited.ok()) << exited.status().ToString();
  EXPECT_EQ(exited->exit_code, 7);
  Result<ProgramResult> killed = RunSubprocess(ShC("kill -TERM $$"), "", seconds(10), Sh());
  ASSERT_TRUE(killed.ok()) << killed.status().ToString();
  EXPECT_EQ(killed->exit_code, 128 + SIGTERM);
}

TEST(RunSubprocess, TimeoutKillsTheWholeProcessGroupAndReaps) {
  TempDir tmp;
  std::string pid_file = tmp.path() + "/pid";
  SpawnOptions options = Sh();
  options.own_process_group = true;
  auto start = std::chrono::steady_clock::now();
  Result<ProgramResult> r = RunSubprocess(ShC("sleep 30 & echo $! > '" + pid_file + "'; wait"), "",
                                          milliseconds(300), options);
  EXPECT_EQ(r.status().code(), StatusCode::kTimeout) << r.status().ToString();
  EXPECT_LT(std::chrono::steady_clock::now() - start, seconds(5));
  EXPECT_TRUE(NoChildLeft());
  Result<std::string> pid_text = ReadFile(pid_file);
  ASSERT_TRUE(pid_text.ok()) << pid_text.status().ToString();
  pid_t grandchild = std::stoi(*pid_text);
  EXPECT_TRUE(GoneSoon(grandchild)) << "the background sleep survived the timeout";
}

TEST(RunSubprocess, WithoutAGroupOfItsOwnTimeoutKillsOnlyTheProgram) {
  TempDir tmp;
  std::string pid_file = tmp.path() + "/pid";
  Result<ProgramResult> r =
      RunSubprocess(ShC("sleep 30 >/dev/null 2>&1 & echo $! > '" + pid_file + "'; wait"), "",
                    milliseconds(300), Sh());
  EXPECT_EQ(r.status().code(), StatusCode::kTimeout) << r.status().ToString();
  EXPECT_TRUE(NoChildLeft());
  Result<std::string> pid_text = ReadFile(pid_file);
  ASSERT_TRUE(pid_text.ok()) << pid_text.status().ToString();
  pid_t grandchild = std::stoi(*pid_text);
  EXPECT_FALSE(Gone(grandchild));
  ::kill(grandchild, SIGKILL);
}

TEST(RunSubprocess, TimeoutAlsoWhenTheProgramClosesItsOutputAndStaysAlive) {
  auto start = std::chrono::steady_clock::now();
  Result<ProgramResult> r =
      RunSubprocess(ShC("exec >&- 2>&-; sleep 30"), "", milliseconds(300), Sh());
  EXPECT_EQ(r.status().code(), StatusCode::kTimeout) << r.status().ToString();
  EXPECT_LT(std::chrono::steady_clock::now() - start, seconds(5));
  EXPECT_TRUE(NoChildLeft());
}

TEST(RunSubprocess, OwnProcessGroupWhenAsked) {
  std::string script = "echo $$; cut -d' ' -f5 /proc/$$/stat";
  SpawnOptions options = Sh();
  options.own_process_group = true;
  Result<ProgramResult> own = RunSubprocess(ShC(script), "", seconds(10), options);
  ASSERT_TRUE(own.ok()) << own.status().ToString();
  size_t nl = own->output.find('\n');
  ASSERT_NE(nl, std::string::npos) << own->output;
  EXPECT_EQ(own->output.substr(nl + 1), own->output.substr(0, nl + 1));  // pgid == pid

  Result<ProgramResult> shared = RunSubprocess(ShC(script), "", seconds(10), Sh());
  ASSERT_TRUE(shared.ok()) << shared.status().ToString();
  nl = shared->output.find('\n');
  EXPECT_EQ(shared->output.substr(nl + 1), std::to_string(::getpgrp()) + "\n");
}

TEST(RunSubprocess, MissingProgramIsFailedPrecondition) {
  SpawnOptions search = Sh();
  search.search_path = true;
  Result<ProgramResult> by_name =
      RunSubprocess({"tpufleet-no-such-program"}, "", seconds(1), search);
  EXPECT_EQ(by_name.status().code(), StatusCode::kFailedPrecondition)
      << by_name.status().ToString();
  Result<ProgramResult> by_path =
      RunSubprocess({"/nonexistent/tpufleet-no-such-program"}, "", seconds(1), Sh());
  EXPECT_EQ(by_path.status().code(), StatusCode::kFailedPrecondition)
      << by_path.status().ToString();
}

TEST(RunSubprocess, WithoutSearchPathOnlyAnAbsolutePathRuns) {
  Result<ProgramResult> r = RunSubprocess({"true"}, "", seconds(1), Sh());
  EXPECT_EQ(r.status().code(), StatusCode::kInternal) << r.status().ToString();
  EXPECT_EQ(RunSubprocess({}, "", seconds(1), Sh()).status().code(), StatusCode::kInternal);
}

TEST(RunSubprocess, SearchPathFindsAProgramByName) {
  SpawnOptions options = Sh();
  options.search_path = true;
  Result<ProgramResult> r = RunSubprocess({"sh", "-c", "echo hi"}, "", seconds(10), options);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->output, "hi\n");
}

TEST(RunSubprocess, EnvironmentIsExactlyTheGivenOne) {
  ASSERT_EQ(::setenv("TPUFLEET_SUBPROCESS_TEST", "secret", 1), 0);
  SpawnOptions exact;
  exact.env = {"ONLY=this"};
  Result<ProgramResult> r = RunSubprocess({"/usr/bin/env"}, "", seconds(10), exact);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->output, "ONLY=this\n");

  SpawnOptions inherit;
  inherit.inherit_env = true;
  r = RunSubprocess({"/usr/bin/env"}, "", seconds(10), inherit);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_NE(r->output.find("TPUFLEET_SUBPROCESS_TEST=secret\n"), std::string::npos) << r->output;
  ::unsetenv("TPUFLEET_SUBPROCESS_TEST");

  SpawnOptions both = exact;
  both.inherit_env = true;
  EXPECT_EQ(RunSubprocess({"/usr/bin/env"}, "", seconds(1), both).status().code(),
            StatusCode::kInternal);
}

TEST(RunSubprocess, NoDescriptorLeaksIntoTheChildWhenAsked) {
  UniqueFd leaky(::open("/dev/null", O_RDONLY));  // no O_CLOEXEC
  ASSERT_GE(leaky.get(), 3);
  std::string script = "if [ -e /proc/self/fd/" + std::to_string(leaky.get()) +
                       " ]; then echo open; else echo closed; fi";
  Result<ProgramResult> closed = RunSubprocess(ShC(script), "", seconds(10), Sh());
  ASSERT_TRUE(closed.ok()) << closed.status().ToString();
  EXPECT_EQ(closed->output, "closed\n");

  SpawnOptions inherit_fds = Sh();
  inherit_fds.close_other_fds = false;
  Result<ProgramResult> open = RunSubprocess(ShC(script), "", seconds(10), inherit_fds);
  ASSERT_TRUE(open.ok()) << open.status().ToString();
  EXPECT_EQ(open->output, "open\n");
}

TEST(SpawnSubprocess, StdinIsDevNullAndTheCallerReaps) {
  int p[2];
  ASSERT_EQ(::pipe2(p, O_CLOEXEC), 0);
  UniqueFd out_r(p[0]);
  UniqueFd out_w(p[1]);
  Result<pid_t> pid = SpawnSubprocess(ShC("cat; echo done"), Sh(), {-1, out_w.get()});
  ASSERT_TRUE(pid.ok()) << pid.status().ToString();
  out_w.Reset();
  std::string output;
  char buf[256];
  ssize_t n;
  while ((n = ::read(out_r.get(), buf, sizeof buf)) > 0) {
    output.append(buf, static_cast<size_t>(n));
  }
  EXPECT_EQ(output, "done\n");
  int status = 0;
  ASSERT_EQ(::waitpid(*pid, &status, 0), *pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

// In a child of this (single-threaded) test: ExecProgram with SIGTERM blocked first. The
// program starts with nothing blocked, so the SIGTERM it sends itself kills it.
TEST(ExecProgram, ReplacesTheProcessWithNoSignalBlocked) {
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    sigset_t term;
    sigemptyset(&term);
    sigaddset(&term, SIGTERM);
    ::sigprocmask(SIG_BLOCK, &term, nullptr);
    (void)ExecProgram({"sh", "-c", "kill -TERM $$; exit 3"});
    ::_exit(99);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM) << status;
}

TEST(ExecProgram, AMissingProgramReturnsAndLeavesTheSignalMaskAsItWas) {
  sigset_t usr2;
  sigemptyset(&usr2);
  sigaddset(&usr2, SIGUSR2);
  sigset_t old;
  ::sigprocmask(SIG_BLOCK, &usr2, &old);
  Status s = ExecProgram({"tpufleet-no-such-program"});
  sigset_t after;
  ::sigprocmask(SIG_SETMASK, &old, &after);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("not installed"), std::string::npos) << s.message();
  EXPECT_EQ(sigismember(&after, SIGUSR2), 1);
  EXPECT_EQ(ExecProgram({}).code(), StatusCode::kInternal);
}

// RunUserCommand: the policy of a command the user typed (PATH, own environment, own
// process group, the output's tail kept).
TEST(RunUserCommand, CollectsOutputAndExitCode) {
  Result<ProgramResult> r =
      RunUserCommand({"sh", "-c", "echo out; echo err >&2; exit 3"}, "", seconds(10));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->exit_code, 3);
  EXPECT_EQ(r->output, "out\nerr\n");
}

TEST(RunUserCommand, FeedsInputLargerThanAPipe) {
  std::string input(1 << 20, 'x');
  Result<ProgramResult> r = RunUserCommand({"wc", "-c"}, input, seconds(10));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->output, std::to_string(input.size()) + "\n");
}

TEST(RunUserCommand, SurvivesAProgramThatIgnoresItsInput) {
  // `true` exits without reading: the write gets EPIPE, and no SIGPIPE kills us.
  Result<ProgramResult> r = RunUserCommand({"true"}, std::string(1 << 20, 'x'), seconds(10));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->exit_code, 0);
}

TEST(RunUserCommand, KeepsTheLastOutputOnly) {
  Result<ProgramResult> r = RunUserCommand(
      {"sh", "-c", "head -c 300000 /dev/zero | tr '\\0' x; echo END"}, "", seconds(10));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->output.size(), kMaxProgramOutput);
  EXPECT_EQ(r->output.substr(r->output.size() - 5), "xEND\n");
}

TEST(RunUserCommand, MissingProgramIsFailedPrecondition) {
  Result<ProgramResult> r = RunUserCommand({"tpufleet-no-such-program"}, "", seconds(1));
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition) << r.status().ToString();
}

TEST(RunUserCommand, TimeoutKillsTheWholeProcessGroup) {
  TempDir tmp;
  std::string pid_file = tmp.Path("pid");
  auto start = std::chrono::steady_clock::now();
  Result<ProgramResult> r = RunUserCommand(
      {"sh", "-c", "sleep 30 & echo $! > '" + pid_file + "'; wait"}, "", milliseconds(300));
  EXPECT_EQ(r.status().code(), StatusCode::kTimeout) << r.status().ToString();
  EXPECT_LT(std::chrono::steady_clock::now() - start, seconds(5));
  Result<std::string> pid_text = ReadFile(pid_file);
  ASSERT_TRUE(pid_text.ok()) << pid_text.status().ToString();
  pid_t grandchild = std::stoi(*pid_text);
  EXPECT_TRUE(GoneSoon(grandchild)) << "the background sleep survived the timeout";
}

}  // namespace
}  // namespace tpufleet
