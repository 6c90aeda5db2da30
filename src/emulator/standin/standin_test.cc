// The stand-in's logic without a worker: its flags, libtpu's lock rules, chips found in
// a sysfs tree made in a temp dir, and the metrics it reports, served as it serves them
// and read with the agent's client over loopback gRPC. Its behaviour on a real worker
// (the lock, refusals, crash, orphan) is in emulator/hosts' system tests.
#include "emulator/standin/standin.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <map>

#include "emulator/standin/standin_metrics.h"
#include "tpu_metrics/runtime_metrics_client.h"
#include "util/file.h"

namespace tpufleet::emulator::standin {
namespace {

namespace fs = std::filesystem;

TEST(StandinArgs, ModesStepsAndCheckpoints) {
  Result<StandinOptions> o = ParseStandinArgs(
      {"--input-bound", "--steps", "30", "--checkpoint-dir", "/tmp/ck", "--checkpoint-every", "5",
       "--crash-after", "1.5", "--duty-cycle", "12.5", "--hbm-gib", "3", "--hbm-bandwidth", "7.5",
       "--hlo-queue", "0"});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->mode, Mode::kInputBound);
  EXPECT_EQ(o->steps, 30);
  EXPECT_EQ(o->checkpoint_dir, "/tmp/ck");
  EXPECT_EQ(o->checkpoint_every, 5);
  EXPECT_EQ(o->crash_after, std::chrono::milliseconds(1500));
  EXPECT_EQ(o->duty_cycle, 12.5);
  EXPECT_EQ(o->hbm_gib, 3);
  EXPECT_EQ(o->hbm_bandwidth, 7.5);
  EXPECT_EQ(o->hlo_queue, 0);
  EXPECT_EQ(ParseStandinArgs({})->mode, Mode::kBurn);
}

TEST(StandinArgs, BadInputGetsOneMessage) {
  EXPECT_EQ(ParseStandinArgs({"--idle", "--burn"}).status().message(),
            "give one of --burn, --idle and --input-bound");
  EXPECT_EQ(ParseStandinArgs({"--steps", "0"}).status().message(),
            "--steps expects a whole number above 0, got '0'");
  EXPECT_EQ(ParseStandinArgs({"--steps"}).status().message(), "--steps needs a value");
  EXPECT_EQ(ParseStandinArgs({"--duty-cycle", "120"}).status().message(),
            "--duty-cycle expects a number from 0 to 100, got '120'");
  EXPECT_EQ(ParseStandinArgs({"--fast"}).status().message(), "unknown argument '--fast'");
  EXPECT_EQ(ParseStandinArgs({"--hlo-queue", "1.5"}).status().message(),
            "--hlo-queue expects a whole number from 0 to 1000, got '1.5'");
  EXPECT_EQ(ParseStandinArgs({"--hbm-bandwidth", "-1"}).status().message(),
            "--hbm-bandwidth expects a number from 0 to 100, got '-1'");
}

// What a job restarted by `tpufleet serve` is told (the agent sets TPUFLEET_RESTARTS only
// from the first restart on).
TEST(StandinArgs, RestartsComeFromTheEnvironment) {
  EXPECT_EQ(ParseRestarts(std::nullopt).value(), 0);
  EXPECT_EQ(ParseRestarts("0").value(), 0);
  EXPECT_EQ(ParseRestarts("3").value(), 3);
  EXPECT_EQ(ParseRestarts("-1").status().message(),
            "TPUFLEET_RESTARTS expects a count of restarts (0, 1, …), got '-1'");
  EXPECT_EQ(ParseRestarts("two").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseRestarts("").status().code(), StatusCode::kInvalidArgument);
}

EnvLookup Env(std::map<std::string, std::string> env) {
  return [env](const char* name) -> std::optional<std::string> {
    auto it = env.find(name);
    return it == env.end() ? std::nullopt : std::optional<std::string>(it->second);
  };
}

LockDecision Decide(const std::map<std::string, std::string>& env) {
  return DecideLibtpuLock(Env(env));
}

TEST(LibtpuLock, TheEnvironmentDecidesAsLibtpuDoes) {
  EXPECT_EQ(Decide({}).policy, LockPolicy::kTake);
  EXPECT_EQ(Decide({{"TPU_LOAD_LIBRARY", "0"}}).policy, LockPolicy::kRefuseToLoad);
  EXPECT_EQ(Decide({{"TPU_LOAD_LIBRARY", "1"}}).policy, LockPolicy::kSkip);
  EXPECT_EQ(Decide({{"ALLOW_MULTIPLE_LIBTPU_LOAD", "true"}}).policy, LockPolicy::kSkip);
  EXPECT_EQ(Decide({{"ALLOW_MULTIPLE_LIBTPU_LOAD", "0"}}).policy, LockPolicy::kTake);
  // A subset of the chips: no lock; the whole 2x2 host: the lock.
  LockDecision subset = Decide({{"TPU_CHIPS_PER_PROCESS_BOUNDS", "1,1,1"}});
  EXPECT_EQ(subset.policy, LockPolicy::kSkip);
  EXPECT_EQ(subset.why, "TPU_CHIPS_PER_PROCESS_BOUNDS=1,1,1 (a subset of the chips)");
  EXPECT_EQ(Decide({{"TPU_CHIPS_PER_PROCESS_BOUNDS", "2,2,1"}}).policy, LockPolicy::kTake);
  EXPECT_EQ(Decide({{"TPU_CHIPS_PER_HOST_BOUNDS", "1,2,1"}}).policy, LockPolicy::kSkip);
  // The process bounds win over the older host bounds.
  EXPECT_EQ(Decide({{"TPU_CHIPS_PER_PROCESS_BOUNDS", "2,2,1"}, {"TPU_CHIPS_PER_HOST_BOUNDS", "1,1,1"}})
                .policy,
            LockPolicy::kTake);
}

TEST(LibtpuLock, ASecondLockInThisProcessFamilyIsRefusedWithoutAHolder) {
  std::string path = testing::TempDir() + "/libtpu_lockfile_" + std::to_string(::getpid());
  Result<UniqueFd> first = TakeLibtpuLock(path, "/dev/accel-none");
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  struct stat st;
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  // lockf locks belong to a process: a child asks, as a second program would.
  pid_t child = ::fork();
  if (child == 0) {
    Result<UniqueFd> second = TakeLibtpuLock(path, "/dev/accel-none");
    bool ok = !second.ok() && second.status().message().find(
                                  "Internal error when accessing libtpu multi-process lockfile") == 0;
    ::_exit(ok ? 0 : 1);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  ::unlink(path.c_str());
}

// A sysfs devices directory with these functions: address -> {vendor, device, group}.
std::string MakeSysfs(const std::map<std::string, std::vector<std::string>>& functions) {
  std::string dir = testing::TempDir() + "/pci_" + std::to_string(::getpid());
  fs::remove_all(dir);
  for (const auto& [address, f] : functions) {
    fs::create_directories(dir + "/" + address);
    EXPECT_TRUE(WriteFileAtomic(dir + "/" + address + "/vendor", f[0] + "\n").ok());
    EXPECT_TRUE(WriteFileAtomic(dir + "/" + address + "/device", f[1] + "\n").ok());
    if (f.size() > 2) {
      fs::create_symlink("../../../kernel/iommu_groups/" + f[2], dir + "/" + address + "/iommu_group");
    }
  }
  return dir;
}

TEST(Chips, FoundBySysfsAsLibtpuFindsThem) {
  std::string dir = MakeSysfs({{"0000:00:04.0", {"0x1ae0", "0x0063", "11"}},
                               {"0000:00:05.0", {"0x1ae0", "0x0063", "12"}},
                               {"0000:00:03.0", {"0x1af4", "0x1000"}},     // virtio-net
                               {"0000:00:06.0", {"0x1ae0", "0x0042"}}});  // gVNIC
  std::vector<Chip> chips = FindChips(dir);
  ASSERT_EQ(chips.size(), 2u);
  EXPECT_EQ(chips[0].pci_address, "0000:00:04.0");
  EXPECT_EQ(chips[0].node, "/dev/vfio/11");
  EXPECT_EQ(chips[1].node, "/dev/vfio/12");
  EXPECT_EQ(chips[1].family, "v5litepod");
  fs::remove_all(dir);

  dir = MakeSysfs({{"0000:00:04.0", {"0x1ae0", "0x005e"}}, {"0000:00:05.0", {"0x1ae0", "0x005e"}}});
  chips = FindChips(dir);
  ASSERT_EQ(chips.size(), 2u);
  EXPECT_EQ(chips[1].node, "/dev/accel1");
  EXPECT_EQ(chips[1].hbm_gib, 32);
  fs::remove_all(dir);
}

TEST(Metrics, WhatTheProgramIsToldOrItsModesDefault) {
  Chip v4;
  v4.index = 2;
  v4.hbm_gib = 32;
  StandinOptions burn;
  tpu_metrics::RuntimeChipMetrics m = MetricsFor(burn, {v4}, std::chrono::seconds(100))[0];
  EXPECT_EQ(m.device_id, 2);
  EXPECT_EQ(m.duty_cycle_percent, 95);
  EXPECT_EQ(m.hbm_total_bytes, int64_t{32} << 30);
  EXPECT_EQ(m.hbm_usage_bytes, int64_t{16} << 30);
  EXPECT_EQ(m.hbm_bandwidth_percent, 45);
  EXPECT_EQ(m.hlo_queue, 2);  // programs wait their turn
  EXPECT_NEAR(*m.idle_seconds, 5, 1e-9);  // idle 5 % of 100 s
  StandinOptions told;
  told.mode = Mode::kInputBound;
  told.duty_cycle = 7;
  told.hbm_gib = 64;  // more than the chip has: capped
  told.hbm_bandwidth = 1.5;
  m = MetricsFor(told, {v4}, std::chrono::seconds(10))[0];
  EXPECT_EQ(m.duty_cycle_percent, 7);
  EXPECT_EQ(m.hbm_usage_bytes, m.hbm_total_bytes);
  EXPECT_EQ(m.hbm_bandwidth_percent, 1.5);
  EXPECT_EQ(m.hlo_queue, 0);  // the host cannot feed it
  EXPECT_NEAR(*m.idle_seconds, 9.3, 1e-9);
  StandinOptions idle;
  idle.mode = Mode::kIdle;
  m = MetricsFor(idle, {v4}, std::chrono::seconds(60))[0];
  EXPECT_EQ(m.duty_cycle_percent, 0);
  EXPECT_EQ(m.hbm_usage_bytes, 0);
  EXPECT_EQ(m.hlo_queue, 0);
  EXPECT_EQ(m.idle_seconds, 60);
}

TEST(Metrics, ServedOnTheFirstPortOfTheJobElse8431) {
  EXPECT_EQ(*MetricsPortFor(Env({})), 8431);
  EXPECT_EQ(*MetricsPortFor(Env({{"TPU_RUNTIME_METRICS_PORTS", ""}})), 8431);
  EXPECT_EQ(*MetricsPortFor(Env({{"TPU_RUNTIME_METRICS_PORTS", " 8433,8434"}})), 8433);
  EXPECT_EQ(MetricsPortFor(Env({{"TPU_RUNTIME_METRICS_PORTS", "x,8434"}})).status().message(),
            "TPU_RUNTIME_METRICS_PORTS=x,8434: 'x' is not a port (1-65535)");
}

// What the program serves, read as the agent reads it: two v5p chips, input-bound.
TEST(Metrics, TheAgentsClientReadsWhatTheProgramServes) {
  std::vector<Chip> chips(2);
  chips[1].index = 1;
  for (Chip& c : chips) {
    c.hbm_gib = 95;
  }
  StandinOptions o;
  o.mode = Mode::kInputBound;
  o.duty_cycle = 4;
  Result<std::unique_ptr<tpu_metrics::RuntimeMetricsServer>> server = ServeMetrics(o, chips, 0);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  tpu_metrics::RuntimeMetricsClient client;
  Result<std::vector<tpu_metrics::RuntimeChipMetrics>> read =
      client.Read((*server)->port(), std::chrono::seconds(5));
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  ASSERT_EQ(read->size(), 2u);
  for (int i = 0; i < 2; ++i) {
    const tpu_metrics::RuntimeChipMetrics& m = (*read)[static_cast<size_t>(i)];
    EXPECT_EQ(m.device_id, i);
    EXPECT_EQ(m.duty_cycle_percent, 4);
    EXPECT_EQ(m.hbm_usage_bytes, int64_t{95} << 29);  // half of 95 GiB
    EXPECT_EQ(m.hbm_total_bytes, int64_t{95} << 30);
    EXPECT_EQ(m.hbm_bandwidth_percent, 3);
    EXPECT_EQ(m.hlo_queue, 0);
    EXPECT_GE(m.idle_seconds, 0);
    EXPECT_LT(m.idle_seconds, 60);
  }
  // A second program on the same port is refused.
  Result<std::unique_ptr<tpu_metrics::RuntimeMetricsServer>> second =
      ServeMetrics(o, chips, (*server)->port());
  EXPECT_EQ(second.status().code(), StatusCode::kUnavailable);
}

}  // namespace
}  // namespace tpufleet::emulator::standin
