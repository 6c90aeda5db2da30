// The CLI in-process: Main() with string streams, checking what a user would see on
// stdout and stderr, the exit status, and the --json output parsed back. Help, usage
// errors and flags are in help_test.cc; catalog overrides in catalog_override_test.cc.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
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
using cli_testing::Row;
using cli_testing::Tpufleet;
using cli_testing::TpufleetJson;
using nlohmann::json;

// ---- Issue 10: an error's words are shown as text.

// An error message carries words from elsewhere (a path, the API's message, a worker's):
// an escape sequence in them (here OSC 52, which writes the terminal's clipboard) must
// reach the terminal as visible text, not as a control.
TEST(Issue10, AnErrorPrintsNoTerminalControls) {
  Output o = Tpufleet({"validate", "/nonexistent/\x1b]52;c;ZXZpbA==\x07.yaml"});
  EXPECT_EQ(o.code, 1);
  EXPECT_FALSE(Contains(o.err, "\x1b]52")) << o.err;
  EXPECT_FALSE(Contains(o.err, "\x07")) << o.err;
  EXPECT_TRUE(Contains(o.err, "\\x1b]52;c;ZXZpbA==\\x07.yaml")) << o.err;
}

// ---- catalog.

struct TypeFacts {
  const char* type;
  const char* family;
  int chips;
  int workers;
  int chips_per_worker;
  double hbm_gib_per_chip;
  double host_ram_gib_per_worker;
  double price_per_chip_hour;
  double spot_discount_min;
  double spot_discount_max;
};

TEST(Catalog, AcceptanceFactsAsJson) {
  const TypeFacts facts[] = {
      // v4: one priced region, us-central2: 1 - 0.9215/3.22 both ways.
      {"v4-32", "v4", 16, 4, 4, 32, 407, 3.22, 1 - 0.9215 / 3.22, 1 - 0.9215 / 3.22},
      // v5e: us-east5/us-east4 spot 0.60 of 1.20 (50% off) to us-central1 0.2449 (79.6% off).
      {"v5litepod-16", "v5litepod", 16, 4, 4, 16, 192, 1.20, 1 - 0.60 / 1.20, 1 - 0.2449 / 1.20},
      {"v5litepod-8", "v5litepod", 8, 1, 8, 16, 384, 1.20, 1 - 0.60 / 1.20, 1 - 0.2449 / 1.20},
      // v5p: us-east5 1.68 of 4.20 (60% off) to us-central1 0.8357 of 4.20 (80.1% off).
      {"v5p-8", "v5p", 4, 1, 4, 95, 448, 4.20, 1 - 1.68 / 4.20, 1 - 0.8357 / 4.20},
      // v6e: us-east5 1.215 of 2.70 (55% off) to us-central1 0.5442 of 2.70 (79.8% off).
      {"v6e-256", "v6e", 256, 64, 4, 32, 720, 2.70, 1 - 1.215 / 2.70, 1 - 0.5442 / 2.70},
      // v3: us-east1 0.60 of 2.00 (70% off) to us-central1 0.51 of 2.00 (74.5% off).
      {"v3-8", "v3", 4, 1, 4, 32, 340, 2.00, 1 - 0.60 / 2.00, 1 - 0.51 / 2.00},
  };
  for (const TypeFacts& f : facts) {
    SCOPED_TRACE(f.type);
    json j = TpufleetJson({"catalog", f.type});
    ASSERT_TRUE(j.is_object());
    EXPECT_EQ(j["type"], f.type);
    EXPECT_EQ(j["family"], f.family);
    EXPECT_EQ(j["chips"], f.chips);
    EXPECT_EQ(j["workers"], f.workers);
    EXPECT_EQ(j["chips_per_worker"], f.chips_per_worker);
    EXPECT_EQ(j["hbm_gib_per_chip"].get<double>(), f.hbm_gib_per_chip);
    EXPECT_EQ(j["host_ram_gib_per_worker"].get<double>(), f.host_ram_gib_per_worker);
    EXPECT_EQ(j["price_per_chip_hour"].get<double>(), f.price_per_chip_hour);
    EXPECT_NEAR(j["spot_discount_min"].get<double>(), f.spot_discount_min, 1e-9);
    EXPECT_NEAR(j["spot_discount_max"].get<double>(), f.spot_discount_max, 1e-9);
    EXPECT_NEAR(j["usd_per_hour"].get<double>(), f.chips * f.price_per_chip_hour, 1e-9);
  }
}

TEST(Catalog, MoreJsonFields) {
  json j = TpufleetJson({"catalog", "v4-32"});
  EXPECT_EQ(j["topology"], "2x2x4");
  EXPECT_EQ(j["tensor_cores"], 32);
  EXPECT_EQ(j["api_type"], "V4");
  EXPECT_EQ(j["hbm_gib_total"].get<double>(), 512);        // 16 x 32
  EXPECT_EQ(j["host_ram_gib_total"].get<double>(), 1628);  // 4 x 407
  EXPECT_EQ(j["host_machine_type"], "ct4p-hightpu-4t");
  EXPECT_EQ(j["host_vcpus_per_worker"], 240);
  EXPECT_EQ(j["default_runtime_version"], "tpu-ubuntu2204-base");
  EXPECT_EQ(j["zones"], json::array({"us-central2-b"}));
  EXPECT_EQ(j["price_region"], "us-central2");
  EXPECT_NEAR(j["spot_usd_per_hour_min"].get<double>(), 14.744, kCent);  // 16 x 0.9215
}

TEST(Catalog, UnknownHostIsNullInJsonAndSaidInText) {
  json j = TpufleetJson({"catalog", "v2-8"});
  EXPECT_TRUE(j["host_ram_gib_per_worker"].is_null());
  EXPECT_TRUE(j["host_machine_type"].is_null());
  Output o = Tpufleet({"catalog", "v2-8"});
  EXPECT_EQ(Row(o.out, "host"), "not published for v2");
}

TEST(Catalog, AliasShowsTheApiName) {
  json j = TpufleetJson({"catalog", "v5e-8"});
  EXPECT_EQ(j["type"], "v5litepod-8");
  EXPECT_EQ(j["api_type"], "V5LITE_POD");
}

TEST(Catalog, TypeAsText) {
  Output o = Tpufleet({"catalog", "v4-32"});
  EXPECT_EQ(o.code, 0);
  EXPECT_EQ(o.err, "");
  EXPECT_TRUE(StartsWith(o.out, "v4-32  (TPU v4, API type V4, topology 2x2x4)\n")) << o.out;
  EXPECT_EQ(Row(o.out, "chips"), "16 (4 per worker)");
  EXPECT_EQ(Row(o.out, "workers"), "4 VMs");
  EXPECT_EQ(Row(o.out, "TensorCores"), "32");
  EXPECT_EQ(Row(o.out, "HBM"), "512 GiB (32 GiB per chip)");
  EXPECT_EQ(Row(o.out, "host"),
            "407 GiB RAM, 240 vCPUs per worker (ct4p-hightpu-4t); 1628 GiB RAM in all");
  EXPECT_EQ(Row(o.out, "zones"), "us-central2-b");
  EXPECT_EQ(Row(o.out, "on demand"),
            "$51.52 per hour (16 chips x $3.22 per chip-hour in us-central2)");
  EXPECT_EQ(Row(o.out, "spot"), "$14.74 (71% off) per hour");  // 16 x 0.9215 = 14.744
  EXPECT_TRUE(StartsWith(Row(o.out, "runtime"), "tpu-ubuntu2204-base (default); also "));
}

TEST(Catalog, OneWorkerSaysVm) {
  Output o = Tpufleet({"catalog", "v5litepod-8"});
  EXPECT_EQ(Row(o.out, "chips"), "8 (8 per worker)");
  EXPECT_EQ(Row(o.out, "workers"), "1 VM");
  EXPECT_EQ(Row(o.out, "host"),
            "384 GiB RAM, 224 vCPUs per worker (ct5lp-hightpu-8t); 384 GiB RAM in all");
}

TEST(Catalog, SpotRangeAsText) {
  Output o = Tpufleet({"catalog", "v6e-256"});
  EXPECT_EQ(Row(o.out, "chips"), "256 (4 per worker)");
  EXPECT_EQ(Row(o.out, "workers"), "64 VMs");
  // 256 x 2.70 = 691.20 on demand; spot 256 x 0.5442 = 139.3152 to 691.20 x 0.45 = 311.04.
  EXPECT_EQ(Row(o.out, "on demand"),
            "$691.20 per hour (256 chips x $2.70 per chip-hour in us-central1)");
  EXPECT_EQ(Row(o.out, "spot"), "$139.32 to $311.04 (55% to 80% off, by region) per hour");
}

TEST(Catalog, FamilyTable) {
  Output o = Tpufleet({"catalog"});
  EXPECT_EQ(o.code, 0);
  EXPECT_EQ(o.err, "");
  EXPECT_TRUE(StartsWith(o.out, "FAMILY ")) << o.out;
  for (const char* family : {"v2", "v3", "v4", "v5litepod (v5e)", "v5p", "v6e"}) {
    EXPECT_TRUE(HasTableRow(o.out, family)) << family;
  }
  for (const std::string& line : Split(o.out, '\n')) {
    if (StartsWith(line, "v4 ")) {
      EXPECT_TRUE(Contains(line, " 407 GiB ")) << line;
      EXPECT_TRUE(Contains(line, " $3.22 ")) << line;
      EXPECT_TRUE(Contains(line, " 71% ")) << line;
      EXPECT_TRUE(Contains(line, "8,16,32,64,128,256,512,1024,2048,4096")) << line;
    }
    if (StartsWith(line, "v2 ")) {
      EXPECT_TRUE(Contains(line, " unknown ")) << line;  // host RAM not published
    }
    if (StartsWith(line, "v6e ")) {
      EXPECT_TRUE(Contains(line, " 176/720/1440 GiB ")) << line;
      EXPECT_TRUE(Contains(line, " 55%-80% ")) << line;
    }
  }
  EXPECT_TRUE(Contains(o.out, "`tpufleet catalog TYPE` for details"));
}

TEST(Catalog, FamiliesAsJson) {
  json j = TpufleetJson({"catalog"});
  ASSERT_TRUE(j.is_array());
  ASSERT_EQ(j.size(), 7u);
  std::vector<std::string> names;
  for (const json& f : j) {
    names.push_back(f["family"]);
  }
  EXPECT_EQ(names,
            (std::vector<std::string>{"v2", "v3", "v4", "v5litepod", "v5p", "v6e", "tpu7x"}));
  EXPECT_EQ(j[2]["types"][2], "v4-32");
  EXPECT_EQ(j[2]["sizes"].size(), 10u);
  EXPECT_EQ(j[3]["suffix_counts"], "chips");
  EXPECT_EQ(j[2]["suffix_counts"], "tensor_cores");
}

TEST(Catalog, BadTypeNamesExit2WithAReason) {
  Output o = Tpufleet({"catalog", "v4-33"});
  EXPECT_EQ(o.code, 2);
  EXPECT_EQ(o.out, "");
  EXPECT_EQ(o.err,
            "tpufleet: \"v4-33\" is not a v4 slice size (nearest: v4-32, v4-64); the number "
            "counts TensorCores and must be one of 8, 16, 32, 64, 128, 256, 512, 1024, 2048, "
            "4096\n");
  const char* kNamed = "types are named v2-N, v3-N, v4-N, v5litepod-N, v5p-N, v6e-N";
  struct Case {
    const char* type;
    const char* hint;
  };
  const Case cases[] = {
      {"v7-8", "(did you mean v2-8, v3-8 or v4-8?)"},
      {"tpu-v4-8", kNamed},
      {"", kNamed},
      {"v4", "(did you mean v4-8?)"},
  };
  for (const Case& c : cases) {
    Output bad = Tpufleet({"catalog", c.type});
    EXPECT_EQ(bad.code, 2) << c.type;
    EXPECT_EQ(bad.out, "") << c.type;
    EXPECT_TRUE(
        StartsWith(bad.err, std::string("tpufleet: unknown accelerator type \"") + c.type + "\""))
        << bad.err;
    EXPECT_TRUE(Contains(bad.err, c.hint)) << bad.err;
    EXPECT_TRUE(Contains(bad.err, kNamed)) << bad.err;
  }
}

// ---- estimate.

TEST(Estimate, OnDemandByHand) {
  Output o = Tpufleet({"estimate", "v4-32", "--hours", "10"});
  EXPECT_EQ(o.code, 0);
  EXPECT_EQ(o.err, "");
  // 16 chips x $3.22 = $51.52 an hour; x 10 h = $515.20.
  EXPECT_EQ(o.out,
            "1 x v4-32 (16 chips) for 10 h in us-central2:\n"
            "  on demand  $515.20  ($51.52/h = 16 chips x $3.22 per chip-hour)\n");
}

TEST(Estimate, OnDemandAsJson) {
  json j = TpufleetJson({"estimate", "v4-32", "--hours", "10"});
  EXPECT_EQ(j["type"], "v4-32");
  EXPECT_EQ(j["count"], 1);
  EXPECT_EQ(j["chips"], 16);
  EXPECT_EQ(j["hours"].get<double>(), 10);
  EXPECT_EQ(j["region"], "us-central2");
  EXPECT_EQ(j["price_per_chip_hour"].get<double>(), 3.22);
  EXPECT_NEAR(j["usd_per_hour"].get<double>(), 51.52, kCent);
  EXPECT_NEAR(j["on_demand_usd"].get<double>(), 515.20, kCent);
  EXPECT_FALSE(j.contains("spot_min_usd"));  // only with --spot
}

TEST(Estimate, Count) {
  // 3 slices x 16 chips = 48 chips; 48 x $3.22 = $154.56/h; x 10 h = $1,545.60.
  Output o = Tpufleet({"estimate", "v4-32", "--hours", "10", "--count", "3"});
  EXPECT_EQ(o.code, 0);
  EXPECT_EQ(o.out,
            "3 x v4-32 (48 chips) for 10 h in us-central2:\n"
            "  on demand  $1,545.60  ($154.56/h = 48 chips x $3.22 per chip-hour)\n");
  json j = TpufleetJson({"estimate", "v4-32", "--hours", "10", "--count", "3"});
  EXPECT_EQ(j["count"], 3);
  EXPECT_EQ(j["chips"], 48);
  EXPECT_NEAR(j["on_demand_usd"].get<double>(), 1545.60, kCent);
}

TEST(Estimate, SpotRangeByHand) {
  // v6e-8 for 24 h on demand: 8 x $2.70 x 24 = $518.40.
  // v6e's spot discounts run from 1 - 1.215/2.70 = 0.55 to 1 - 0.5442/2.70 = 0.79844:
  //   spot_min_usd = 518.40 x (1 - 0.79844) = 104.4864 -> $104.49
  //   spot_max_usd = 518.40 x (1 - 0.55)    = 233.28
  json j = TpufleetJson({"estimate", "v6e-8", "--hours", "24", "--spot"});
  EXPECT_NEAR(j["on_demand_usd"].get<double>(), 518.40, kCent);
  EXPECT_NEAR(j["spot_min_usd"].get<double>(), 104.4864, kCent);
  EXPECT_NEAR(j["spot_max_usd"].get<double>(), 233.28, kCent);
  Output o = Tpufleet({"estimate", "v6e-8", "--hours", "24", "--spot"});
  EXPECT_EQ(o.code, 0);
  EXPECT_EQ(o.out,
            "1 x v6e-8 (8 chips) for 24 h in us-central1:\n"
            "  on demand  $518.40  ($21.60/h = 8 chips x $2.70 per chip-hour)\n"
            "  spot       $104.49 to $233.28 (55% to 80% off, by region)\n");
}

TEST(Estimate, ZoneUsesItsRegionsPrice) {
  // europe-west4: $2.97 per chip-hour; 8 x 2.97 x 24 = $570.24.
  json j = TpufleetJson({"estimate", "v6e-8", "--hours", "24", "--zone", "europe-west4-a"});
  EXPECT_EQ(j["region"], "europe-west4");
  EXPECT_EQ(j["price_per_chip_hour"].get<double>(), 2.97);
  EXPECT_NEAR(j["usd_per_hour"].get<double>(), 23.76, kCent);
  EXPECT_NEAR(j["on_demand_usd"].get<double>(), 570.24, kCent);
  Output o = Tpufleet({"estimate", "v6e-8", "--hours", "24", "--zone", "europe-west4-a"});
  EXPECT_TRUE(StartsWith(o.out, "1 x v6e-8 (8 chips) for 24 h in europe-west4:\n")) << o.out;
  EXPECT_TRUE(Contains(o.out, "$570.24")) << o.out;
}

TEST(Estimate, ZoneThatDoesNotOfferTheFamilyListsItsZones) {
  Output o = Tpufleet({"estimate", "v4-8", "--hours", "1", "--zone", "us-central1-a"});
  EXPECT_EQ(o.code, 2);
  EXPECT_EQ(o.out, "");
  EXPECT_EQ(o.err,
            "tpufleet: zone us-central1-a does not offer v4 (did you mean us-central2-b?); v4 "
            "is offered in us-central2-b\n");
  Output v6e = Tpufleet({"estimate", "v6e-8", "--hours", "1", "--zone", "asia-east1-c"});
  EXPECT_EQ(v6e.code, 2);
  EXPECT_TRUE(Contains(v6e.err,
                       "v6e is offered in us-central1-b, us-east1-d, us-east5-a, us-east5-b, "
                       "us-south1-ai1b, us-central1-ai1a, europe-west4-a, asia-northeast1-b"))
      << v6e.err;
}

TEST(Estimate, ZoneWithoutAPriceFails) {
  // The catalog lists us-south1-a for v5e but has no us-south1 price.
  Output o = Tpufleet({"estimate", "v5litepod-8", "--hours", "1", "--zone", "us-south1-a"});
  EXPECT_EQ(o.code, 1);
  EXPECT_EQ(o.out, "");
  EXPECT_TRUE(StartsWith(o.err,
                         "tpufleet: error: the catalog has no v5litepod price for region "
                         "us-south1; priced regions: us-central1, "))
      << o.err;
}

TEST(Estimate, BadTypeExits2) {
  Output o = Tpufleet({"estimate", "v4-33", "--hours", "1"});
  EXPECT_EQ(o.code, 2);
  EXPECT_TRUE(Contains(o.err, "(nearest: v4-32, v4-64)")) << o.err;
}

// `--hours 1e300` aborted with std::out_of_range from FormatUsd. Since issue 11 the
// flag is bounded (a century); the largest it takes prints its cost.
TEST(EstimateRegression, HugeHoursDoNotCrash) {
  Output o = Tpufleet({"estimate", "v4-8", "--hours", "876000"});
  EXPECT_EQ(o.code, 0) << o.err;
  EXPECT_TRUE(Contains(o.out, "  on demand  $11,282,880.00")) << o.out;  // 4 x 3.22 x 876000
}

// Issue 11: `estimate --hours 1e308` printed "$inf".
TEST(Issue11, EstimateHoursAreBounded) {
  for (const char* hours : {"1e308", "876001"}) {
    Output o = Tpufleet({"estimate", "v4-8", "--hours", hours});
    EXPECT_EQ(o.code, 2) << hours;
    EXPECT_EQ(o.out, "") << hours;
    EXPECT_EQ(o.err, std::string("tpufleet: --hours expects a number of at most 876000, got '") +
                         hours + "'\n");
  }
}

// Issue 11: a TPU Research Cloud email names us-central1-f for v3-8; it said "unknown zone".
TEST(Issue11, EstimateInARetiredZoneSaysWhereTheTypeIsNow) {
  Output o = Tpufleet({"estimate", "v3-8", "--hours", "1", "--zone", "us-central1-f"});
  EXPECT_EQ(o.code, 2);
  EXPECT_EQ(o.err,
            "tpufleet: zone us-central1-f no longer offers v3 (older guides and TPU Research "
            "Cloud emails still name it); v3 is offered now in us-central1-a, us-central1-b, "
            "europe-west4-a\n");
}

// Issue 11: a fleet with a TPU7x entry: its cost is unknown, and the fleet's total says it
// leaves that entry out instead of reading as the whole cost.
TEST(Issue11, ValidateSaysAnUnpricedEntryIsNotCounted) {
  std::string path = ::testing::TempDir() + "/issue11-tpu7x.yaml";
  {
    std::ofstream f(path);
    f << "fleet: iw\nproject: iw-project\nnodes:\n  - name: a\n    type: tpu7x-8\n"
         "    zones: [us-central1-ai1a]\n";
  }
  Output o = Tpufleet({"validate", path});
  std::remove(path.c_str());
  EXPECT_EQ(o.code, 0) << o.err;
  EXPECT_TRUE(Contains(o.out, "unknown: the catalog has no price for tpu7x")) << o.out;
  EXPECT_TRUE(Contains(o.out, "; 1 entry has no price and is not counted).")) << o.out;
}

// Issue 14: what serve will do with a fleet, before it runs: lifetimes, the spot
// fallback, the budget's action and the agents' metrics port, as text and as JSON.
TEST(Issue14, ValidateShowsWhatServeWillDo) {
  std::string path = ::testing::TempDir() + "/issue14-serve.yaml";
  {
    std::ofstream f(path);
    f << "fleet: kept\nproject: kept-project\n"
         "budget: {usd_per_day: 50, action: delete-spot}\n"
         "monitoring: {prometheus_port: 9431}\n"
         "nodes:\n  - name: a\n    type: v5litepod-8\n    zones: [us-west4-a]\n"
         "    capacity: spot\n    ttl: 12h\n    idle: {after: 30m, action: stop}\n"
         "    spot_fallback: {after: 3, within: 6h}\n";
  }
  Output o = Tpufleet({"validate", path});
  json j = TpufleetJson({"validate", path, "--json"});
  std::remove(path.c_str());
  EXPECT_EQ(o.code, 0) << o.err;
  EXPECT_TRUE(Contains(o.out, "deleted 12h after creation; stopped after 30m idle")) << o.out;
  EXPECT_TRUE(Contains(o.out, "on demand after 3 losses within 6h, spot again after that"))
      << o.out;
  EXPECT_TRUE(Contains(o.out, "Budget: $50.00 a day; once spent, `tpufleet serve` creates "
                              "nothing more and deletes the spot nodes.\n"))
      << o.out;
  EXPECT_TRUE(Contains(o.out, "Monitoring: every worker's agent serves Prometheus metrics on "
                              "port 9431, on all its addresses.\n"))
      << o.out;
  const json& node = j["nodes"][0];
  EXPECT_EQ(node["ttl_seconds"], 12 * 3600);
  EXPECT_EQ(node["idle"], json({{"after_seconds", 1800}, {"action", "stop"}}));
  EXPECT_EQ(node["spot_fallback"], json({{"after", 3}, {"within_seconds", 6 * 3600}}));
  EXPECT_EQ(j["budget"], json({{"usd_per_day", 50.0}, {"usd_total", nullptr},
                               {"action", "delete-spot"}}));
  EXPECT_EQ(j["prometheus_port"], 9431);
}

// Issue 11: TPU7x is in the catalog, in the AI zone; no price is published, and it says so.
TEST(Issue11, Tpu7xInTheCatalogWithoutAnInventedPrice) {
  json j = TpufleetJson({"catalog", "tpu7x-8"});
  EXPECT_EQ(j["chips"], 4);
  EXPECT_EQ(j["devices"], 8);
  EXPECT_EQ(j["hbm_gib_per_device"].get<double>(), 96);
  EXPECT_TRUE(j["price_per_chip_hour"].is_null());
  EXPECT_TRUE(j["price_note"].is_string());
  EXPECT_EQ(j["zones"], json::array({"us-central1-ai1a", "us-central1-c"}));
  Output o = Tpufleet({"estimate", "tpu7x-8", "--hours", "1", "--zone", "us-central1-ai1a"});
  EXPECT_EQ(o.code, 1);
  EXPECT_TRUE(StartsWith(o.err, "tpufleet: error: the catalog has no price for tpu7x: ")) << o.err;
}

}  // namespace
}  // namespace tpufleet::cli
