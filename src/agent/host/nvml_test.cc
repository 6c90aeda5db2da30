#include "agent/host/nvml.h"

#include <gnu/libc-version.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include "util/subprocess.h"
#include "util/testing/temp_dir.h"

namespace tpufleet::agent::host {
namespace {

// The stand-in library (testing/nvml_standin.c) answers what this file says.
class NvmlTest : public ::testing::Test {
 protected:
  void Tell(const std::string& facts) {
    ::setenv("TPUFLEET_NVML_STANDIN", dir_.Write("nvml.txt", facts).c_str(), 1);
  }
  void TearDown() override { ::unsetenv("TPUFLEET_NVML_STANDIN"); }
  static std::unique_ptr<Nvml> OpenStandin() { return Nvml::Open({.library = NVML_STANDIN}); }

  TempDir dir_;
};

constexpr int64_t kGiB = int64_t{1} << 30;

TEST_F(NvmlTest, ReadsEveryNumberOfTwoGpus) {
  Tell("init 0\n"
       "gpu 37 12 " + std::to_string(30 * kGiB) + " " + std::to_string(80 * kGiB) + " 0 4242\n"
       "gpu 80 65 " + std::to_string(70 * kGiB) + " " + std::to_string(80 * kGiB) +
       " 3 700,600,700\n");
  std::unique_ptr<Nvml> nvml = OpenStandin();
  ASSERT_TRUE(nvml->ok()) << nvml->reason();
  EXPECT_EQ(nvml->reason(), "");
  EXPECT_EQ(nvml->library(), NVML_STANDIN);
  Result<std::vector<ChipSample>> chips = nvml->Read();
  ASSERT_TRUE(chips.ok()) << chips.status().ToString();
  ASSERT_EQ(chips->size(), 2u);
  const ChipSample& a = (*chips)[0];
  EXPECT_EQ(a.index, 0);
  EXPECT_EQ(a.kind, "gpu");
  EXPECT_EQ(a.device, "/dev/nvidia0");
  EXPECT_EQ(a.duty_cycle_percent, 37);
  EXPECT_EQ(a.hbm_bandwidth_percent, 12);
  EXPECT_EQ(a.hbm_used_bytes, 30 * kGiB);
  EXPECT_EQ(a.hbm_total_bytes, 80 * kGiB);
  ASSERT_EQ(a.holders.size(), 1u);
  EXPECT_EQ(a.holders[0].pid, 4242);
  EXPECT_EQ(a.idle_seconds, std::nullopt);  // TPU-only measurements stay absent
  EXPECT_EQ(a.hlo_queue, std::nullopt);
  const ChipSample& b = (*chips)[1];
  EXPECT_EQ(b.index, 1);
  EXPECT_EQ(b.device, "/dev/nvidia3");  // the node is named by the minor number
  EXPECT_EQ(b.duty_cycle_percent, 80);
  EXPECT_EQ(b.hbm_bandwidth_percent, 65);
  EXPECT_EQ(b.hbm_used_bytes, 70 * kGiB);
  EXPECT_EQ(b.hbm_total_bytes, 80 * kGiB);
  ASSERT_EQ(b.holders.size(), 2u);  // a pid listed twice (MIG instances) is one holder
  EXPECT_EQ(b.holders[0].pid, 600);
  EXPECT_EQ(b.holders[1].pid, 700);
  EXPECT_EQ(b.holders[0].user, "");  // the caller names them
}

TEST_F(NvmlTest, NoGpuIsNoChip) {
  Tell("init 0\n");
  std::unique_ptr<Nvml> nvml = OpenStandin();
  ASSERT_TRUE(nvml->ok()) << nvml->reason();
  Result<std::vector<ChipSample>> chips = nvml->Read();
  ASSERT_TRUE(chips.ok());
  EXPECT_TRUE(chips->empty());
}

TEST_F(NvmlTest, UnsupportedUtilizationIsAbsentAndLateProcessesFitTheSlack) {
  Tell("late 3\n"
       "gpu -1 0 100 200 0 11,12,13,14,15\n");
  std::unique_ptr<Nvml> nvml = OpenStandin();
  ASSERT_TRUE(nvml->ok()) << nvml->reason();
  Result<std::vector<ChipSample>> chips = nvml->Read();
  ASSERT_TRUE(chips.ok());
  ASSERT_EQ(chips->size(), 1u);
  const ChipSample& c = (*chips)[0];
  EXPECT_EQ(c.duty_cycle_percent, std::nullopt);  // a MIG GPU: not supported
  EXPECT_EQ(c.hbm_bandwidth_percent, std::nullopt);
  EXPECT_EQ(c.hbm_used_bytes, 100);
  std::vector<int> pids;
  for (const ChipHolder& h : c.holders) {
    pids.push_back(h.pid);
  }
  // The count said 2; the list call, with room to spare, got all 5.
  EXPECT_EQ(pids, (std::vector<int>{11, 12, 13, 14, 15}));
}

TEST_F(NvmlTest, MissingLibraryIsNoGpusWithTheReason) {
  std::unique_ptr<Nvml> nvml = Nvml::Open({.library = dir_.Path("libnvidia-ml.so.1")});
  EXPECT_FALSE(nvml->ok());
  EXPECT_EQ(nvml->reason(), "no GPUs: cannot load NVML: " + dir_.Path("libnvidia-ml.so.1") +
                                ": cannot open shared object file: No such file or directory");
  Result<std::vector<ChipSample>> chips = nvml->Read();
  ASSERT_TRUE(chips.ok());
  EXPECT_TRUE(chips->empty());
}

TEST_F(NvmlTest, LibraryMissingACallIsNoGpusWithTheReason) {
  Tell("gpu 1 1 1 1 0 -\n");
  std::unique_ptr<Nvml> nvml = Nvml::Open({.library = NVML_STANDIN_PARTIAL});
  EXPECT_FALSE(nvml->ok());
  EXPECT_EQ(nvml->reason(), std::string("no GPUs: ") + NVML_STANDIN_PARTIAL +
                                " has no nvmlDeviceGetMemoryInfo (an NVML too old)");
}

TEST_F(NvmlTest, DriverNotLoadedIsNoGpusWithTheReason) {
  Tell("init 9\ngpu 1 1 1 1 0 -\n");
  std::unique_ptr<Nvml> nvml = OpenStandin();
  EXPECT_FALSE(nvml->ok());
  EXPECT_EQ(nvml->reason(),
            "no GPUs: nvmlInit_v2: the NVIDIA driver is not loaded (NVML error 9)");
  Result<std::vector<ChipSample>> chips = nvml->Read();
  ASSERT_TRUE(chips.ok());
  EXPECT_TRUE(chips->empty());
}

TEST_F(NvmlTest, AnotherGlibcOnTheHostIsNoGpusBeforeAnyDlopen) {
  Tell("gpu 1 1 1 1 0 -\n");
  using namespace std::string_literals;
  std::string libc = dir_.Write(
      "libc.so.6",
      "\x7f" "ELF\0\0GNU C Library (Ubuntu GLIBC 2.31-0ubuntu9.9) stable release version 2.31.\n"s);
  std::unique_ptr<Nvml> nvml = Nvml::Open({.library = NVML_STANDIN, .host_libc = libc});
  EXPECT_FALSE(nvml->ok());
  EXPECT_EQ(nvml->reason(), std::string("no GPUs: NVML needs glibc ") + gnu_get_libc_version() +
                                ", this host has 2.31");
  std::string musl = dir_.Write("musl.so", "not a glibc at all");
  EXPECT_EQ(Nvml::Open({.library = NVML_STANDIN, .host_libc = musl})->reason(),
            std::string("no GPUs: NVML needs glibc ") + gnu_get_libc_version() +
                " and this host's cannot be told (" + musl + " names no glibc release)");
}

TEST_F(NvmlTest, NoDriverOnTheHostIsSaidFirst) {
  NvmlOptions o;
  o.driver_dir = dir_.Path("driver/nvidia");
  std::unique_ptr<Nvml> nvml = Nvml::Open(o);
  EXPECT_FALSE(nvml->ok());
  EXPECT_EQ(nvml->reason(), "no GPUs: no NVIDIA driver on this host (no " + o.driver_dir + ")");
}

TEST(GlibcVersion, ReadsTheReleaseLine) {
  EXPECT_EQ(GlibcVersionOf("GNU C Library (Debian GLIBC 2.36-9+deb12u14) stable release "
                           "version 2.36.\nCopyright"),
            "2.36");
  EXPECT_EQ(GlibcVersionOf("… release version 2.39, by Roland McGrath"), "2.39");
  EXPECT_EQ(GlibcVersionOf("musl libc"), "");
  EXPECT_EQ(GlibcVersionOf("release version "), "");
}

// What a static glibc's dlopen does: the probe is linked as the agent is.
TEST_F(NvmlTest, StaticProgramLoadsTheLibraryOnTheSameGlibc) {
  Tell("gpu 37 12 300 800 0 4242\ngpu 80 65 700 800 1 -\n");
  Result<ProgramResult> r =
      RunUserCommand({NVML_STATIC_PROBE, NVML_STANDIN}, "", std::chrono::seconds(30));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->exit_code, 0) << r->output;
  EXPECT_EQ(r->output,
            "gpu 0 /dev/nvidia0 duty=37 bandwidth=12 used=300 total=800 pids=4242\n"
            "gpu 1 /dev/nvidia1 duty=80 bandwidth=65 used=700 total=800 pids=\n");
  std::string libc = dir_.Write("libc.so.6", "GNU C Library stable release version 2.17.");
  r = RunUserCommand({NVML_STATIC_PROBE, NVML_STANDIN, libc}, "", std::chrono::seconds(30));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->output, std::string("no GPUs: NVML needs glibc ") + gnu_get_libc_version() +
                           ", this host has 2.17\n");
  r = RunUserCommand({NVML_STATIC_PROBE, dir_.Path("none.so")}, "", std::chrono::seconds(30));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->output, "no GPUs: cannot load NVML: " + dir_.Path("none.so") +
                           ": cannot open shared object file: No such file or directory\n");
}

}  // namespace
}  // namespace tpufleet::agent::host
