// Issue 11, what a new user tripped on in core: plan in devices (fix 1), TPU7x, AI zones
// and retired zones (fix 9), and deeply nested YAML in a fleet spec (from fix 6).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "core/catalog.h"
#include "core/cost.h"
#include "core/fleet_spec.h"
#include "core/yaml_reader.h"
#include "util/strings.h"
#include "util/testing/status_printer.h"

namespace tpufleet {
namespace {

bool Contains(std::string_view haystack, std::string_view needle) {
  return haystack.find(needle) != std::string_view::npos;
}

// GenCast needs 29.8 GiB of accelerator memory per replica and cannot shard one.
constexpr double kGenCastGib = 29.8;

const Catalog& Builtin() {
  static const Catalog* catalog = [] {
    Result<Catalog> c = ParseCatalog(BuiltinCatalogYaml(), "built-in catalog");
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return new Catalog(c.ok() ? std::move(c).value() : Catalog());
  }();
  return *catalog;
}

PlanRequest Gencast(int replicas = 1) {
  PlanRequest r;
  r.hbm_gib_per_replica = kGenCastGib;
  r.replicas = replicas;
  return r;
}

std::vector<std::string> Names(const Plan& plan) {
  std::vector<std::string> names;
  for (const PlanOption& o : plan.options) {
    names.push_back(o.type.name);
  }
  return names;
}

const PlanOption* Find(const Plan& plan, std::string_view type) {
  for (const PlanOption& o : plan.options) {
    if (o.type.name == type) {
      return &o;
    }
  }
  return nullptr;
}

const PlanRejection* RejectionOf(const Plan& plan, std::string_view family) {
  for (const PlanRejection& r : plan.rejected) {
    if (r.family == family) {
      return &r;
    }
  }
  return nullptr;
}

// ---- Fix 1: devices as JAX sees them.

TEST(Issue11, DevicesPerChipAsJaxSeesThem) {
  struct Want {
    const char* type;
    int devices;
    double gib_per_device;
  };
  const Want wants[] = {
      {"v2-8", 8, 8},      {"v3-8", 8, 16},       {"v4-8", 4, 32},    {"v5p-8", 4, 95},
      {"v5litepod-8", 8, 16}, {"v6e-8", 8, 32}, {"tpu7x-8", 8, 96},
  };
  for (const Want& w : wants) {
    Result<AcceleratorType> t = Builtin().Lookup(w.type);
    ASSERT_TRUE(t.ok()) << w.type;
    EXPECT_EQ(t->devices, w.devices) << w.type;
    EXPECT_EQ(t->family->hbm_gib_per_device(), w.gib_per_device) << w.type;
  }
}

// The user's report: v3-8 was the cheapest fit for 29.8 GiB, but a v3 device has 16 GiB.
TEST(Issue11, GenCastIsNotOfferedV2OrV3WithoutShardable) {
  Plan plan = PlanHardware(Builtin(), Gencast());
  for (const std::string& name : Names(plan)) {
    EXPECT_FALSE(StartsWith(name, "v2-") || StartsWith(name, "v3-") ||
                 StartsWith(name, "v5litepod-"))
        << name;
  }
  const PlanRejection* v3 = RejectionOf(plan, "v3");
  ASSERT_NE(v3, nullptr);
  EXPECT_EQ(v3->reason, "HBM");
  EXPECT_EQ(v3->detail,
            "one replica needs 29.8 GiB and a v3 device (one TensorCore; 2 per chip) has 16 GiB, "
            "as JAX sees it; a replica is not split over devices unless the model shards "
            "(plan --shardable)");
  ASSERT_NE(RejectionOf(plan, "v2"), nullptr);
  ASSERT_NE(RejectionOf(plan, "v5litepod"), nullptr);  // 16 GiB chips
  // The cheapest fit is one 32 GiB v6e chip; every row is one replica per device.
  ASSERT_FALSE(plan.options.empty());
  EXPECT_EQ(plan.options[0].type.name, "v6e-1");
  for (const PlanOption& o : plan.options) {
    EXPECT_EQ(o.Layout(), "1 replica per device") << o.type.name;
    EXPECT_GE(o.type.family->hbm_gib_per_device(), kGenCastGib) << o.type.name;
  }
}

TEST(Issue11, ShardableSplitsAReplicaOverDevices) {
  PlanRequest req = Gencast();
  req.shardable = true;
  Plan plan = PlanHardware(Builtin(), req);
  const PlanOption* v3 = Find(plan, "v3-8");
  ASSERT_NE(v3, nullptr);
  EXPECT_EQ(v3->devices_per_replica, 2);
  EXPECT_EQ(v3->chips_per_replica, 1);
  EXPECT_EQ(v3->replicas_that_fit, 4);  // 8 devices of 16 GiB, 2 each
  EXPECT_EQ(v3->Layout(), "1 replica on 2 devices (sharded)");
  const PlanOption* v2 = Find(plan, "v2-8");
  EXPECT_EQ(v2, nullptr);  // v2's host RAM is not published
  const PlanOption* v5e = Find(plan, "v5litepod-4");
  ASSERT_NE(v5e, nullptr);
  EXPECT_EQ(v5e->devices_per_replica, 2);
  EXPECT_EQ(v5e->replicas_that_fit, 2);
  const PlanOption* v4 = Find(plan, "v4-8");
  ASSERT_NE(v4, nullptr);
  EXPECT_EQ(v4->Layout(), "1 replica per device");  // fits one device: never split
}

// `plan --replicas 8` listed 33 sizes; by default one per family, the smallest.
TEST(Issue11, SmallestFittingSliceOfEachFamilyByDefault) {
  Plan plan = PlanHardware(Builtin(), Gencast(8));
  // v6e-8 (8 x 32 GiB), v4-16 (8 chips), v5p-16 (8 chips), tpu7x-8 (8 x 96 GiB devices).
  std::vector<std::string> names = Names(plan);
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"tpu7x-8", "v4-16", "v5p-16", "v6e-8"}));
  EXPECT_GT(plan.larger_sizes_left_out, 20);
  PlanRequest all = Gencast(8);
  all.all_sizes = true;
  Plan every = PlanHardware(Builtin(), all);
  EXPECT_EQ(every.options.size(), plan.options.size() + plan.larger_sizes_left_out);
  EXPECT_EQ(every.larger_sizes_left_out, 0);
  EXPECT_NE(Find(every, "v5p-12288"), nullptr);
  EXPECT_EQ(Find(plan, "v5p-12288"), nullptr);
}

// TPU7x has no published price: it is offered, after every priced type, not as "$0".
TEST(Issue11, UnpricedFamilyComesLastAndIsNeverHeldToACeiling) {
  Plan plan = PlanHardware(Builtin(), Gencast());
  ASSERT_FALSE(plan.options.empty());
  EXPECT_EQ(plan.options.back().type.name, "tpu7x-8");
  EXPECT_FALSE(plan.options.back().priced);
  PlanRequest capped = Gencast();
  capped.max_usd_per_hour = 100;
  Plan under = PlanHardware(Builtin(), capped);
  EXPECT_EQ(Find(under, "tpu7x-8"), nullptr);
  const PlanRejection* r = RejectionOf(under, "tpu7x");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->reason, "price");
  EXPECT_TRUE(Contains(r->detail, "no price for tpu7x")) << r->detail;
}

// ---- Fix 9: TPU7x, the AI zones, and zones that no longer serve a family.

TEST(Issue11, Tpu7xAndTheAiZones) {
  Result<AcceleratorType> t = Builtin().Lookup("tpu7x-8");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->chips, 4);
  EXPECT_EQ(t->workers, 1);
  EXPECT_EQ(t->topology, "2x2x1");
  EXPECT_EQ(t->family->hbm_gib_per_chip, 192);
  EXPECT_EQ(t->family->zones, (std::vector<std::string>{"us-central1-ai1a", "us-central1-c"}));
  const std::vector<std::string>& v6e = Builtin().FindFamily("v6e")->zones;
  EXPECT_NE(std::find(v6e.begin(), v6e.end(), "us-south1-ai1b"), v6e.end());
  // No price is published: the data says so, and an estimate says so.
  EXPECT_TRUE(t->family->prices.empty());
  EXPECT_FALSE(t->family->price_note.empty());
  Result<CostEstimate> e = EstimateCost(Builtin(), *t, 1, 1);
  EXPECT_EQ(e.status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(Contains(e.status().message(), "no price for tpu7x: no list price")) << e.status().ToString();
}

TEST(Issue11, RetiredZoneSaysSoAndWhereTheTypeIsNow) {
  const Family& v3 = *Builtin().FindFamily("v3");
  EXPECT_EQ(Builtin().ZoneNotOffered(v3, "us-central1-f"),
            "zone us-central1-f no longer offers v3 (older guides and TPU Research Cloud emails "
            "still name it); v3 is offered now in us-central1-a, us-central1-b, europe-west4-a");
  EXPECT_TRUE(StartsWith(Builtin().ZoneNotOffered(*Builtin().FindFamily("v2"), "us-central1-f"),
                         "zone us-central1-f no longer offers v2 "));
  // A zone Google names is not "unknown", even for a family it never served.
  EXPECT_TRUE(StartsWith(Builtin().ZoneNotOffered(*Builtin().FindFamily("v4"), "us-central1-f"),
                         "zone us-central1-f does not offer v4"));
  EXPECT_EQ(Builtin().ZoneNotOffered(v3, "us-central1-a"), "");
}

TEST(Issue11, FleetSpecNamingARetiredZone) {
  Result<FleetSpec> r = ParseFleetSpec(
      "fleet: trc\nproject: trc-project\nnodes:\n"
      "  - name: n\n    type: v3-8\n    zones: [us-central1-f]\n",
      "fleet.yaml", Builtin());
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(StartsWith(r.status().message(),
                         "fleet.yaml:6:13: nodes[0].zones[0]: zone us-central1-f no longer offers "
                         "v3 (older guides"))
      << r.status().ToString();
  EXPECT_TRUE(Contains(r.status().message(), "v3 is offered now in us-central1-a, us-central1-b"))
      << r.status().ToString();
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
    Result<FleetSpec> r = ParseFleetSpec(Nested(depth), "fleet.yaml", Builtin());
    ASSERT_FALSE(r.ok()) << depth;
    // The root, nodes and nodes[0] are 3 levels; the map under labels (line 6) the 4th,
    // so line 6 + 61 opens the 65th, its key indented 6 + 2 x 61 columns.
    EXPECT_EQ(r.status().message(),
              "fleet.yaml:67:129: nesting is too deep: more than 64 levels of mappings and lists "
              "(tpufleet's files need about 5)")
        << depth;
  }
  // At the limit the spec parses as far as its fields: labels are text, not a mapping.
  Result<FleetSpec> at_limit = ParseFleetSpec(Nested(60), "fleet.yaml", Builtin());
  ASSERT_FALSE(at_limit.ok());
  EXPECT_FALSE(Contains(at_limit.status().message(), "nesting")) << at_limit.status().ToString();
  static_assert(yaml::kMaxNestingDepth == 64);
}

// 100000 levels in flow style fit in 200 KB, well under the 1 MiB cap: no stack overflow.
TEST(Issue11, HundredThousandLevelsDoNotOverflowTheStack) {
  std::string text = "fleet: [" + std::string(100000, '[') + std::string(100000, ']') + "]\n";
  Result<FleetSpec> r = ParseFleetSpec(text, "deep.yaml", Builtin());
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(StartsWith(r.status().message(), "deep.yaml:1:")) << r.status().ToString();
  EXPECT_TRUE(Contains(r.status().message(), "nesting is too deep")) << r.status().ToString();
  std::string dashes = std::string(2 * 100000, '-');
  for (size_t i = 1; i < dashes.size(); i += 2) {
    dashes[i] = ' ';
  }
  Result<FleetSpec> block = ParseFleetSpec(dashes + "x\n", "dash.yaml", Builtin());
  ASSERT_FALSE(block.ok());
  EXPECT_TRUE(Contains(block.status().message(), "nesting is too deep")) << block.status().ToString();
}

}  // namespace
}  // namespace tpufleet
