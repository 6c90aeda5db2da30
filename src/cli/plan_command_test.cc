// `tpufleet plan` in-process: which slices fit a model, in devices as JAX sees them.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/testing/run_cli.h"
#include "util/strings.h"

namespace tpufleet::cli {
namespace {

using cli_testing::Contains;
using cli_testing::HasTableRow;
using cli_testing::kCent;
using cli_testing::Output;
using cli_testing::Tpufleet;
using cli_testing::TpufleetJson;
using nlohmann::json;

// ---- plan, as it answered before issue 11: with --shardable (a replica may be split
// over devices) the answers in chips stand; --all lists every fitting size.

std::vector<std::string> PlanTypes(const json& options) {
  std::vector<std::string> types;
  for (const json& o : options) {
    types.push_back(o["type"]);
  }
  return types;
}

bool Lists(const std::vector<std::string>& types, const std::string& type) {
  return std::find(types.begin(), types.end(), type) != types.end();
}

TEST(Plan, ThirtyTwoGibAnd250GibCheapestFirst) {
  Output o = Tpufleet({"plan", "--hbm-gib", "32", "--host-ram-gib", "250", "--shardable"});
  EXPECT_EQ(o.code, 0);
  EXPECT_EQ(o.err, "");
  std::vector<std::string> lines = Split(o.out, '\n');
  ASSERT_GE(lines.size(), 6u);
  EXPECT_EQ(lines[0], "Needs 32 GiB HBM per replica x 1 replica, 250 GiB host RAM per worker.");
  EXPECT_TRUE(StartsWith(lines[2], "TYPE ")) << lines[2];
  // v3-8: 4 chips x $2.00 = $8.00/h, 340 GiB host RAM >= 250.
  EXPECT_TRUE(StartsWith(lines[3], "v3-8 ")) << lines[3];
  EXPECT_TRUE(Contains(lines[3], " 340 GiB ")) << lines[3];
  EXPECT_TRUE(Contains(lines[3], " $8.00")) << lines[3];
  // v5litepod-8: 8 x $1.20 = $9.60/h; 16 GiB chips, so 2 per replica; one VM of 384 GiB.
  EXPECT_TRUE(StartsWith(lines[4], "v5litepod-8 ")) << lines[4];
  EXPECT_TRUE(Contains(lines[4], " 384 GiB ")) << lines[4];
  EXPECT_TRUE(Contains(lines[4], " $9.60")) << lines[4];
  // v6e-4: 4 x $2.70 = $10.80/h, 720 GiB.
  EXPECT_TRUE(StartsWith(lines[5], "v6e-4 ")) << lines[5];
  EXPECT_TRUE(Contains(lines[5], " $10.80")) << lines[5];
  // 192 GiB (v5e 4-chip VMs) and 176 GiB (v6e-1) are too little host RAM.
  for (const char* no : {"v5litepod-4", "v5litepod-16", "v6e-1", "v2-8"}) {
    EXPECT_FALSE(HasTableRow(o.out, no)) << no;
  }
  EXPECT_TRUE(Contains(o.out,
                       "\nFamilies that do not fit:\n"
                       "  v2: host RAM: the catalog has no host RAM figure for v2 workers, so the "
                       "fit cannot be checked\n"))
      << o.out;
}

TEST(Plan, ThirtyTwoGibAnd250GibAsJson) {
  json j = TpufleetJson({"plan", "--hbm-gib", "32", "--host-ram-gib", "250", "--shardable"});
  ASSERT_TRUE(j.is_array());
  ASSERT_GE(j.size(), 3u);
  EXPECT_EQ(j[0]["type"], "v3-8");
  EXPECT_NEAR(j[0]["usd_per_hour"].get<double>(), 8.00, kCent);
  EXPECT_EQ(j[0]["chips_per_replica"], 1);
  EXPECT_EQ(j[0]["host_ram_gib_per_worker"].get<double>(), 340);
  EXPECT_EQ(j[1]["type"], "v5litepod-8");
  EXPECT_NEAR(j[1]["usd_per_hour"].get<double>(), 9.60, kCent);
  EXPECT_EQ(j[1]["chips_per_replica"], 2);
  EXPECT_EQ(j[1]["replicas_that_fit"], 4);
  EXPECT_EQ(j[1]["host_ram_gib_per_worker"].get<double>(), 384);
  EXPECT_EQ(j[2]["type"], "v6e-4");
  EXPECT_NEAR(j[2]["usd_per_hour"].get<double>(), 10.80, kCent);
  std::vector<std::string> types = PlanTypes(j);
  for (const char* no : {"v5litepod-4", "v5litepod-16", "v6e-1", "v2-8"}) {
    EXPECT_FALSE(Lists(types, no)) << no;
  }
  double last = 0;
  for (const json& o : j) {
    if (o["usd_per_hour"].is_null()) {
      continue;  // tpu7x: no published price; listed last
    }
    EXPECT_GE(o["usd_per_hour"].get<double>(), last) << o["type"];
    last = o["usd_per_hour"].get<double>();
    EXPECT_GE(o["host_ram_gib_per_worker"].get<double>(), 250) << o["type"];
  }
}

TEST(Plan, Replicas) {
  // 8 replicas x 32 GiB: 8 v4 chips. v4-16 has 8, v4-8 only 4.
  json j = TpufleetJson({"plan", "--hbm-gib", "32", "--replicas", "8", "--shardable"});
  std::vector<std::string> types = PlanTypes(j);
  EXPECT_TRUE(Lists(types, "v4-16"));
  EXPECT_FALSE(Lists(types, "v4-8"));
  EXPECT_TRUE(Lists(types, "v5litepod-16"));  // 2 chips each: 16
  EXPECT_FALSE(Lists(types, "v5litepod-8"));
  Output o = Tpufleet({"plan", "--hbm-gib", "32", "--replicas", "8", "--shardable"});
  EXPECT_TRUE(StartsWith(o.out,
                         "Needs 32 GiB HBM per replica x 8 replicas, 0 GiB host RAM per "
                         "worker.\n"))
      << o.out;
}

TEST(Plan, ModelTooLargeForEveryFamilyExits1) {
  // 2,000,000 GiB: more than tpu7x-16384 holds (16384 devices of 96 GiB).
  Output o = Tpufleet({"plan", "--hbm-gib", "2000000", "--shardable"});
  EXPECT_EQ(o.code, 1);
  EXPECT_TRUE(Contains(o.out, "\nNo type fits.\n")) << o.out;
  for (const char* family : {"v2", "v3", "v4", "v5litepod", "v5p", "v6e", "tpu7x"}) {
    EXPECT_TRUE(Contains(o.out, std::string("\n  ") + family + ": HBM: needs ")) << family;
  }
  // 2,000,000 GiB / 32 GiB = 62,500 devices (one per v4 chip); the largest v4 slice has 2048.
  EXPECT_TRUE(Contains(o.out,
                       "  v4: HBM: needs 62500 devices of 32 GiB (62500 per replica x 1); the "
                       "largest slice, v4-4096, has 2048\n"))
      << o.out;
  // Without --shardable a replica must fit one device, and 2,000,000 GiB fits none.
  Output whole = Tpufleet({"plan", "--hbm-gib", "2000000"});
  EXPECT_EQ(whole.code, 1);
  EXPECT_TRUE(Contains(whole.out, "  v4: HBM: one replica needs 2000000 GiB and a v4 device"))
      << whole.out;
}

// With --json, a plan with no fit printed [] and exited 0, unlike the text output.
TEST(PlanRegression, NoFitExits1WithJsonToo) {
  Output o = Tpufleet({"plan", "--hbm-gib", "2000000", "--shardable", "--json"});
  EXPECT_EQ(o.code, 1);
  EXPECT_EQ(json::parse(o.out), json::array());
}

// A huge --hbm-gib overflowed int and every family "fit" with one chip. Since issue 11
// the flag is bounded; the largest it takes still fits nothing.
TEST(PlanRegression, HugeHbmFitsNothing) {
  Output o = Tpufleet({"plan", "--hbm-gib", "10485760", "--shardable"});
  EXPECT_EQ(o.code, 1);
  EXPECT_TRUE(Contains(o.out, "\nNo type fits.\n")) << o.out;
  Output huge = Tpufleet({"plan", "--hbm-gib", "1e300", "--shardable"});
  EXPECT_EQ(huge.code, 2);
  EXPECT_EQ(huge.err, "tpufleet: --hbm-gib expects a number of at most 10485760, got '1e300'\n");
}

TEST(Plan, PriceCeiling) {
  Output o = Tpufleet({"plan", "--hbm-gib", "32", "--max-usd-per-hour", "5", "--shardable"});
  EXPECT_EQ(o.code, 0);
  EXPECT_TRUE(StartsWith(o.out,
                         "Needs 32 GiB HBM per replica x 1 replica, 0 GiB host RAM per "
                         "worker, at most $5.00/h.\n"))
      << o.out;
  // Under $5: v6e-1 (1 x 2.70) and v5litepod-4 (4 x 1.20 = 4.80).
  EXPECT_TRUE(HasTableRow(o.out, "v6e-1"));
  EXPECT_TRUE(HasTableRow(o.out, "v5litepod-4"));
  EXPECT_FALSE(HasTableRow(o.out, "v3-8"));
  EXPECT_TRUE(Contains(o.out,
                       "  v3: price: the cheapest fit, v3-8, costs $8.00/h, above the "
                       "limit of $5.00/h\n"))
      << o.out;
  EXPECT_TRUE(Contains(o.out, "  v4: price: the cheapest fit, v4-8, costs $12.88/h")) << o.out;
  EXPECT_TRUE(Contains(o.out, "  v5p: price: the cheapest fit, v5p-8, costs $16.80/h")) << o.out;
  json j = TpufleetJson({"plan", "--hbm-gib", "32", "--max-usd-per-hour", "5", "--shardable"});
  EXPECT_EQ(PlanTypes(j), (std::vector<std::string>{"v6e-1", "v5litepod-4"}));
}


// ---- Issue 11: plan in devices as the framework sees them.

// The user's report: GenCast needs 29.8 GiB per replica and cannot shard one, and plan
// offered v3-8 (4 chips of 32 GiB) as the cheapest fit, but JAX sees a v3-8 as 8 devices
// of 16 GiB.
TEST(Issue11, GenCastIsNotOfferedV2OrV3WithoutShardable) {
  Output o = Tpufleet({"plan", "--hbm-gib", "29.8"});
  EXPECT_EQ(o.code, 0) << o.err;
  for (const std::string& line : Split(o.out, '\n')) {
    EXPECT_FALSE(StartsWith(line, "v3-") || StartsWith(line, "v2-") ||
                 StartsWith(line, "v5litepod-"))
        << line;
  }
  EXPECT_TRUE(HasTableRow(o.out, "v6e-1"));
  EXPECT_TRUE(Contains(o.out, "TYPE     CHIPS  DEVICES     WORKERS  LAYOUT ")) << o.out;
  EXPECT_TRUE(Contains(o.out, "v4-8     4      4 x 32 GiB  1        1 replica per device  4 "))
      << o.out;
  EXPECT_TRUE(Contains(o.out,
                       "\n  v3: HBM: one replica needs 29.8 GiB and a v3 device (one TensorCore; 2 "
                       "per chip) has 16 GiB, as JAX sees it;"))
      << o.out;
  EXPECT_TRUE(Contains(o.out, "A replica is not split over devices; --shardable allows it.\n"))
      << o.out;
  json j = TpufleetJson({"plan", "--hbm-gib", "29.8"});
  for (const json& row : j) {
    EXPECT_NE(row["family"], "v3") << row["type"];
    EXPECT_NE(row["family"], "v2") << row["type"];
    EXPECT_EQ(row["layout"], "1 replica per device") << row["type"];
    EXPECT_EQ(row["sharded"], false) << row["type"];
  }
}

TEST(Issue11, ShardableLaysOneReplicaOverSeveralDevices) {
  Output o = Tpufleet({"plan", "--hbm-gib", "29.8", "--shardable"});
  EXPECT_EQ(o.code, 0) << o.err;
  EXPECT_TRUE(Contains(o.out, "v3-8         4      8 x 16 GiB  1        1 replica on 2 devices "
                              "(sharded)  4 "))
      << o.out;
  json j = TpufleetJson({"plan", "--hbm-gib", "29.8", "--shardable"});
  bool saw_v3 = false;
  for (const json& row : j) {
    if (row["type"] == "v3-8") {
      saw_v3 = true;
      EXPECT_EQ(row["devices"], 8);
      EXPECT_EQ(row["devices_per_chip"], 2);
      EXPECT_EQ(row["hbm_gib_per_device"].get<double>(), 16);
      EXPECT_EQ(row["devices_per_replica"], 2);
      EXPECT_EQ(row["chips_per_replica"], 1);
      EXPECT_EQ(row["sharded"], true);
      EXPECT_EQ(row["layout"], "1 replica on 2 devices (sharded)");
      EXPECT_EQ(row["replicas_that_fit"], 4);
      EXPECT_NEAR(row["usd_per_hour"].get<double>(), 8.00, kCent);
    }
  }
  EXPECT_TRUE(saw_v3);
}

// `--replicas 8` listed 33 sizes from v6e-8 to v5p-12288: now the smallest of each family.
TEST(Issue11, SmallestSliceOfEachFamilyAndTheRestWithAll) {
  Output o = Tpufleet({"plan", "--hbm-gib", "29.8", "--replicas", "8"});
  EXPECT_EQ(o.code, 0) << o.err;
  json j = TpufleetJson({"plan", "--hbm-gib", "29.8", "--replicas", "8"});
  EXPECT_EQ(PlanTypes(j), (std::vector<std::string>{"v6e-8", "v4-16", "v5p-16", "tpu7x-8"}));
  EXPECT_TRUE(j[3]["usd_per_hour"].is_null());  // no published TPU7x price: last
  EXPECT_TRUE(Contains(o.out, "no price\n")) << o.out;
  EXPECT_FALSE(HasTableRow(o.out, "v5p-12288"));
  EXPECT_TRUE(Contains(o.out, "The smallest fitting slice of each family; 35 larger sizes fit "
                              "too (--all lists them).\n"))
      << o.out;
  json all = TpufleetJson({"plan", "--hbm-gib", "29.8", "--replicas", "8", "--all"});
  EXPECT_EQ(all.size(), 4u + 35u);
  std::vector<std::string> types = PlanTypes(all);
  EXPECT_TRUE(Lists(types, "v5p-12288"));
  EXPECT_TRUE(Lists(types, "v6e-256"));
  Output every = Tpufleet({"plan", "--hbm-gib", "29.8", "--replicas", "8", "--all"});
  EXPECT_FALSE(Contains(every.out, "--all lists them")) << every.out;
}

// From fix 6: every numeric flag of the catalog commands is bounded.
TEST(Issue11, PlanFlagsAreBounded) {
  struct Case {
    std::vector<std::string> argv;
    std::string err;
  };
  const Case cases[] = {
      {{"plan", "--hbm-gib", "1e308"},
       "tpufleet: --hbm-gib expects a number of at most 10485760, got '1e308'\n"},
      {{"plan", "--hbm-gib", "8", "--host-ram-gib", "1e308"},
       "tpufleet: --host-ram-gib expects a number of at most 65536, got '1e308'\n"},
      {{"plan", "--hbm-gib", "8", "--replicas", "1e7"},
       "tpufleet: --replicas expects a number of at most 1000000, got '1e7'\n"},
      {{"plan", "--hbm-gib", "8", "--max-usd-per-hour", "1e308"},
       "tpufleet: --max-usd-per-hour expects a number of at most 1000000000, got '1e308'\n"},
  };
  for (const Case& c : cases) {
    Output o = Tpufleet(c.argv);
    EXPECT_EQ(o.code, 2) << c.argv[2];
    EXPECT_EQ(o.out, "") << c.argv[2];
    EXPECT_EQ(o.err, c.err);
  }
}

}  // namespace
}  // namespace tpufleet::cli
