#include "core/cost.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/testing/catalog_fixtures.h"
#include "util/strings.h"
#include "util/testing/status_printer.h"

namespace tpufleet {
namespace {

// Money compared to a tenth of a cent; every expected figure below is worked by hand.
constexpr double kCent = 1e-3;

AcceleratorType Type(const Catalog& catalog, std::string_view name) {
  Result<AcceleratorType> t = catalog.Lookup(name);
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  return t.ok() ? *t : AcceleratorType();
}

CostEstimate Estimate(std::string_view type, double hours, int count, std::string_view zone = {}) {
  Result<CostEstimate> e = EstimateCost(testing::BuiltinCatalog(),
                                        Type(testing::BuiltinCatalog(), type), hours, count, zone);
  EXPECT_TRUE(e.ok()) << e.status().ToString();
  return e.ok() ? *e : CostEstimate();
}

// ---- EstimateCost.

TEST(EstimateCost, V4_32ForTenHours) {
  CostEstimate e = Estimate("v4-32", 10, 1);
  ASSERT_NE(e.price, nullptr);
  EXPECT_EQ(e.price->region, "us-central2");
  EXPECT_NEAR(e.usd_per_hour, 51.52, kCent);    // 16 chips x $3.22
  EXPECT_NEAR(e.on_demand_usd, 515.20, kCent);  // x 10 h
  // v4 has one spot price, 0.9215 of 3.22: both ends are 16 x 0.9215 x 10 = 147.44.
  ASSERT_TRUE(e.spot_min_usd.has_value());
  EXPECT_NEAR(*e.spot_min_usd, 147.44, kCent);
  EXPECT_NEAR(*e.spot_max_usd, 147.44, kCent);
}

TEST(EstimateCost, CountMultiplies) {
  CostEstimate e = Estimate("v4-32", 10, 3);
  EXPECT_NEAR(e.usd_per_hour, 154.56, kCent);    // 3 x 51.52
  EXPECT_NEAR(e.on_demand_usd, 1545.60, kCent);  // 3 x 515.20
  EXPECT_NEAR(*e.spot_max_usd, 442.32, kCent);   // 3 x 147.44
}

TEST(EstimateCost, SpotRangeUsesTheFamilysDiscounts) {
  CostEstimate e = Estimate("v6e-8", 24, 1);
  EXPECT_NEAR(e.usd_per_hour, 21.60, kCent);    // 8 x $2.70
  EXPECT_NEAR(e.on_demand_usd, 518.40, kCent);  // x 24 h
  // v6e discounts: 1 - 1.215/2.70 = 0.55 (us-east5) to 1 - 0.5442/2.70 = 0.79844 (us-central1).
  // Lowest spot:  518.40 x (1 - 0.79844) = 518.40 x 0.5442/2.70 = 104.4864
  // Highest spot: 518.40 x (1 - 0.55)    = 518.40 x 0.45        = 233.28
  EXPECT_NEAR(*e.spot_min_usd, 104.4864, kCent);
  EXPECT_NEAR(*e.spot_max_usd, 233.28, kCent);
}

TEST(EstimateCost, ZonePricesInItsRegion) {
  CostEstimate e = Estimate("v6e-8", 24, 1, "europe-west4-a");
  EXPECT_EQ(e.price->region, "europe-west4");
  EXPECT_NEAR(e.usd_per_hour, 23.76, kCent);    // 8 x $2.97
  EXPECT_NEAR(e.on_demand_usd, 570.24, kCent);  // x 24 h
  // The family's discount range applied to this region's on-demand price:
  // 570.24 x 0.5442/2.70 = 114.93504; 570.24 x 0.45 = 256.608.
  EXPECT_NEAR(*e.spot_min_usd, 114.93504, kCent);
  EXPECT_NEAR(*e.spot_max_usd, 256.608, kCent);
}

TEST(EstimateCost, ZeroAndFractionalHours) {
  EXPECT_EQ(Estimate("v5p-8", 0, 1).on_demand_usd, 0);
  EXPECT_NEAR(Estimate("v5p-8", 1.5, 1).on_demand_usd, 25.20, kCent);        // 4 x 4.20 x 1.5
  EXPECT_NEAR(Estimate("v5litepod-1", 0.25, 2).on_demand_usd, 0.60, kCent);  // 1 x 1.20 x 0.25 x 2
}

TEST(EstimateCost, RegionWithoutAPriceIsNotFound) {
  // us-south1-a offers v5e, but the catalog has no v5e price for us-south1.
  Result<CostEstimate> e =
      EstimateCost(testing::BuiltinCatalog(), Type(testing::BuiltinCatalog(), "v5litepod-8"), 1, 1,
                   "us-south1-a");
  EXPECT_EQ(e.status(),
            NotFoundError("the catalog has no v5litepod price for region us-south1; priced "
                          "regions: us-central1, us-west1, us-east1, us-east5, us-east4, "
                          "us-west4, europe-west4"));
}

TEST(EstimateCost, NoSpotPriceMeansNoSpotRange) {
  Result<Catalog> c = ParseCatalog(
      "families:\n  v4:\n    prices:\n      - {region: us-central2, on_demand: 2, source: s}\n",
      "o.yaml", testing::BuiltinCatalog());
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  Result<CostEstimate> e = EstimateCost(*c, Type(*c, "v4-8"), 2, 1);
  ASSERT_TRUE(e.ok());
  EXPECT_NEAR(e->on_demand_usd, 16, kCent);  // 4 chips x $2 x 2 h
  EXPECT_FALSE(e->spot_min_usd.has_value());
  EXPECT_FALSE(e->spot_max_usd.has_value());
}

// ---- PriceNode: what up (per hour) and status (so far) charge a node.

TEST(PriceNode, OnDemandIsTheListPriceForTheHours) {
  std::optional<NodePrice> p =
      PriceNode(testing::BuiltinCatalog(), "v4-32", "us-central2-b", false, 10);
  ASSERT_TRUE(p.has_value());
  EXPECT_NEAR(p->usd, 515.20, kCent);  // 16 chips x $3.22 x 10 h
  EXPECT_FALSE(p->upper_bound);
}

TEST(PriceNode, SpotIsTheTopOfTheSpotRange) {
  std::optional<NodePrice> p = PriceNode(testing::BuiltinCatalog(), "v6e-8", "", true, 24);
  ASSERT_TRUE(p.has_value());
  EXPECT_NEAR(p->usd, 233.28, kCent);  // as EstimateCost's spot_max_usd
  EXPECT_TRUE(p->upper_bound);
}

TEST(PriceNode, UnknownTypeOrRegionOrNoTypeHasNoPrice) {
  EXPECT_FALSE(PriceNode(testing::BuiltinCatalog(), "", "", false, 1).has_value());  // ssh-hosts
  EXPECT_FALSE(PriceNode(testing::BuiltinCatalog(), "v99-8", "", false, 1).has_value());
  EXPECT_FALSE(
      PriceNode(testing::BuiltinCatalog(), "v5litepod-8", "us-south1-a", false, 1).has_value());
}

// ---- PlanHardware.

// The planner as it was before issue 11 made these the defaults' opposites: replicas
// may be split over devices, and every fitting size is listed.
PlanRequest Req(double hbm_gib, double host_ram_gib = 0, int replicas = 1,
                std::optional<double> max_usd_per_hour = std::nullopt) {
  PlanRequest r;
  r.shardable = true;
  r.all_sizes = true;
  r.hbm_gib_per_replica = hbm_gib;
  r.host_ram_gib_per_worker = host_ram_gib;
  r.replicas = replicas;
  r.max_usd_per_hour = max_usd_per_hour;
  return r;
}

std::vector<std::string> Names(const Plan& plan) {
  std::vector<std::string> names;
  for (const PlanOption& o : plan.options) {
    names.push_back(o.type.name);
  }
  return names;
}

bool Has(const Plan& plan, std::string_view type) {
  std::vector<std::string> names = Names(plan);
  return std::find(names.begin(), names.end(), type) != names.end();
}

// The rejection of `family`, or one whose reason is "none" when the family fits.
PlanRejection RejectionOf(const Plan& plan, std::string_view family) {
  for (const PlanRejection& r : plan.rejected) {
    if (r.family == family) {
      return r;
    }
  }
  return {std::string(family), "none", "none"};
}

// `plan` offers nothing: each of the built-in catalog's 7 families is rejected for `reason`,
// and each family in `details` with that detail.
void ExpectEveryFamilyRejected(const Plan& plan, std::string_view reason,
                               const std::map<std::string, std::string>& details = {}) {
  EXPECT_TRUE(plan.options.empty()) << Names(plan)[0];
  ASSERT_EQ(plan.rejected.size(), 7u);
  for (const PlanRejection& r : plan.rejected) {
    EXPECT_EQ(r.reason, reason) << r.family;
  }
  for (const auto& [family, detail] : details) {
    EXPECT_EQ(RejectionOf(plan, family).detail, detail) << family;
  }
}

// The question from DESIGN.md: ~32 GB of accelerator memory and ~250 GB of host RAM.
TEST(PlanHardware, ThirtyTwoGibHbmAnd250GibHostRam) {
  Plan plan = PlanHardware(testing::BuiltinCatalog(), Req(32, 250));
  ASSERT_GE(plan.options.size(), 5u);
  // v3-8: 4 chips x $2.00 = $8.00/h; 32 GiB per chip, so 1 chip per replica; 340 GiB host.
  EXPECT_EQ(plan.options[0].type.name, "v3-8");
  EXPECT_NEAR(plan.options[0].usd_per_hour, 8.00, kCent);
  EXPECT_EQ(plan.options[0].chips_per_replica, 1);
  EXPECT_EQ(plan.options[0].replicas_that_fit, 4);
  // v5litepod-8: 8 x $1.20 = $9.60/h; 16 GiB per chip, so 2 chips per replica, 4 fit;
  // its one 8-chip VM has 384 GiB.
  EXPECT_EQ(plan.options[1].type.name, "v5litepod-8");
  EXPECT_NEAR(plan.options[1].usd_per_hour, 9.60, kCent);
  EXPECT_EQ(plan.options[1].chips_per_replica, 2);
  EXPECT_EQ(plan.options[1].replicas_that_fit, 4);
  // v6e-4: 4 x $2.70 = $10.80/h, 720 GiB.
  EXPECT_EQ(plan.options[2].type.name, "v6e-4");
  EXPECT_NEAR(plan.options[2].usd_per_hour, 10.80, kCent);
  // v4-8: 4 x $3.22 = $12.88; v5p-8: 4 x $4.20 = $16.80.
  EXPECT_EQ(plan.options[3].type.name, "v4-8");
  EXPECT_NEAR(plan.options[3].usd_per_hour, 12.88, kCent);
  EXPECT_EQ(plan.options[4].type.name, "v5p-8");
  EXPECT_NEAR(plan.options[4].usd_per_hour, 16.80, kCent);

  // 192 GiB (v5e 4-chip VMs, single- or multi-host) and 176 GiB (v6e-1) are too little.
  for (const char* no :
       {"v5litepod-1", "v5litepod-4", "v5litepod-16", "v5litepod-256", "v6e-1", "v2-8"}) {
    EXPECT_FALSE(Has(plan, no)) << no;
  }
  // The largest slices of families that fit are listed too.
  EXPECT_TRUE(Has(plan, "v4-4096"));
  EXPECT_TRUE(Has(plan, "v6e-256"));
  EXPECT_TRUE(Has(plan, "v5p-12288"));

  // Only v2 is rejected, because its host is not published.
  ASSERT_EQ(plan.rejected.size(), 1u);
  EXPECT_EQ(plan.rejected[0].family, "v2");
  EXPECT_EQ(plan.rejected[0].reason, "host RAM");
  EXPECT_EQ(plan.rejected[0].detail,
            "the catalog has no host RAM figure for v2 workers, so the fit cannot be checked");
}

TEST(PlanHardware, OptionsAreCheapestFirstAndAllFit) {
  PlanRequest req = Req(40, 100, 3);
  Plan plan = PlanHardware(testing::BuiltinCatalog(), req);
  ASSERT_FALSE(plan.options.empty());
  for (size_t i = 0; i < plan.options.size(); ++i) {
    const PlanOption& o = plan.options[i];
    if (i > 0 && o.priced) {
      EXPECT_LE(plan.options[i - 1].usd_per_hour, o.usd_per_hour) << o.type.name;
    }
    if (i > 0 && plan.options[i - 1].priced != o.priced) {
      EXPECT_FALSE(o.priced) << o.type.name << ": unpriced types come last";
    }
    EXPECT_GE(o.type.devices, o.devices_per_replica * req.replicas) << o.type.name;
    EXPECT_GE(o.devices_per_replica * o.type.family->hbm_gib_per_device(), 40) << o.type.name;
    ASSERT_TRUE(o.type.host.has_value());
    EXPECT_GE(o.type.host->ram_gib, 100) << o.type.name;
    EXPECT_EQ(o.replicas_that_fit, o.type.devices / o.devices_per_replica) << o.type.name;
  }
  // 40 GiB a replica, 3 replicas; the smallest slice of each family that holds them:
  //   v5p: 1 chip of 95 GiB each, 3 chips -> v5p-8 (4 chips):   4 x 4.20 = 16.80
  //   v5e: 3 chips of 16 GiB each, 9 chips -> v5litepod-16:    16 x 1.20 = 19.20
  //   v6e: 2 chips of 32 GiB each, 6 chips -> v6e-8:            8 x 2.70 = 21.60
  //   v4:  2 chips each, 6 chips -> v4-16 (8 chips):            8 x 3.22 = 25.76
  //   v3:  2 chips each, 6 chips -> v3-32 (16 chips):          16 x 2.00 = 32.00
  EXPECT_EQ(Names(plan)[0], "v5p-8");
  EXPECT_EQ(Names(plan)[1], "v5litepod-16");
  EXPECT_EQ(Names(plan)[2], "v6e-8");
  EXPECT_EQ(Names(plan)[3], "v4-16");
  EXPECT_EQ(Names(plan)[4], "v3-32");
}

TEST(PlanHardware, ReplicasNeedChipsForEveryOne) {
  // 8 replicas of 32 GiB: 8 chips of v4 (v4-16 has 8; v4-8 has 4), 16 chips of v5e.
  Plan plan = PlanHardware(testing::BuiltinCatalog(), Req(32, 0, 8));
  EXPECT_TRUE(Has(plan, "v4-16"));
  EXPECT_FALSE(Has(plan, "v4-8"));
  EXPECT_TRUE(Has(plan, "v5litepod-16"));
  EXPECT_FALSE(Has(plan, "v5litepod-8"));
  EXPECT_TRUE(Has(plan, "v6e-8"));
  EXPECT_FALSE(Has(plan, "v6e-4"));
  EXPECT_TRUE(Has(plan, "v5p-16"));  // 95 GiB chips, one each: 8 chips
  EXPECT_FALSE(Has(plan, "v5p-8"));
  for (const PlanOption& o : plan.options) {
    if (o.type.name == "v4-16") {
      EXPECT_EQ(o.replicas_that_fit, 8);
      EXPECT_NEAR(o.usd_per_hour, 25.76, kCent);  // 8 chips x 3.22
    }
  }
}

TEST(PlanHardware, ModelTooLargeForEveryFamily) {
  // 2,000,000 GiB: more than tpu7x-16384 holds (16384 devices x 96 GiB).
  Plan plan = PlanHardware(testing::BuiltinCatalog(), Req(2000000));
  ExpectEveryFamilyRejected(
      plan, "HBM",
      {// 2,000,000 / 32 = 62,500 devices (one per v4 chip); v4-4096 has 2048.
       {"v4",
        "needs 62500 devices of 32 GiB (62500 per replica x 1); the largest slice, v4-4096, "
        "has 2048"},
       // ceil(2,000,000 / 95) = 21,053.
       {"v5p",
        "needs 21053 devices of 95 GiB (21053 per replica x 1); the largest slice, v5p-12288, "
        "has 6144"},
       // v3 counts TensorCores: 2,000,000 / 16 = 125,000 devices; v3-2048 has 2048.
       {"v3",
        "needs 125000 devices of 16 GiB (125000 per replica x 1); the largest slice, v3-2048, "
        "has 2048"}});
}

// A huge request overflowed int chip counts (ceil(1e300 / 16) cast to int), after which
// every family "fit" with one chip per replica.
TEST(PlanHardwareRegression, HugeRequestsFitNothing) {
  Plan huge = PlanHardware(testing::BuiltinCatalog(), Req(1e300));
  ExpectEveryFamilyRejected(huge, "HBM");
  // 1e10 GiB / 32 = 312,500,000 chips per replica, x 1,000,000 replicas > 2^31.
  Plan many = PlanHardware(testing::BuiltinCatalog(), Req(1e10, 0, 1000000));
  EXPECT_TRUE(many.options.empty()) << Names(many)[0];
  EXPECT_EQ(RejectionOf(many, "v4").detail,
            "needs 312500000000000 devices of 32 GiB (312500000 per replica x 1000000); the "
            "largest slice, v4-4096, has 2048");
}

TEST(PlanHardware, HostRamTooLargeForEveryFamily) {
  Plan plan = PlanHardware(testing::BuiltinCatalog(), Req(8, 2000));
  ExpectEveryFamilyRejected(
      plan, "host RAM",
      {{"v6e",
        "needs 2000 GiB per worker; v6e slices with enough devices have at most 1440 GiB per "
        "worker"},
       {"v5litepod",
        "needs 2000 GiB per worker; v5litepod slices with enough devices have at most 384 GiB "
        "per worker"}});
}

TEST(PlanHardware, PriceCeilingLeavesOutDearTypes) {
  Plan plan = PlanHardware(testing::BuiltinCatalog(), Req(32, 0, 1, 5.0));
  // Under $5/h: v6e-1 (1 x 2.70) and v5litepod-4 (4 x 1.20 = 4.80; 2 chips per replica).
  EXPECT_EQ(Names(plan), (std::vector<std::string>{"v6e-1", "v5litepod-4"}));
  for (const PlanOption& o : plan.options) {
    EXPECT_LE(o.usd_per_hour, 5.0);
  }
  EXPECT_EQ(RejectionOf(plan, "v3").reason, "price");
  EXPECT_EQ(RejectionOf(plan, "v3").detail,
            "the cheapest fit, v3-8, costs $8.00/h, above the limit of $5.00/h");
  EXPECT_EQ(RejectionOf(plan, "v4").detail,
            "the cheapest fit, v4-8, costs $12.88/h, above the limit of $5.00/h");
  EXPECT_EQ(RejectionOf(plan, "v5p").reason, "price");
  EXPECT_EQ(RejectionOf(plan, "v2").reason, "host RAM");  // no host figure, whatever the price
  EXPECT_EQ(RejectionOf(plan, "v6e").reason, "none");
  EXPECT_EQ(RejectionOf(plan, "v5litepod").reason, "none");
}

TEST(PlanHardware, CeilingExactlyAtThePriceKeepsTheType) {
  Plan plan = PlanHardware(testing::BuiltinCatalog(), Req(32, 0, 1, 8.0));
  EXPECT_TRUE(Has(plan, "v3-8"));  // $8.00 is not above $8.00
  EXPECT_FALSE(Has(plan, "v5litepod-8"));
}

// Issue 11: one device per replica, and a device of a v2, v3 or TPU7x chip is one
// TensorCore, so such a chip holds two small replicas.
TEST(PlanHardware, SmallModelsUseOneDevicePerReplica) {
  Plan plan = PlanHardware(testing::BuiltinCatalog(), Req(0.5));
  ASSERT_FALSE(plan.options.empty());
  // v5litepod-1: 1 chip x $1.20, the cheapest slice there is.
  EXPECT_EQ(plan.options[0].type.name, "v5litepod-1");
  EXPECT_NEAR(plan.options[0].usd_per_hour, 1.20, kCent);
  for (const PlanOption& o : plan.options) {
    EXPECT_EQ(o.devices_per_replica, 1) << o.type.name;
    EXPECT_EQ(o.replicas_that_fit, o.type.devices) << o.type.name;
    EXPECT_EQ(o.Layout(), "1 replica per device") << o.type.name;
  }
}

// ---- Issue 11: plan in devices as JAX sees them.

// GenCast needs 29.8 GiB of accelerator memory per replica and cannot shard one.
constexpr double kGenCastGib = 29.8;

const PlanOption* Find(const Plan& plan, std::string_view type) {
  for (const PlanOption& o : plan.options) {
    if (o.type.name == type) {
      return &o;
    }
  }
  return nullptr;
}

PlanRequest Gencast(int replicas = 1) {
  PlanRequest r;
  r.hbm_gib_per_replica = kGenCastGib;
  r.replicas = replicas;
  return r;
}

TEST(Issue11, DevicesPerChipAsJaxSeesThem) {
  struct Want {
    const char* type;
    int devices;
    double gib_per_device;
  };
  const Want wants[] = {
      {"v2-8", 8, 8},         {"v3-8", 8, 16},  {"v4-8", 4, 32},    {"v5p-8", 4, 95},
      {"v5litepod-8", 8, 16}, {"v6e-8", 8, 32}, {"tpu7x-8", 8, 96},
  };
  for (const Want& w : wants) {
    Result<AcceleratorType> t = testing::BuiltinCatalog().Lookup(w.type);
    ASSERT_TRUE(t.ok()) << w.type;
    EXPECT_EQ(t->devices, w.devices) << w.type;
    EXPECT_EQ(t->family->hbm_gib_per_device(), w.gib_per_device) << w.type;
  }
}

// The user's report: v3-8 was the cheapest fit for 29.8 GiB, but a v3 device has 16 GiB.
TEST(Issue11, GenCastIsNotOfferedV2OrV3WithoutShardable) {
  Plan plan = PlanHardware(testing::BuiltinCatalog(), Gencast());
  for (const std::string& name : Names(plan)) {
    EXPECT_FALSE(StartsWith(name, "v2-") || StartsWith(name, "v3-") ||
                 StartsWith(name, "v5litepod-"))
        << name;
  }
  PlanRejection v3 = RejectionOf(plan, "v3");
  EXPECT_EQ(v3.reason, "HBM");
  EXPECT_EQ(v3.detail,
            "one replica needs 29.8 GiB and a v3 device (one TensorCore; 2 per chip) has 16 GiB, "
            "as JAX sees it; a replica is not split over devices unless the model shards "
            "(plan --shardable)");
  EXPECT_EQ(RejectionOf(plan, "v2").reason, "HBM");
  EXPECT_EQ(RejectionOf(plan, "v5litepod").reason, "HBM");  // 16 GiB chips
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
  Plan plan = PlanHardware(testing::BuiltinCatalog(), req);
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
  Plan plan = PlanHardware(testing::BuiltinCatalog(), Gencast(8));
  // v6e-8 (8 x 32 GiB), v4-16 (8 chips), v5p-16 (8 chips), tpu7x-8 (8 x 96 GiB devices).
  std::vector<std::string> names = Names(plan);
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"tpu7x-8", "v4-16", "v5p-16", "v6e-8"}));
  EXPECT_GT(plan.larger_sizes_left_out, 20);
  PlanRequest all = Gencast(8);
  all.all_sizes = true;
  Plan every = PlanHardware(testing::BuiltinCatalog(), all);
  EXPECT_EQ(every.options.size(), plan.options.size() + plan.larger_sizes_left_out);
  EXPECT_EQ(every.larger_sizes_left_out, 0);
  EXPECT_NE(Find(every, "v5p-12288"), nullptr);
  EXPECT_EQ(Find(plan, "v5p-12288"), nullptr);
}

// TPU7x has no published price: it is offered, after every priced type, not as "$0".
TEST(Issue11, UnpricedFamilyComesLastAndIsNeverHeldToACeiling) {
  Plan plan = PlanHardware(testing::BuiltinCatalog(), Gencast());
  ASSERT_FALSE(plan.options.empty());
  EXPECT_EQ(plan.options.back().type.name, "tpu7x-8");
  EXPECT_FALSE(plan.options.back().priced);
  PlanRequest capped = Gencast();
  capped.max_usd_per_hour = 100;
  Plan under = PlanHardware(testing::BuiltinCatalog(), capped);
  EXPECT_EQ(Find(under, "tpu7x-8"), nullptr);
  PlanRejection r = RejectionOf(under, "tpu7x");
  EXPECT_EQ(r.reason, "price");
  EXPECT_NE(r.detail.find("no price for tpu7x"), std::string::npos) << r.detail;
}

}  // namespace
}  // namespace tpufleet
