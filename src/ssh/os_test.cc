#include "ssh/os.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <chrono>
#include <thread>

#include "ssh/testing/temp_dir.h"
#include "util/file.h"
#include "util/testing/status_printer.h"

namespace tpufleet {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

TEST(RunProgram, CollectsOutputAndExitCode) {
  Result<ProgramResult> r =
      RunProgram({"sh", "-c", "echo out; echo err >&2; exit 3"}, "", seconds(10));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->exit_code, 3);
  EXPECT_EQ(r->output, "out\nerr\n");
}

TEST(RunProgram, FeedsInputLargerThanAPipe) {
  std::string input(1 << 20, 'x');
  Result<ProgramResult> r = RunProgram({"wc", "-c"}, input, seconds(10));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->output, std::to_string(input.size()) + "\n");
}

TEST(RunProgram, SurvivesAProgramThatIgnoresItsInput) {
  // `true` exits without reading: the write gets EPIPE, and no SIGPIPE kills us.
  Result<ProgramResult> r = RunProgram({"true"}, std::string(1 << 20, 'x'), seconds(10));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->exit_code, 0);
}

TEST(RunProgram, KeepsTheLastOutputOnly) {
  Result<ProgramResult> r =
      RunProgram({"sh", "-c", "head -c 300000 /dev/zero | tr '\\0' x; echo END"}, "", seconds(10));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->output.size(), kMaxProgramOutput);
  EXPECT_EQ(r->output.substr(r->output.size() - 5), "xEND\n");
}

TEST(RunProgram, MissingProgramIsFailedPrecondition) {
  Result<ProgramResult> r = RunProgram({"tpufleet-no-such-program"}, "", seconds(1));
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition) << r.status().ToString();
}

bool Gone(pid_t pid) {
  if (::kill(pid, 0) != 0) {
    return true;
  }
  // Killed but not reaped yet (a container's init may be slow to): a zombie.
  Result<std::string> stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
  return !stat.ok() || stat->find(") Z ") != std::string::npos;
}

TEST(RunProgram, TimeoutKillsTheWholeProcessGroup) {
  TempDir tmp;
  std::string pid_file = tmp.path() + "/pid";
  auto start = std::chrono::steady_clock::now();
  Result<ProgramResult> r = RunProgram(
      {"sh", "-c", "sleep 30 & echo $! > '" + pid_file + "'; wait"}, "", milliseconds(300));
  EXPECT_EQ(r.status().code(), StatusCode::kTimeout) << r.status().ToString();
  EXPECT_LT(std::chrono::steady_clock::now() - start, seconds(5));
  Result<std::string> pid_text = ReadFile(pid_file);
  ASSERT_TRUE(pid_text.ok()) << pid_text.status().ToString();
  pid_t grandchild = std::stoi(*pid_text);
  for (int i = 0; i < 100 && !Gone(grandchild); ++i) {
    std::this_thread::sleep_for(milliseconds(10));
  }
  EXPECT_TRUE(Gone(grandchild)) << "the background sleep survived the timeout";
}

TEST(MakePrivateDirs, MakesParentsWithMode0700) {
  TempDir tmp;
  std::string dir = tmp.path() + "/a/b/c";
  ASSERT_EQ(MakePrivateDirs(dir), Status::Ok());
  for (const std::string& d : {tmp.path() + "/a", tmp.path() + "/a/b", dir}) {
    struct stat st;
    ASSERT_EQ(::stat(d.c_str(), &st), 0) << d;
    EXPECT_EQ(st.st_mode & 07777, 0700u) << d;
  }
  EXPECT_EQ(MakePrivateDirs(dir), Status::Ok());  // exists: fine
  ASSERT_EQ(WriteFileAtomic(tmp.path() + "/file", "x"), Status::Ok());
  EXPECT_EQ(MakePrivateDirs(tmp.path() + "/file").code(), StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace tpufleet
