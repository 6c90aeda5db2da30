#include "agent/installer.h"

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include <gtest/gtest.h>

#include "agent/flags.h"
#include "util/file.h"
#include "util/strings.h"
#include "util/testing/status_printer.h"
#include "util/testing/temp_dir.h"

namespace tpufleet::agent {
namespace {

// Waits (at most 10 s) until `done` holds.
template <typename F>
bool WaitFor(F done) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) {
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

size_t Lines(const std::string& path) {
  Result<std::string> text = ReadFile(path);
  return text.ok() ? Split(std::string(Trim(*text)), '\n').size() : 0;
}

// Supervise's loop in a child process of its own (it blocks signals), on `argv`.
pid_t StartSupervise(const std::vector<std::string>& argv, const std::string& pid_file) {
  pid_t pid = fork();
  if (pid == 0) {
    _exit(Supervise(argv, pid_file, std::chrono::milliseconds(10)));
  }
  return pid;
}

int WaitExit(pid_t pid) {
  int status = 0;
  for (int i = 0; i < 200; ++i) {
    if (waitpid(pid, &status, WNOHANG) == pid) {
      return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  kill(pid, SIGKILL);
  waitpid(pid, &status, 0);
  return -1;  // still running after 10 s
}

TEST(InstallFiles, PutsTheBinaryTheUnitAndTheBootLinkUnderTheRoot) {
  TempDir dir;
  std::string self = dir.Write("upload/tpufleet-agent.tmp", "agent v2 bytes");
  InstallPaths paths{dir.Path("root")};
  ASSERT_EQ(InstallFiles(paths, self), Status::Ok());

  EXPECT_EQ(ReadFile(dir.Path("root/usr/local/bin/tpufleet-agent")).value(), "agent v2 bytes");
  struct stat st{};
  ASSERT_EQ(stat(paths.Binary().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0755u);
  std::string unit = ReadFile(dir.Path("root/etc/systemd/system/tpufleet-agent.service")).value();
  EXPECT_NE(unit.find("ExecStart=/usr/local/bin/tpufleet-agent serve\n"), std::string::npos);
  EXPECT_NE(unit.find("Restart=always\n"), std::string::npos);
  EXPECT_NE(unit.find("KillMode=process\n"), std::string::npos);
  EXPECT_NE(unit.find("WantedBy=multi-user.target\n"), std::string::npos);
  char target[256] = {};
  ASSERT_GT(readlink(paths.WantsLink().c_str(), target, sizeof(target) - 1), 0);
  EXPECT_STREQ(target, "/etc/systemd/system/tpufleet-agent.service");
}

TEST(InstallFiles, APrometheusPortGoesIntoTheUnitsServe) {
  TempDir dir;
  InstallPaths paths{dir.Path("root")};
  ASSERT_EQ(InstallFiles(paths, dir.Write("a", "agent"), {.prometheus_port = 9100}), Status::Ok());
  std::string unit = ReadFile(paths.Unit()).value();
  EXPECT_NE(unit.find("\nExecStart=/usr/local/bin/tpufleet-agent serve --prometheus 0.0.0.0:9100\n"),
            std::string::npos)
      << unit;
  EXPECT_EQ(ServeArgs({.prometheus_port = 9100}),
            (std::vector<std::string>{"serve", "--prometheus", "0.0.0.0:9100"}));
  EXPECT_EQ(ServeArgs({}), (std::vector<std::string>{"serve"}));
  // And out again with the next install that has none.
  ASSERT_EQ(InstallFiles(paths, dir.Write("b", "agent")), Status::Ok());
  EXPECT_EQ(ReadFile(paths.Unit()).value().find("--prometheus"), std::string::npos);
}

TEST(InstallMain, ABadPrometheusPortIsAUsageError) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"--prometheus", "web"}, {"--prometheus", "0"},
        {"--prometheus", "65536"}, {"--prometheus"}, {"extra"}, {"--port", "9100"}}) {
    ::testing::internal::CaptureStderr();
    EXPECT_EQ(InstallMain(args), kExitUsage) << args.front();
    std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_NE(err.find("usage: tpufleet-agent install [--prometheus PORT]"), std::string::npos)
        << err;
  }
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(SuperviseMain({"--prometheus", "web"}), kExitUsage);
  EXPECT_NE(::testing::internal::GetCapturedStderr().find(
                "supervise: --prometheus: expected a TCP port from 1 to 65535, not web"),
            std::string::npos);
}

TEST(InstallFiles, ReplacesAnOlderInstall) {
  TempDir dir;
  InstallPaths paths{dir.Path("root")};
  ASSERT_EQ(InstallFiles(paths, dir.Write("a", "old agent")), Status::Ok());
  ASSERT_EQ(InstallFiles(paths, dir.Write("b", "new agent")), Status::Ok());
  EXPECT_EQ(ReadFile(paths.Binary()).value(), "new agent");
  EXPECT_EQ(ListDirectory(dir.Path("root/usr/local/bin")).size(), 1u);  // no temp file left
}

TEST(InstallFiles, SaysWhatIsMissing) {
  TempDir dir;
  Status s = InstallFiles(InstallPaths{dir.Path("root")}, dir.Path("no-such-upload"));
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_NE(s.message().find("no-such-upload"), std::string::npos) << s.message();
}

TEST(Supervise, StartsItsProgramAgainWhenItDies) {
  TempDir dir;
  std::string runs = dir.Path("runs");
  pid_t pid = StartSupervise({"/bin/sh", "-c", "echo run >> " + runs + "; exit 1"},
                             dir.Path("run/supervise.pid"));
  EXPECT_TRUE(WaitFor([&] { return Lines(runs) >= 3; })) << Lines(runs) << " runs";
  EXPECT_EQ(ReadFile(dir.Path("run/supervise.pid")).value(), std::to_string(pid) + "\n");
  kill(pid, SIGTERM);
  EXPECT_EQ(WaitExit(pid), 0);
}

TEST(Supervise, PassesTermOnAndExitsWithIt) {
  TempDir dir;
  std::string log = dir.Path("log");
  pid_t pid = StartSupervise(
      {"/bin/sh", "-c",
       "trap 'echo got TERM >> " + log + "; exit 0' TERM; echo up >> " + log +
           "; while :; do sleep 0.05; done"},
      dir.Path("supervise.pid"));
  ASSERT_TRUE(WaitFor([&] { return Lines(log) >= 1; }));
  kill(pid, SIGTERM);
  EXPECT_EQ(WaitExit(pid), 0);
  EXPECT_EQ(ReadFile(log).value(), "up\ngot TERM\n");
}

TEST(Supervise, ExitsWhenANewerInstallTookItsPlace) {
  TempDir dir;
  std::string log = dir.Path("log");
  std::string pid_file = dir.Path("supervise.pid");
  pid_t pid = StartSupervise(
      {"/bin/sh", "-c",
       "trap 'echo stopped >> " + log + "; exit 0' TERM; echo up >> " + log +
           "; while :; do sleep 0.05; done"},
      pid_file);
  ASSERT_TRUE(WaitFor([&] { return Lines(log) >= 1; }));
  ASSERT_EQ(WriteFileAtomic(pid_file, "1\n"), Status::Ok());  // another supervise's
  // It notices within kSupervisePidCheck, stops its program and exits.
  EXPECT_EQ(WaitExit(pid), 0);
  EXPECT_EQ(ReadFile(log).value(), "up\nstopped\n");
}

}  // namespace
}  // namespace tpufleet::agent
