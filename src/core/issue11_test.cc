// Issue 11, what a new user tripped on in core: TPU7x, AI zones and retired zones (fix
// 9), and deeply nested YAML in a fleet spec (from fix 6). The plan in devices (fix 1)
// is tested with the planner in cost_test.cc.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "core/catalog.h"
#include "core/cost.h"
#include "core/fleet_spec.h"
#include "core/testing/catalog_fixtures.h"
#include "core/yaml_reader.h"
#include "util/strings.h"
#include "util/testing/status_printer.h"

namespace tpufleet {
namespace {

bool Mentions(std::string_view haystack, std::string_view needle) {
  return haystack.find(needle) != std::string_view::npos;
}

// ---- Fix 9: TPU7x, the AI zones, and zones that no longer serve a family.

TEST(Issue11, Tpu7xAndTheAiZones) {
  Result<AcceleratorType> t = testing::BuiltinCatalog().Lookup("tpu7x-8");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->chips, 4);
  EXPECT_EQ(t->workers, 1);
  EXPECT_EQ(t->topology, "2x2x1");
  EXPECT_EQ(t->family->hbm_gib_per_chip, 192);
  EXPECT_EQ(t->family->zones, (std::vector<std::string>{"us-central1-ai1a", "us-central1-c"}));
  const std::vector<std::string>& v6e = testing::BuiltinCatalog().FindFamily("v6e")->zones;
  EXPECT_NE(std::find(v6e.begin(), v6e.end(), "us-south1-ai1b"), v6e.end());
  // No price is published: the data says so, and an estimate says so.
  EXPECT_TRUE(t->family->prices.empty());
  EXPECT_FALSE(t->family->price_note.empty());
  Result<CostEstimate> e = EstimateCost(testing::BuiltinCatalog(), *t, 1, 1);
  EXPECT_EQ(e.status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(Mentions(e.status().message(), "no price for tpu7x: no list price"))
      << e.status().ToString();
}

TEST(Issue11, RetiredZoneSaysSoAndWhereTheTypeIsNow) {
  const Family& v3 = *testing::BuiltinCatalog().FindFamily("v3");
  EXPECT_EQ(testing::BuiltinCatalog().ZoneNotOffered(v3, "us-central1-f"),
            "zone us-central1-f no longer offers v3 (older guides and TPU Research Cloud emails "
            "still name it); v3 is offered now in us-central1-a, us-central1-b, europe-west4-a");
  EXPECT_TRUE(StartsWith(testing::BuiltinCatalog().ZoneNotOffered(
                             *testing::BuiltinCatalog().FindFamily("v2"), "us-central1-f"),
                         "zone us-central1-f no longer offers v2 "));
  // A zone Google names is not "unknown", even for a family it never served.
  EXPECT_TRUE(StartsWith(testing::BuiltinCatalog().ZoneNotOffered(
                             *testing::BuiltinCatalog().FindFamily("v4"), "us-central1-f"),
                         "zone us-central1-f does not offer v4"));
  EXPECT_EQ(testing::BuiltinCatalog().ZoneNotOffered(v3, "us-central1-a"), "");
}

TEST(Issue11, FleetSpecNamingARetiredZone) {
  Result<FleetSpec> r = ParseFleetSpec(
      "fleet: trc\nproject: trc-project\nnodes:\n"
      "  - name: n\n    type: v3-8\n    zones: [us-central1-f]\n",
      "fleet.yaml", testing::BuiltinCatalog());
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(StartsWith(r.status().message(),
                         "fleet.yaml:6:13: nodes[0].zones[0]: zone us-central1-f no longer offers "
                         "v3 (older guides"))
      << r.status().ToString();
  EXPECT_TRUE(Mentions(r.status().message(), "v3 is offered now in us-central1-a, us-central1-b"))
      << r.status().ToString();
}

// A user's catalog file can name retired zones of its own, and must say why a family
// has no price rather than leave it out.
TEST(Issue11, CatalogOverrideOfRetiredZonesAndPrices) {
  Result<Catalog> c = ParseCatalog(
      "families: {}\nretired_zones:\n  - {zone: us-east1-d, family: v5p, source: mine}\n", "o.yaml",
      testing::BuiltinCatalog());
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_TRUE(StartsWith(c->ZoneNotOffered(*c->FindFamily("v5p"), "us-east1-d"),
                         "zone us-east1-d no longer offers v5p "));
  EXPECT_EQ(c->FindRetired("us-central1-f", *c->FindFamily("v3")), nullptr);  // replaced
  Result<Catalog> no_price =
      ParseCatalog("families:\n  v4:\n    prices: []\n", "o.yaml", testing::BuiltinCatalog());
  EXPECT_EQ(no_price.status(),
            InvalidArgumentError("o.yaml:3:5: families.v4: family v4 has no prices; give them, "
                                 "or a price_note saying why none is published"));
  Result<Catalog> devices = ParseCatalog("families:\n  v4:\n    devices_per_chip: 3\n", "o.yaml",
                                         testing::BuiltinCatalog());
  EXPECT_FALSE(devices.ok());
}

// ---- From fix 6: 500 levels of nesting said only "not valid YAML: bad file".

std::string Nested(int depth) {
  std::string text = "fleet: demo\nproject: demo-project\nnodes:\n  - name: n\n    labels:\n";
  std::string indent = "      ";
  for (int i = 0; i < depth; ++i) {
    text += indent + "a:\n";
    indent += "  ";
  }
  return text + indent + "b\n";
}

TEST(Issue11, DeeplyNestedSpecNamesTheFileTheLineAndTheLimit) {
  for (int depth : {65, 500, 1000}) {
    Result<FleetSpec> r = ParseFleetSpec(Nested(depth), "fleet.yaml", testing::BuiltinCatalog());
    ASSERT_FALSE(r.ok()) << depth;
    // The root, nodes and nodes[0] are 3 levels; the map under labels (line 6) the 4th,
    // so line 6 + 61 opens the 65th, its key indented 6 + 2 x 61 columns.
    EXPECT_EQ(r.status().message(),
              "fleet.yaml:67:129: nesting is too deep: more than 64 levels of mappings and lists "
              "(tpufleet's files need about 5)")
        << depth;
  }
  // At the limit the spec parses as far as its fields: labels are text, not a mapping.
  Result<FleetSpec> at_limit = ParseFleetSpec(Nested(60), "fleet.yaml", testing::BuiltinCatalog());
  ASSERT_FALSE(at_limit.ok());
  EXPECT_FALSE(Mentions(at_limit.status().message(), "nesting")) << at_limit.status().ToString();
  static_assert(yaml::kMaxNestingDepth == 64);
}

// 100000 levels in flow style fit in 200 KB, well under the 1 MiB cap: no stack overflow.
TEST(Issue11, HundredThousandLevelsDoNotOverflowTheStack) {
  std::string text = "fleet: [" + std::string(100000, '[') + std::string(100000, ']') + "]\n";
  Result<FleetSpec> r = ParseFleetSpec(text, "deep.yaml", testing::BuiltinCatalog());
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(StartsWith(r.status().message(), "deep.yaml:1:")) << r.status().ToString();
  EXPECT_TRUE(Mentions(r.status().message(), "nesting is too deep")) << r.status().ToString();
  std::string dashes = std::string(2 * 100000, '-');
  for (size_t i = 1; i < dashes.size(); i += 2) {
    dashes[i] = ' ';
  }
  Result<FleetSpec> block = ParseFleetSpec(dashes + "x\n", "dash.yaml", testing::BuiltinCatalog());
  ASSERT_FALSE(block.ok());
  EXPECT_TRUE(Mentions(block.status().message(), "nesting is too deep"))
      << block.status().ToString();
}

}  // namespace
}  // namespace tpufleet
