// The CLI in-process: Main() with string streams, checking what a user would see on
// stdout and stderr, the exit status, and the --json output parsed back. Catalog
// overrides are in catalog_override_test.cc.
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

// ---- Help and usage errors.

TEST(Help, NoArgumentsPrintsHelpOnStderrAndExits2) {
  Output o = Tpufleet({});
  EXPECT_EQ(o.code, 2);
  EXPECT_EQ(o.out, "");
  EXPECT_TRUE(Contains(o.err, "Usage: tpufleet COMMAND [ARGS] [--json] [--catalog FILE]"));
  EXPECT_TRUE(Contains(o.err, "  catalog "));
}

TEST(Help, HelpListsEveryCommand) {
  for (const std::vector<std::string>& argv :
       std::vector<std::vector<std::string>>{{"help"}, {"--help"}, {"-h"}}) {
    Output o = Tpufleet(argv);
    EXPECT_EQ(o.code, 0) << argv[0];
    EXPECT_EQ(o.err, "");
    for (const char* name : {"catalog", "estimate", "plan", "validate", "help"}) {
      EXPECT_TRUE(HasTableRow(o.out, std::string("  ") + name)) << name << "\n" << o.out;
    }
    for (const Command& c : Commands()) {
      if (c.hidden) {  // run by tpufleet's own files (ssh-proxy), not by people
        EXPECT_FALSE(Contains(o.out, "  " + c.name + " ")) << c.name;
        continue;
      }
      EXPECT_TRUE(
          Contains(o.out, "  " + c.name + std::string(12 - c.name.size(), ' ') + c.summary + "\n"))
          << c.name;
    }
  }
}

TEST(Help, EveryCommandHasHelp) {
  ASSERT_GE(Commands().size(), 4u);
  for (const Command& c : Commands()) {
    for (const std::vector<std::string>& argv : std::vector<std::vector<std::string>>{
             {c.name, "--help"}, {c.name, "-h"}, {"help", c.name}}) {
      Output o = Tpufleet(argv);
      EXPECT_EQ(o.code, 0) << Join(argv, " ");
      EXPECT_EQ(o.err, "") << Join(argv, " ");
      EXPECT_TRUE(StartsWith(o.out, "Usage: tpufleet " + c.name)) << o.out;
      EXPECT_TRUE(Contains(o.out, c.summary)) << c.name;
      for (const FlagSpec& f : c.flags) {
        EXPECT_TRUE(Contains(o.out, "  --" + f.name)) << c.name << " --" << f.name;
      }
      EXPECT_TRUE(Contains(o.out, "  --catalog FILE")) << c.name;
      // --json is offered exactly where there is data to print (ssh hands over to ssh).
      EXPECT_EQ(Contains(o.out, "  --json"), c.prints_data) << c.name;
    }
  }
}

TEST(Help, EstimateUsageShowsItsFlags) {
  Output o = Tpufleet({"estimate", "--help"});
  EXPECT_TRUE(StartsWith(o.out,
                         "Usage: tpufleet estimate TYPE --hours H [--count N] [--spot] "
                         "[--zone ZONE]\n"))
      << o.out;
  EXPECT_TRUE(Contains(o.out, "  --hours H ")) << o.out;
  EXPECT_TRUE(Contains(o.out, "  --spot ")) << o.out;
}

TEST(Help, HelpForAnUnknownCommand) {
  Output o = Tpufleet({"help", "estmate"});
  EXPECT_EQ(o.code, 2);
  EXPECT_EQ(o.err, "tpufleet: unknown command 'estmate' (did you mean estimate?)\n");
}

TEST(UsageErrors, MisspelledCommandSuggestsTheRightOne) {
  Output o = Tpufleet({"catlog"});
  EXPECT_EQ(o.code, 2);
  EXPECT_EQ(o.out, "");
  EXPECT_EQ(o.err,
            "tpufleet: unknown command 'catlog' (did you mean catalog?)\n"
            "Run 'tpufleet help' for the list of commands.\n");
  Output far = Tpufleet({"launch"});
  EXPECT_EQ(far.code, 2);
  EXPECT_EQ(far.err,
            "tpufleet: unknown command 'launch'\nRun 'tpufleet help' for the list of commands.\n");
}

// The suggestion was the bare name ("did you mean hours?"), not the flag one types.
TEST(UsageErrorsRegression, MisspelledFlagSuggestsTheFlagWithDashes) {
  Output o = Tpufleet({"estimate", "v4-8", "--hour", "3"});
  EXPECT_EQ(o.code, 2);
  EXPECT_EQ(o.out, "");
  EXPECT_EQ(o.err,
            "tpufleet: unknown flag '--hour' for 'estimate' (did you mean --hours?)\n"
            "Run 'tpufleet estimate --help' for usage.\n");
  Output global = Tpufleet({"catalog", "--jsn"});
  EXPECT_EQ(global.code, 2);
  EXPECT_TRUE(Contains(global.err, "unknown flag '--jsn' for 'catalog' (did you mean --json?)"))
      << global.err;
}

TEST(UsageErrors, FlagOfAnotherCommand) {
  Output o = Tpufleet({"catalog", "v4-8", "--hours", "3"});
  EXPECT_EQ(o.code, 2);
  EXPECT_TRUE(StartsWith(o.err, "tpufleet: unknown flag '--hours' for 'catalog'")) << o.err;
}

TEST(UsageErrors, MalformedFlags) {
  struct Case {
    std::vector<std::string> argv;
    std::string err_start;
  };
  const Case cases[] = {
      {{"catalog", "-x"}, "tpufleet: unknown flag '-x' (flags are spelled --name)"},
      {{"--json=yes", "catalog"}, "tpufleet: --json takes no value"},
      {{"estimate", "v4-8", "--hours"}, "tpufleet: --hours needs a value (H)"},
      {{"estimate", "v4-8", "--hours", "abc"},
       "tpufleet: --hours expects a number of at least 0, got 'abc'"},
      {{"estimate", "v4-8", "--hours", "-1"},
       "tpufleet: --hours expects a number of at least 0, got '-1'"},
      {{"estimate", "v4-8", "--hours", "1", "--count", "0"},
       "tpufleet: --count expects a number of at least 1, got '0'"},
      {{"estimate", "v4-8", "--hours", "1", "--count", "2.5"},
       "tpufleet: --count expects a whole number"},
      {{"estimate", "--hours", "1"}, "tpufleet: estimate needs exactly one TYPE"},
      {{"estimate", "v4-8"}, "tpufleet: estimate needs --hours H"},
      {{"plan"}, "tpufleet: plan needs --hbm-gib X"},
      {{"plan", "--hbm-gib", "0"}, "tpufleet: --hbm-gib must be above zero"},
      {{"plan", "--hbm-gib", "16", "--replicas", "1.5"}, "tpufleet: --replicas expects a whole"},
      {{"plan", "v4-8", "--hbm-gib", "16"}, "tpufleet: plan takes no arguments"},
      {{"catalog", "v4-8", "v4-16"}, "tpufleet: catalog takes at most one TYPE"},
  };
  for (const Case& c : cases) {
    Output o = Tpufleet(c.argv);
    EXPECT_EQ(o.code, 2) << Join(c.argv, " ") << "\n" << o.err;
    EXPECT_EQ(o.out, "") << Join(c.argv, " ");
    EXPECT_TRUE(StartsWith(o.err, c.err_start)) << Join(c.argv, " ") << "\n" << o.err;
  }
}

// `estimate --count 1e10` overflowed int and printed a negative count and cost.
TEST(UsageErrorsRegression, CountTooLargeIsRejected) {
  Output o = Tpufleet({"estimate", "v4-8", "--hours", "1", "--count", "1e10"});
  EXPECT_EQ(o.code, 2);
  EXPECT_EQ(o.out, "");
  EXPECT_EQ(o.err, "tpufleet: --count expects a whole number up to 100000\n");
  // The largest count with the largest slice still adds up: 100000 x 6144 chips.
  json j = TpufleetJson({"estimate", "v5p-12288", "--hours", "1", "--count", "100000"});
  EXPECT_EQ(j["chips"], 614400000);
}

TEST(Flags, EqualsFormAndFlagsBeforeTheType) {
  json j = TpufleetJson({"estimate", "--hours=10", "v4-32"});
  EXPECT_NEAR(j["on_demand_usd"].get<double>(), 515.20, kCent);
  Output o = Tpufleet({"--json", "catalog", "v4-32"});
  EXPECT_EQ(o.code, 0);
  EXPECT_EQ(json::parse(o.out)["chips"], 16);
}

TEST(Flags, DoubleDashEndsFlags) {
  Output o = Tpufleet({"catalog", "--", "--json"});
  EXPECT_EQ(o.code, 2);  // "--json" is now a TYPE, and not a valid one
  EXPECT_TRUE(StartsWith(o.err, "tpufleet: unknown accelerator type \"--json\"")) << o.err;
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
  ASSERT_EQ(j.size(), 6u);
  std::vector<std::string> names;
  for (const json& f : j) {
    names.push_back(f["family"]);
  }
  EXPECT_EQ(names, (std::vector<std::string>{"v2", "v3", "v4", "v5litepod", "v5p", "v6e"}));
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
            "zones: us-central2-b\n");
  Output v6e = Tpufleet({"estimate", "v6e-8", "--hours", "1", "--zone", "asia-east1-c"});
  EXPECT_EQ(v6e.code, 2);
  EXPECT_TRUE(Contains(v6e.err,
                       "v6e zones: us-central1-b, us-east1-d, us-east5-a, us-east5-b, "
                       "europe-west4-a, asia-northeast1-b"))
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

// `--hours 1e300` aborted with std::out_of_range from FormatUsd.
TEST(EstimateRegression, HugeHoursDoNotCrash) {
  Output o = Tpufleet({"estimate", "v4-8", "--hours", "1e300"});
  EXPECT_EQ(o.code, 0) << o.err;
  EXPECT_TRUE(Contains(o.out, "  on demand  $12,880,000,")) << o.out;  // 4 x 3.22 x 1e300
}

// ---- plan.

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
  Output o = Tpufleet({"plan", "--hbm-gib", "32", "--host-ram-gib", "250"});
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
  json j = TpufleetJson({"plan", "--hbm-gib", "32", "--host-ram-gib", "250"});
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
    EXPECT_GE(o["usd_per_hour"].get<double>(), last) << o["type"];
    last = o["usd_per_hour"].get<double>();
    EXPECT_GE(o["host_ram_gib_per_worker"].get<double>(), 250) << o["type"];
  }
}

TEST(Plan, Replicas) {
  // 8 replicas x 32 GiB: 8 v4 chips. v4-16 has 8, v4-8 only 4.
  json j = TpufleetJson({"plan", "--hbm-gib", "32", "--replicas", "8"});
  std::vector<std::string> types = PlanTypes(j);
  EXPECT_TRUE(Lists(types, "v4-16"));
  EXPECT_FALSE(Lists(types, "v4-8"));
  EXPECT_TRUE(Lists(types, "v5litepod-16"));  // 2 chips each: 16
  EXPECT_FALSE(Lists(types, "v5litepod-8"));
  Output o = Tpufleet({"plan", "--hbm-gib", "32", "--replicas", "8"});
  EXPECT_TRUE(StartsWith(o.out,
                         "Needs 32 GiB HBM per replica x 8 replicas, 0 GiB host RAM per "
                         "worker.\n"))
      << o.out;
}

TEST(Plan, ModelTooLargeForEveryFamilyExits1) {
  Output o = Tpufleet({"plan", "--hbm-gib", "1000000"});
  EXPECT_EQ(o.code, 1);
  EXPECT_TRUE(Contains(o.out, "\nNo type fits.\n")) << o.out;
  for (const char* family : {"v2", "v3", "v4", "v5litepod", "v5p", "v6e"}) {
    EXPECT_TRUE(Contains(o.out, std::string("\n  ") + family + ": HBM: needs ")) << family;
  }
  // 1,000,000 GiB / 32 GiB = 31,250 chips; the largest v4 slice has 2048.
  EXPECT_TRUE(Contains(o.out,
                       "  v4: HBM: needs 31250 chips of 32 GiB (31250 per replica x 1); the "
                       "largest slice, v4-4096, has 2048\n"))
      << o.out;
}

// With --json, a plan with no fit printed [] and exited 0, unlike the text output.
TEST(PlanRegression, NoFitExits1WithJsonToo) {
  Output o = Tpufleet({"plan", "--hbm-gib", "1000000", "--json"});
  EXPECT_EQ(o.code, 1);
  EXPECT_EQ(json::parse(o.out), json::array());
}

// A huge --hbm-gib overflowed int and every family "fit" with one chip.
TEST(PlanRegression, HugeHbmFitsNothing) {
  Output o = Tpufleet({"plan", "--hbm-gib", "1e300"});
  EXPECT_EQ(o.code, 1);
  EXPECT_TRUE(Contains(o.out, "\nNo type fits.\n")) << o.out;
}

TEST(Plan, PriceCeiling) {
  Output o = Tpufleet({"plan", "--hbm-gib", "32", "--max-usd-per-hour", "5"});
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
  json j = TpufleetJson({"plan", "--hbm-gib", "32", "--max-usd-per-hour", "5"});
  EXPECT_EQ(PlanTypes(j), (std::vector<std::string>{"v6e-1", "v5litepod-4"}));
}

}  // namespace
}  // namespace tpufleet::cli
