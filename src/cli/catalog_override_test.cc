// Catalog overrides through the CLI: --catalog FILE, $TPUFLEET_CATALOG and the config
// directory, laid over the built-in catalog; and the errors a broken override gives.
#include <gtest/gtest.h>

#include "core/testing/catalog_fixtures.h"
#include <stdlib.h>

#include <string>
#include <vector>

#include "cli/testing/run_cli.h"
#include "util/strings.h"
#include "util/testing/temp_dir.h"

namespace tpufleet::cli {
namespace {

using nlohmann::json;
using cli_testing::kCent;
using cli_testing::kNoHome;
using cli_testing::Output;
using cli_testing::Tpufleet;
using cli_testing::TpufleetJson;
using cli_testing::Contains;
using cli_testing::HasTableRow;

class CatalogOverride : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(tmp_.path().empty());
    dir_ = tmp_.path();
  }

  TempDir tmp_;
  std::string dir_;
};

// v4 at a negotiated $2.50 per chip-hour; every other v4 field stays built in.
constexpr const char* kCheaperV4 =
    "families:\n"
    "  v4:\n"
    "    prices:\n"
    "      - {region: us-central2, on_demand: 2.50, source: \"our contract\"}\n";


TEST_F(CatalogOverride, FlagChangesOneFieldAndKeepsTheRest) {
  std::string path = tmp_.Write("cheap.yaml", kCheaperV4);
  json j = TpufleetJson({"catalog", "v4-32", "--catalog", path});
  EXPECT_EQ(j["price_per_chip_hour"].get<double>(), 2.50);
  EXPECT_EQ(j["chips"], 16);
  EXPECT_EQ(j["workers"], 4);
  EXPECT_EQ(j["host_ram_gib_per_worker"].get<double>(), 407);
  EXPECT_EQ(j["topology"], "2x2x4");
  EXPECT_TRUE(j["spot_discount_min"].is_null());  // the new price list has no spot price
  // 16 chips x $2.50 x 10 h = $400.00.
  Output o = Tpufleet({"estimate", "v4-32", "--hours", "10", "--catalog", path});
  EXPECT_EQ(o.code, 0);
  EXPECT_TRUE(Contains(o.out, "  on demand  $400.00  ($40.00/h = 16 chips x $2.50 per chip-hour)"))
      << o.out;
  // Other families keep their prices.
  EXPECT_EQ(
      TpufleetJson({"catalog", "v6e-8", "--catalog", path})["price_per_chip_hour"].get<double>(),
      2.70);
}

TEST_F(CatalogOverride, SpotWithoutASpotPriceFails) {
  std::string path = tmp_.Write("cheap.yaml", kCheaperV4);
  Output o = Tpufleet({"estimate", "v4-32", "--hours", "10", "--spot", "--catalog", path});
  EXPECT_EQ(o.code, 1);
  EXPECT_EQ(o.err, "tpufleet: error: the catalog has no spot price for v4\n");
}

TEST_F(CatalogOverride, FlagBeforeTheCommandWithEquals) {
  std::string path = tmp_.Write("cheap.yaml", kCheaperV4);
  json j = TpufleetJson({"--catalog=" + path, "catalog", "v4-8"});
  EXPECT_EQ(j["price_per_chip_hour"].get<double>(), 2.50);
}

TEST_F(CatalogOverride, EnvironmentVariable) {
  std::string path = tmp_.Write("cheap.yaml", kCheaperV4);
  json j = TpufleetJson({"catalog", "v4-8"}, {{"HOME", kNoHome}, {"TPUFLEET_CATALOG", path}});
  EXPECT_EQ(j["price_per_chip_hour"].get<double>(), 2.50);
}

TEST_F(CatalogOverride, FlagWinsOverEnvironment) {
  std::string cheap = tmp_.Write("cheap.yaml", kCheaperV4);
  std::string broken = tmp_.Write("broken.yaml", "families: [\n");
  json j = TpufleetJson({"catalog", "v4-8", "--catalog", cheap},
                        {{"HOME", kNoHome}, {"TPUFLEET_CATALOG", broken}});
  EXPECT_EQ(j["price_per_chip_hour"].get<double>(), 2.50);
}

TEST_F(CatalogOverride, ConfigDirectoryFiles) {
  tmp_.Write("xdg/tpufleet/catalog.yaml", kCheaperV4);
  json xdg =
      TpufleetJson({"catalog", "v4-8"}, {{"HOME", kNoHome}, {"XDG_CONFIG_HOME", dir_ + "/xdg"}});
  EXPECT_EQ(xdg["price_per_chip_hour"].get<double>(), 2.50);
  tmp_.Write("home/.config/tpufleet/catalog.yaml", kCheaperV4);
  json home = TpufleetJson({"catalog", "v4-8"}, {{"HOME", dir_ + "/home"}});
  EXPECT_EQ(home["price_per_chip_hour"].get<double>(), 2.50);
  // No HOME, no override: the built-in price.
  EXPECT_EQ(TpufleetJson({"catalog", "v4-8"}, {})["price_per_chip_hour"].get<double>(), 3.22);
}

TEST_F(CatalogOverride, NewFamily) {
  std::string path = tmp_.Write("v7x.yaml", std::string(testing::kNewFamilyV7x));
  json j = TpufleetJson({"catalog", "v7x-16", "--catalog", path});
  EXPECT_EQ(j["type"], "v7x-16");
  EXPECT_EQ(j["family"], "v7x");
  EXPECT_EQ(j["chips"], 16);
  EXPECT_EQ(j["workers"], 4);
  EXPECT_EQ(j["host_ram_gib_per_worker"].get<double>(), 960);
  EXPECT_EQ(j["price_per_chip_hour"].get<double>(), 5.00);
  EXPECT_NEAR(j["spot_discount_min"].get<double>(), 0.6, 1e-12);  // 1 - 2.00/5.00
  Output table = Tpufleet({"catalog", "--catalog", path});
  EXPECT_TRUE(HasTableRow(table.out, "v7x")) << table.out;
  EXPECT_TRUE(HasTableRow(table.out, "v4")) << table.out;
  // 4 chips x $5.00 x 2 h = $40.00.
  json e = TpufleetJson({"estimate", "v7x-4", "--hours", "2", "--catalog", path});
  EXPECT_NEAR(e["on_demand_usd"].get<double>(), 40.00, kCent);
}

TEST_F(CatalogOverride, NewFamilyMissingAFieldNamesFileAndField) {
  std::string path = tmp_.Write("partial.yaml", "families:\n  v7x:\n    api_type: V7X\n");
  Output o = Tpufleet({"catalog", "--catalog", path});
  EXPECT_EQ(o.code, 1);
  EXPECT_EQ(o.out, "");
  EXPECT_EQ(o.err, "tpufleet: error: " + path +
                       ":3:5: families.v7x: family v7x has no sizes; a new family must give it\n");
}

TEST_F(CatalogOverride, MalformedFileGivesLineAndColumn) {
  std::string path = tmp_.Write("bad.yaml", "families:\n  v4:\n    prices: [\n      {region: x\n");
  Output o = Tpufleet({"catalog", "v4-8", "--catalog", path});
  EXPECT_EQ(o.code, 1);
  EXPECT_EQ(o.out, "");
  ASSERT_TRUE(StartsWith(o.err, "tpufleet: error: " + path + ":")) << o.err;
  std::vector<std::string> parts = Split(o.err.substr(17 + path.size() + 1), ':');
  ASSERT_GE(parts.size(), 3u) << o.err;
  long long line = 0;
  long long col = 0;
  EXPECT_TRUE(ParseInt(parts[0], &line)) << o.err;
  EXPECT_TRUE(ParseInt(parts[1], &col)) << o.err;
  EXPECT_EQ(parts[2], " not valid YAML") << o.err;
}

TEST_F(CatalogOverride, UnknownFieldSuggests) {
  std::string path = tmp_.Write("typo.yaml", "families:\n  v4:\n    price: 2.5\n");
  Output o = Tpufleet({"catalog", "--catalog", path});
  EXPECT_EQ(o.code, 1);
  EXPECT_TRUE(StartsWith(o.err, "tpufleet: error: " + path +
                                    ":3:5: families.v4.price: unknown field (did you mean "
                                    "prices?)"))
      << o.err;
}

TEST_F(CatalogOverride, MissingFileNamesThePath) {
  std::string path = dir_ + "/no-such.yaml";
  Output o = Tpufleet({"catalog", "v4-8", "--catalog", path});
  EXPECT_EQ(o.code, 1);
  EXPECT_EQ(o.out, "");
  EXPECT_EQ(o.err, "tpufleet: error: reading the catalog override: " + path +
                       ": No such file or directory\n");
  Output env = Tpufleet({"catalog", "v4-8"}, {{"HOME", kNoHome}, {"TPUFLEET_CATALOG", path}});
  EXPECT_EQ(env.code, 1);
  EXPECT_EQ(env.err, o.err);
}

}  // namespace
}  // namespace tpufleet::cli
