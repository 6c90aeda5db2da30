#include "agent/sampler/proc_parsers.h"

#include <gtest/gtest.h>
#include <utmp.h>

#include <cstring>

namespace tpufleet::agent::sampler {
namespace {

TEST(ProcStat, SumsBusyTicksAndCountsOnlineCpus) {
  std::optional<CpuTimes> t = ParseProcStat(
      "cpu  100 5 50 1000 20 3 2 1 7 0\n"
      "cpu0 50 2 25 500 10 1 1 0 0 0\n"
      "cpu1 50 3 25 500 10 2 1 1 0 0\n"
      "intr 12345 0 0\n"
      "ctxt 999\n");
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->busy, 100u + 5 + 50 + 3 + 2 + 1);  // guest (7) is inside user already
  EXPECT_EQ(t->total, t->busy + 1000 + 20);
  EXPECT_EQ(t->cpus, 2);
  EXPECT_FALSE(ParseProcStat("cpu  1 2 3\n").has_value());
  EXPECT_FALSE(ParseProcStat("").has_value());
}

TEST(Meminfo, TotalAndAvailableInBytes) {
  std::optional<MemInfo> m = ParseMeminfo(
      "MemTotal:       16384000 kB\n"
      "MemFree:         1000000 kB\n"
      "MemAvailable:    4096000 kB\n"
      "Buffers:          100 kB\n");
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->total_bytes, int64_t{16384000} * 1024);
  EXPECT_EQ(m->available_bytes, int64_t{4096000} * 1024);
  EXPECT_FALSE(ParseMeminfo("MemTotal: 5 kB\n").has_value());  // a 3.13 kernel: no estimate
}

TEST(Diskstats, WholeDisksOnlyIn512ByteSectors) {
  const char* text =
      " 253       0 vda 1000 10 8000 500 2000 20 16000 900 0 800 1400 0 0 0 0\n"
      " 253       1 vda1 900 10 7000 400 1900 20 15000 800 0 700 1200 0 0 0 0\n"
      "   7       0 loop0 50 0 400 10 0 0 0 0 0 5 10 0 0 0 0\n"
      " 259       0 nvme0n1 10 0 100 1 20 0 200 2 0 3 3\n"
      "garbage\n";
  DeviceIo t = ParseDiskstats(text, {"vda", "nvme0n1"});
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t["vda"].read_bytes, 8000u * 512);
  EXPECT_EQ(t["vda"].write_bytes, 16000u * 512);
  EXPECT_EQ(t["nvme0n1"].read_bytes, 100u * 512);
  EXPECT_EQ(t["nvme0n1"].write_bytes, 200u * 512);
  EXPECT_TRUE(ParseDiskstats(text, {}).empty());
}

TEST(NetDev, EveryInterfaceButLoopback) {
  DeviceIo t = ParseNetDev(
      "Inter-|   Receive                                                |  Transmit\n"
      " face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n"
      "    lo: 5000      50    0    0    0     0          0         0     5000      50    0    0    0     0       0          0\n"
      "  eth0:1234567    100    0    0    0     0          0         0   765432      90    0    0    0     0       0          0\n"
      "  ens5: 10 1 0 0 0 0 0 0 20 2 0 0 0 0 0 0\n");
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t["eth0"].read_bytes, 1234567u);
  EXPECT_EQ(t["eth0"].write_bytes, 765432u);
  EXPECT_EQ(t["ens5"].read_bytes, 10u);
  EXPECT_EQ(t["ens5"].write_bytes, 20u);
}

TEST(PidStat, FieldsAfterTheLastParenthesis) {
  // A command name with spaces and a ')' of its own.
  std::optional<PidStat> s = ParsePidStat(
      "4242 (py thon) x) R 4200 4242 4100 0 -1 4194304 500 0 0 0 "
      "1500 250 30 12 20 0 3 0 98765 123456789 2560 18446744073709551615 1 1 0 0 0 0 0 0 0 "
      "0 0 0 17 1 0 0 0 0 0\n");
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->session, 4100);
  EXPECT_EQ(s->cpu_ticks, 1750u);
  EXPECT_EQ(s->child_ticks, 42u);
  EXPECT_EQ(s->start_ticks, 98765u);
  EXPECT_EQ(s->rss_pages, 2560);
  EXPECT_FALSE(ParsePidStat("4242 (short) R 1 2 3").has_value());
  EXPECT_FALSE(ParsePidStat("no parenthesis").has_value());
}

TEST(CpuMax, QuotaOverPeriodOrNone) {
  EXPECT_EQ(ParseSchedstatWanted("1204376 16344421 2\n"), uint64_t{17548797});
  EXPECT_EQ(ParseSchedstatWanted("12 34\n"), std::nullopt);
  EXPECT_EQ(ParseSchedstatWanted("a b c"), std::nullopt);
  EXPECT_EQ(ParseCpuMax("150000 100000\n"), 1.5);
  EXPECT_EQ(ParseCpuMax("max 100000\n"), std::nullopt);
  EXPECT_EQ(ParseCpuMax(""), std::nullopt);
  EXPECT_EQ(ParseCpuMax("-1 100000"), std::nullopt);
}

TEST(Cgroup, TheUnifiedHierarchysLine) {
  EXPECT_EQ(ParseUnifiedCgroup("0::/system.slice/tpufleet-agent.service\n"),
            "/system.slice/tpufleet-agent.service");
  EXPECT_EQ(ParseUnifiedCgroup("4:memory:/x\n1:cpu:/\n0::/\n"), "/");
  EXPECT_EQ(ParseUnifiedCgroup("4:memory:/x\n1:cpu:/\n"), std::nullopt);
}

TEST(Utmp, UserProcessRecordsOnly) {
  auto record = [](short type, pid_t pid, const char* user) {
    utmp u;
    std::memset(&u, 0, sizeof u);
    u.ut_type = type;
    u.ut_pid = pid;
    std::strncpy(u.ut_user, user, sizeof u.ut_user - 1);
    return std::string(reinterpret_cast<const char*>(&u), sizeof u);
  };
  std::string bytes = record(BOOT_TIME, 0, "reboot") + record(USER_PROCESS, 4001, "alice") +
                      record(DEAD_PROCESS, 4002, "") + record(LOGIN_PROCESS, 4003, "LOGIN") +
                      record(USER_PROCESS, 4004, "bob") + "torn";
  EXPECT_EQ(ParseUtmpLogins(bytes), (std::vector<pid_t>{4001, 4004}));
  EXPECT_TRUE(ParseUtmpLogins("").empty());
}

}  // namespace
}  // namespace tpufleet::agent::sampler
