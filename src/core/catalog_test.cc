#include "core/catalog.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/testing/catalog_fixtures.h"
#include "core/testing/fleet_spec_fixture.h"
#include "util/strings.h"
#include "util/testing/status_printer.h"
#include "util/testing/text_cases.h"

namespace tpufleet {
namespace {

// The built-in catalog, parsed once.
AcceleratorType MustLookup(std::string_view name) {
  Result<AcceleratorType> t = testing::BuiltinCatalog().Lookup(name);
  EXPECT_TRUE(t.ok()) << name << ": " << t.status().ToString();
  return t.ok() ? *t : AcceleratorType();
}

// ---- What a type name means (reference/tpu-api.md §9, accelerators.md §1).

struct Fact {
  const char* type;
  int chips;
  int workers;
  int chips_per_worker;
  int tensor_cores;
  const char* topology;
};

// The built-in catalog gives `f.type` the facts `f` lists.
void ExpectFacts(const Fact& f) {
  SCOPED_TRACE(f.type);
  AcceleratorType t = MustLookup(f.type);
  EXPECT_EQ(t.name, f.type);
  EXPECT_EQ(t.chips, f.chips);
  EXPECT_EQ(t.workers, f.workers);
  EXPECT_EQ(t.chips_per_worker, f.chips_per_worker);
  EXPECT_EQ(t.tensor_cores, f.tensor_cores);
  EXPECT_EQ(t.topology, f.topology);
}

TEST(Lookup, AcceptanceFacts) {
  const Fact facts[] = {
      {"v4-32", 16, 4, 4, 32, "2x2x4"},      {"v5litepod-16", 16, 4, 4, 16, "4x4"},
      {"v5litepod-8", 8, 1, 8, 8, "2x4"},    {"v5p-8", 4, 1, 4, 8, "2x2x1"},
      {"v6e-256", 256, 64, 4, 256, "16x16"}, {"v3-8", 4, 1, 4, 8, "2x2"},
  };
  for (const Fact& f : facts) {
    ExpectFacts(f);
  }
}

TEST(Lookup, MoreFactsFromTheReference) {
  const Fact facts[] = {
      {"v4-8", 4, 1, 4, 8, "2x2x1"},
      {"v4-4096", 2048, 512, 4, 4096, "8x16x16"},
      {"v5p-12288", 6144, 1536, 4, 12288, "16x16x24"},
      {"v5litepod-1", 1, 1, 1, 1, "1x1"},
      {"v5litepod-32", 32, 8, 4, 32, "4x8"},  // "all 8 workers"
      {"v6e-16", 16, 4, 4, 16, "4x4"},
      {"v6e-8", 8, 1, 8, 8, "2x4"},
      {"v2-8", 4, 1, 4, 8, "2x2"},
      {"v3-2048", 1024, 256, 4, 2048, "32x32"},
  };
  for (const Fact& f : facts) {
    ExpectFacts(f);
  }
}

// The API's naming rule, written out per family rather than read from the catalog's
// own fields, checked for every size of every family.
TEST(Lookup, EveryFamilyFollowsTheApiNamingRule) {
  const std::set<std::string> by_tensor_cores = {"v2", "v3", "v4", "v5p", "tpu7x"};
  const std::set<std::string> by_chips = {"v5litepod", "v6e"};
  ASSERT_EQ(testing::BuiltinCatalog().families().size(), 7u);
  int checked = 0;
  for (const Family& fam : testing::BuiltinCatalog().families()) {
    ASSERT_TRUE(by_tensor_cores.count(fam.name) + by_chips.count(fam.name) == 1) << fam.name;
    for (int n : fam.sizes) {
      std::string name = fam.name + "-" + std::to_string(n);
      AcceleratorType t = MustLookup(name);
      if (by_tensor_cores.count(fam.name)) {
        EXPECT_EQ(t.chips, n / 2) << name;    // 2 TensorCores per chip
        EXPECT_EQ(t.workers, n / 8) << name;  // 4 chips per worker VM
        EXPECT_EQ(t.tensor_cores, n) << name;
      } else {
        EXPECT_EQ(t.chips, n) << name;
        EXPECT_EQ(t.workers, n <= 8 ? 1 : n / 4) << name;  // one VM up to 8 chips
        EXPECT_EQ(t.tensor_cores, n) << name;
      }
      EXPECT_EQ(t.chips_per_worker * t.workers, t.chips) << name;
      ++checked;
    }
  }
  EXPECT_EQ(checked, 5 + 8 + 10 + 8 + 12 + 8 + 13);
}

TEST(Lookup, SizesAreTheOnesGoogleLists) {
  const std::map<std::string, std::vector<int>> sizes = {
      {"v2", {8, 32, 128, 256, 512}},
      {"v3", {8, 32, 64, 128, 256, 512, 1024, 2048}},
      {"v4", {8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096}},
      {"v5litepod", {1, 4, 8, 16, 32, 64, 128, 256}},
      {"v5p", {8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 12288}},
      {"v6e", {1, 4, 8, 16, 32, 64, 128, 256}},
  };
  for (const auto& [name, want] : sizes) {
    const Family* f = testing::BuiltinCatalog().FindFamily(name);
    ASSERT_NE(f, nullptr) << name;
    EXPECT_EQ(f->sizes, want) << name;
  }
}

// A topology "AxB" or "AxBxC" multiplies out to the slice's chips, for every size.
TEST(Lookup, EveryTopologyMultipliesOutToTheChips) {
  for (const Family& fam : testing::BuiltinCatalog().families()) {
    for (int n : fam.sizes) {
      AcceleratorType t = MustLookup(fam.name + "-" + std::to_string(n));
      ASSERT_FALSE(t.topology.empty()) << t.name;
      long long product = 1;
      for (const std::string& dim : Split(t.topology, 'x')) {
        long long d = 0;
        ASSERT_TRUE(ParseInt(dim, &d)) << t.name << ": " << t.topology;
        product *= d;
      }
      EXPECT_EQ(product, t.chips) << t.name << ": " << t.topology;
      bool three_d = fam.name == "v4" || fam.name == "v5p" || fam.name == "tpu7x";
      EXPECT_EQ(Split(t.topology, 'x').size(), three_d ? 3u : 2u) << t.name;
    }
  }
}

TEST(Lookup, FamilyFacts) {
  struct Want {
    const char* family;
    const char* api_type;
    double hbm_gib_per_chip;
    const char* default_runtime;
    double price;  // reference region, USD per chip-hour
    const char* price_region;
  };
  const Want wants[] = {
      {"v2", "V2", 16, "tpu-ubuntu2204-base", 1.125, "us-central1"},
      {"v3", "V3", 32, "tpu-ubuntu2204-base", 2.00, "us-central1"},
      {"v4", "V4", 32, "tpu-ubuntu2204-base", 3.22, "us-central2"},
      {"v5litepod", "V5LITE_POD", 16, "v2-alpha-tpuv5-lite", 1.20, "us-central1"},
      {"v5p", "V5P", 95, "v2-alpha-tpuv5", 4.20, "us-central1"},
      {"v6e", "V6E", 32, "v2-alpha-tpuv6e", 2.70, "us-central1"},
  };
  for (const Want& w : wants) {
    const Family* f = testing::BuiltinCatalog().FindFamily(w.family);
    ASSERT_NE(f, nullptr) << w.family;
    EXPECT_EQ(f->api_type, w.api_type);
    EXPECT_EQ(f->hbm_gib_per_chip, w.hbm_gib_per_chip) << w.family;
    ASSERT_FALSE(f->runtime_versions.empty());
    EXPECT_EQ(f->runtime_versions.front(), w.default_runtime) << w.family;
    const RegionPrice* p = testing::BuiltinCatalog().PriceFor(*f);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(p->on_demand, w.price) << w.family;
    EXPECT_EQ(p->region, w.price_region) << w.family;
    EXPECT_FALSE(f->source.empty()) << w.family;
    EXPECT_FALSE(p->source.empty()) << w.family;
  }
}

TEST(Lookup, AliasResolvesToTheApiName) {
  AcceleratorType t = MustLookup("v5e-8");
  EXPECT_EQ(t.name, "v5litepod-8");
  ASSERT_NE(t.family, nullptr);
  EXPECT_EQ(t.family->name, "v5litepod");
  EXPECT_EQ(t.chips, 8);
  EXPECT_EQ(MustLookup("v5e-16").workers, 4);
  EXPECT_EQ(testing::BuiltinCatalog().FindFamily("v5e"),
            testing::BuiltinCatalog().FindFamily("v5litepod"));
}

TEST(Lookup, TrimsSpaces) {
  EXPECT_EQ(MustLookup("  v4-32\n").name, "v4-32");
}

// ---- Host shapes.

TEST(Hosts, V3SingleHostAndPodHostsDiffer) {
  AcceleratorType single = MustLookup("v3-8");
  ASSERT_TRUE(single.host.has_value());
  EXPECT_EQ(single.host->machine_type, "ct3-hightpu-4t");
  EXPECT_EQ(single.host->vcpus, 96);
  EXPECT_EQ(single.host->ram_gib, 340);
  for (const char* pod : {"v3-32", "v3-2048"}) {
    AcceleratorType t = MustLookup(pod);
    ASSERT_TRUE(t.host.has_value()) << pod;
    EXPECT_EQ(t.host->machine_type, "ct3p-hightpu-4t") << pod;
    EXPECT_EQ(t.host->vcpus, 48) << pod;
    EXPECT_EQ(t.host->ram_gib, 340) << pod;
  }
}

TEST(Hosts, ChosenByChipsPerWorker) {
  struct Want {
    const char* type;
    const char* machine_type;
    int vcpus;
    double ram_gib;
  };
  const Want wants[] = {
      {"v5litepod-1", "ct5lp-hightpu-1t", 24, 48},
      {"v5litepod-4", "ct5lp-hightpu-4t", 112, 192},
      {"v5litepod-8", "ct5lp-hightpu-8t", 224, 384},
      {"v5litepod-16", "ct5lp-hightpu-4t", 112, 192},  // multi-host: 4 chips per VM
      {"v5litepod-256", "ct5lp-hightpu-4t", 112, 192},
      {"v6e-1", "ct6e-standard-1t", 44, 176},
      {"v6e-4", "ct6e-standard-4t", 180, 720},
      {"v6e-8", "ct6e-standard-8t", 360, 1440},
      {"v6e-16", "ct6e-standard-4t", 180, 720},
      {"v4-8", "ct4p-hightpu-4t", 240, 407},
      {"v4-32", "ct4p-hightpu-4t", 240, 407},
      {"v5p-8", "ct5p-hightpu-4t", 208, 448},
      {"v5p-128", "ct5p-hightpu-4t", 208, 448},
  };
  for (const Want& w : wants) {
    AcceleratorType t = MustLookup(w.type);
    ASSERT_TRUE(t.host.has_value()) << w.type;
    EXPECT_EQ(t.host->machine_type, w.machine_type) << w.type;
    EXPECT_EQ(t.host->vcpus, w.vcpus) << w.type;
    EXPECT_EQ(t.host->ram_gib, w.ram_gib) << w.type;
  }
}

TEST(Hosts, V2HostIsUnknown) {
  AcceleratorType t = MustLookup("v2-8");
  EXPECT_FALSE(t.host.has_value());
  EXPECT_FALSE(t.host_ram_gib_total().has_value());
}

TEST(Hosts, Totals) {
  AcceleratorType t = MustLookup("v4-32");
  EXPECT_EQ(t.hbm_gib_total(), 512);        // 16 chips x 32 GiB
  EXPECT_EQ(t.host_ram_gib_total(), 1628);  // 4 workers x 407 GiB
  AcceleratorType e = MustLookup("v5litepod-16");
  EXPECT_EQ(e.hbm_gib_total(), 256);       // 16 x 16
  EXPECT_EQ(e.host_ram_gib_total(), 768);  // 4 x 192
}

// ---- Names that are not types.

// Looking `type` up fails with InvalidArgument and exactly `message`.
void ExpectLookupError(std::string_view type, const std::string& message) {
  EXPECT_EQ(testing::BuiltinCatalog().Lookup(type).status(), InvalidArgumentError(message)) << type;
}

// Looking `type` up fails with a message that contains `part`.
::testing::AssertionResult LookupErrorSays(std::string_view type, const std::string& part) {
  return testing::Contains(testing::BuiltinCatalog().Lookup(type).status().message(), part);
}

TEST(LookupErrors, SizeThatDoesNotExistNamesTheNearestAndTheValidSizes) {
  ExpectLookupError("v4-33",
                    "\"v4-33\" is not a v4 slice size (nearest: v4-32, v4-64); the "
                    "number counts TensorCores and must be one of 8, 16, 32, 64, "
                    "128, 256, 512, 1024, 2048, 4096");
}

TEST(LookupErrors, SizeBelowOrAboveTheRange) {
  EXPECT_TRUE(LookupErrorSays("v4-4", "(nearest: v4-8)"));
  EXPECT_TRUE(LookupErrorSays("v4-8192", "(nearest: v4-4096)"));
  EXPECT_TRUE(LookupErrorSays("v4-0", "(nearest: v4-8)"));
}

TEST(LookupErrors, ChipCountedFamiliesSayChips) {
  ExpectLookupError("v5litepod-2",
                    "\"v5litepod-2\" is not a v5litepod slice size (nearest: "
                    "v5litepod-1, v5litepod-4); the number counts chips and must be "
                    "one of 1, 4, 8, 16, 32, 64, 128, 256");
  // Users who count chips for v4 get told what the number means.
  EXPECT_TRUE(LookupErrorSays("v4-4", "the number counts TensorCores"));
}

TEST(LookupErrors, UnknownFamily) {
  ExpectLookupError("v7-8",
                    "unknown accelerator type \"v7-8\" (did you mean v2-8, v3-8 or "
                    "v4-8?); types are named v2-N, v3-N, v4-N, v5litepod-N, v5p-N, "
                    "v6e-N, tpu7x-N (see `tpufleet catalog`)");
}

TEST(LookupErrors, MalformedNames) {
  const std::string kNamed =
      "; types are named v2-N, v3-N, v4-N, v5litepod-N, v5p-N, v6e-N, tpu7x-N (see `tpufleet "
      "catalog`)";
  ExpectLookupError("tpu-v4-8", "unknown accelerator type \"tpu-v4-8\"" + kNamed);
  ExpectLookupError("", "unknown accelerator type \"\"" + kNamed);
  ExpectLookupError("v4", "unknown accelerator type \"v4\" (did you mean v4-8?)" + kNamed);
  ExpectLookupError(
      "V4-32", "unknown accelerator type \"V4-32\" (did you mean v4-32, v2-32 or v3-32?)" + kNamed);
  for (const char* bad : {"v4-", "v4--8", "v4-+8", "v4-8x", "v4-x8", "-8", "v4_8", "v4 8", "v4-8.0",
                          "v4-99999999999999999999"}) {
    Result<AcceleratorType> r = testing::BuiltinCatalog().Lookup(bad);
    ASSERT_FALSE(r.ok()) << bad << " resolved to " << r->name;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << bad;
  }
}

// ---- Lists, zones and prices.

TEST(Catalog, AllTypeNamesFamilyByFamilySizesAscending) {
  std::vector<std::string> names = testing::BuiltinCatalog().AllTypeNames();
  ASSERT_EQ(names.size(), 64u);
  EXPECT_EQ(names.front(), "v2-8");
  EXPECT_EQ(names[5], "v3-8");
  EXPECT_EQ(names[50], "v6e-256");
  EXPECT_EQ(names.back(), "tpu7x-16384");
  for (const std::string& n : names) {
    EXPECT_TRUE(testing::BuiltinCatalog().Lookup(n).ok()) << n;
  }
}

TEST(Catalog, AllZonesAndRuntimesHaveNoRepeats) {
  std::vector<std::string> zones = testing::BuiltinCatalog().AllZones();
  EXPECT_EQ(std::set<std::string>(zones.begin(), zones.end()).size(), zones.size());
  EXPECT_EQ(zones.front(), "us-central1-b");  // v2's preferred zone comes first
  EXPECT_NE(std::find(zones.begin(), zones.end(), "us-central2-b"), zones.end());
  EXPECT_NE(std::find(zones.begin(), zones.end(), "asia-northeast1-b"), zones.end());
  std::vector<std::string> runtimes = testing::BuiltinCatalog().AllRuntimeVersions();
  EXPECT_EQ(std::set<std::string>(runtimes.begin(), runtimes.end()).size(), runtimes.size());
  EXPECT_NE(std::find(runtimes.begin(), runtimes.end(), "v2-alpha-tpuv6e"), runtimes.end());
}

TEST(Catalog, V4IsOnlyInUsCentral2B) {
  EXPECT_EQ(testing::BuiltinCatalog().FindFamily("v4")->zones,
            std::vector<std::string>{"us-central2-b"});
}

TEST(RegionOfZone, DropsTheZoneLetter) {
  testing::ExpectEachGives(RegionOfZone, {{"us-central2-b", "us-central2"},
                                          {"europe-west4-a", "europe-west4"},
                                          {"asia-northeast1-b", "asia-northeast1"},
                                          {"nodash", "nodash"}});
}

TEST(PriceFor, ZoneSelectsItsRegion) {
  const Family& v6e = *testing::BuiltinCatalog().FindFamily("v6e");
  EXPECT_EQ(testing::BuiltinCatalog().PriceFor(v6e)->on_demand, 2.70);
  EXPECT_EQ(testing::BuiltinCatalog().PriceFor(v6e, "europe-west4-a")->on_demand, 2.97);
  EXPECT_EQ(testing::BuiltinCatalog().PriceFor(v6e, "asia-northeast1-b")->on_demand, 3.24);
  EXPECT_EQ(testing::BuiltinCatalog().PriceFor(v6e, "us-east5-b")->spot, 1.215);
  const Family& v4 = *testing::BuiltinCatalog().FindFamily("v4");
  EXPECT_EQ(testing::BuiltinCatalog().PriceFor(v4, "us-central2-b")->on_demand, 3.22);
  EXPECT_EQ(testing::BuiltinCatalog().PriceFor(v4, "us-central1-a"), nullptr);
}

TEST(SpotDiscountRange, SmallestAndLargestAcrossRegions) {
  auto v6e =
      testing::BuiltinCatalog().SpotDiscountRange(*testing::BuiltinCatalog().FindFamily("v6e"));
  ASSERT_TRUE(v6e.has_value());
  EXPECT_NEAR(v6e->first, 1 - 1.215 / 2.70, 1e-12);    // us-east5: 0.55
  EXPECT_NEAR(v6e->second, 1 - 0.5442 / 2.70, 1e-12);  // us-central1/us-east1: 0.79844...
  auto v4 =
      testing::BuiltinCatalog().SpotDiscountRange(*testing::BuiltinCatalog().FindFamily("v4"));
  ASSERT_TRUE(v4.has_value());
  EXPECT_NEAR(v4->first, 1 - 0.9215 / 3.22, 1e-12);  // one region: 0.7138...
  EXPECT_EQ(v4->first, v4->second);
}

// ---- Overrides laid over the built-in catalog.

constexpr std::string_view kUser = "/home/ana/.config/tpufleet/catalog.yaml";

Result<Catalog> Override(std::string_view yaml) {
  return ParseCatalog(yaml, kUser, testing::BuiltinCatalog());
}

TEST(Override, ChangesOnlyTheFieldsGiven) {
  Result<Catalog> c = Override(
      "families:\n"
      "  v4:\n"
      "    prices:\n"
      "      - {region: us-central2, on_demand: 2.50, source: \"our contract, 2026\"}\n");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  const Family* v4 = c->FindFamily("v4");
  ASSERT_NE(v4, nullptr);
  EXPECT_EQ(c->PriceFor(*v4)->on_demand, 2.50);
  EXPECT_EQ(c->PriceFor(*v4)->source, "our contract, 2026");
  EXPECT_FALSE(c->SpotDiscountRange(*v4).has_value());  // the new list has no spot price
  // Everything else about v4 stays.
  const Family* old = testing::BuiltinCatalog().FindFamily("v4");
  EXPECT_EQ(v4->sizes, old->sizes);
  EXPECT_EQ(v4->zones, old->zones);
  EXPECT_EQ(v4->hbm_gib_per_chip, 32);
  EXPECT_EQ(v4->api_type, "V4");
  EXPECT_EQ(v4->topologies, old->topologies);
  Result<AcceleratorType> t = c->Lookup("v4-32");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->chips, 16);
  ASSERT_TRUE(t->host.has_value());
  EXPECT_EQ(t->host->ram_gib, 407);
  // Other families and the base are untouched.
  EXPECT_EQ(c->PriceFor(*c->FindFamily("v6e"))->on_demand, 2.70);
  EXPECT_EQ(c->families().size(), testing::BuiltinCatalog().families().size());
  EXPECT_EQ(
      testing::BuiltinCatalog().PriceFor(*testing::BuiltinCatalog().FindFamily("v4"))->on_demand,
      3.22);
}

TEST(Override, ScalarFieldsAndZones) {
  Result<Catalog> c = Override(
      "families:\n"
      "  v5p:\n"
      "    zones: [us-east5-a]\n"
      "    runtime_versions: v2-alpha-tpuv5-new\n");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  const Family* v5p = c->FindFamily("v5p");
  EXPECT_EQ(v5p->zones, std::vector<std::string>{"us-east5-a"});
  EXPECT_EQ(v5p->runtime_versions, std::vector<std::string>{"v2-alpha-tpuv5-new"});
  EXPECT_EQ(v5p->hbm_gib_per_chip, 95);
}

TEST(Override, AddsACompleteNewFamily) {
  Result<Catalog> c = Override(testing::kNewFamilyV7x);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->families().size(), 8u);
  EXPECT_EQ(c->families().back().name, "v7x");
  Result<AcceleratorType> t = c->Lookup("v7x-16");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->chips, 16);
  EXPECT_EQ(t->workers, 4);
  EXPECT_EQ(t->topology, "2x2x4");
  ASSERT_TRUE(t->host.has_value());
  EXPECT_EQ(t->host->ram_gib, 960);
  EXPECT_EQ(c->Lookup("v7x-8")->workers, 2);  // above max_single_host_chips
  EXPECT_EQ(c->Lookup("v7x-4")->workers, 1);
  auto spot = c->SpotDiscountRange(*t->family);
  ASSERT_TRUE(spot.has_value());
  EXPECT_NEAR(spot->first, 0.6, 1e-12);  // 1 - 2.00/5.00
  // The built-in families are still there, and the new family's types are listed.
  EXPECT_TRUE(c->Lookup("v4-32").ok());
  std::vector<std::string> names = c->AllTypeNames();
  EXPECT_EQ(names.back(), "v7x-16");
}

TEST(Override, NewFamilyMissingAFieldNamesFileFieldAndFamily) {
  Result<Catalog> c = Override(
      "families:\n"
      "  v7x:\n"
      "    api_type: V7X\n"
      "    hbm_gib_per_chip: 192\n");
  EXPECT_EQ(c.status(),
            InvalidArgumentError(std::string(kUser) +
                                 ":3:5: families.v7x: family v7x has no sizes; a new family must "
                                 "give it"));
}

TEST(Override, EachRequiredFieldIsChecked) {
  // Drop one required line at a time from the complete family.
  for (const char* field :
       {"api_type", "sizes", "hbm_gib_per_chip", "runtime_versions", "zones", "prices"}) {
    std::string yaml;
    bool skipping = false;
    for (const std::string& line : Split(testing::kNewFamilyV7x, '\n')) {
      bool top = line.size() > 4 && line[4] != ' ';
      if (top) {
        skipping = StartsWith(line, std::string("    ") + field + ":");
      }
      // "topologies" must go with "sizes", which it refers to.
      if (!skipping && !(std::string(field) == "sizes" && StartsWith(line, "    topologies:"))) {
        yaml += line + "\n";
      }
    }
    Result<Catalog> c = Override(yaml);
    ASSERT_FALSE(c.ok()) << field;
    EXPECT_NE(c.status().message().find("family v7x has no " + std::string(field)),
              std::string::npos)
        << c.status().message();
    EXPECT_TRUE(StartsWith(c.status().message(), std::string(kUser) + ":")) << field;
  }
}

TEST(Override, MalformedYamlGivesFileLineAndColumn) {
  Result<Catalog> c = Override("families:\n  v4:\n    prices: [\n      {region: x\n");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
  // "<file>:<line>:<col>: not valid YAML: ..."
  std::string m = c.status().message();
  ASSERT_TRUE(StartsWith(m, std::string(kUser) + ":")) << m;
  std::vector<std::string> parts = Split(m.substr(kUser.size() + 1), ':');
  ASSERT_GE(parts.size(), 3u) << m;
  long long line = 0;
  long long col = 0;
  EXPECT_TRUE(ParseInt(parts[0], &line)) << m;
  EXPECT_TRUE(ParseInt(parts[1], &col)) << m;
  EXPECT_GE(line, 3) << m;
  EXPECT_EQ(parts[2], " not valid YAML") << m;
}

TEST(Override, UnknownFieldSuggestsTheRightOne) {
  Result<Catalog> c = Override("families:\n  v4:\n    price: 2.5\n");
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(StartsWith(c.status().message(), std::string(kUser) +
                                                   ":3:5: families.v4.price: unknown field (did "
                                                   "you mean prices?); expected one of: "))
      << c.status().message();
  Result<Catalog> root = Override("familes:\n  v4: {}\n");
  EXPECT_TRUE(StartsWith(root.status().message(), std::string(kUser) +
                                                      ":1:1: familes: unknown field (did you mean "
                                                      "families?)"))
      << root.status().message();
}

TEST(Override, BadValuesAreRejectedWithTheirPlace) {
  struct Case {
    const char* yaml;
    const char* want;  // the message after "<file>:"
  };
  const Case cases[] = {
      {"families:\n  v4:\n    sizes: [16, 8]\n",
       "3:17: families.v4.sizes[1]: sizes must be listed in increasing order"},
      {"families:\n  v4:\n    sizes: [8, 0]\n",
       "3:16: families.v4.sizes[1]: expected a whole number above zero"},
      {"families:\n  v4:\n    hbm_gib_per_chip: 0\n",
       "3:23: families.v4.hbm_gib_per_chip: expected a size above zero in GiB"},
      {"families:\n  v4:\n    suffix: cores\n",
       "3:13: families.v4.suffix: expected tensor_cores or chips (what the number in the type "
       "name counts)"},
      {"families:\n  v4:\n    prices:\n      - {region: us-central2, on_demand: 0, source: s}\n",
       "4:42: families.v4.prices[0].on_demand: expected a price above zero (USD per chip-hour)"},
      {"families:\n  v4:\n    prices:\n"
       "      - {region: us-central2, on_demand: 1, spot: 2, source: s}\n",
       "4:51: families.v4.prices[0].spot: expected a spot price above zero and at most the "
       "on-demand price"},
      {"families:\n  v4:\n    prices:\n      - {region: us-central2, on_demand: 1}\n",
       "4:9: families.v4.prices[0].source: this field is required"},
      {"families:\n  v3:\n    hosts:\n"
       "      - {chips_per_worker: 4, slices: some, machine_type: m, vcpus: 1, ram_gib: 1}\n",
       "4:39: families.v3.hosts[0].slices: expected single_host, multi_host or any"},
      {"families:\n  v4:\n    topologies: {8: 2x2x1, x: 2x2}\n",
       "3:28: families.v4.topologies.x: expected a slice size (a whole number) as the key"},
      {"families:\n  v4:\n    topologies: {8: 2x2x1, 24: 2x2x3}\n",
       "3:5: families.v4: topology given for v4-24, which is not one of its sizes"},
      {"families:\n  v4:\n    sizes: [8, 12]\n",
       "3:5: families.v4: size 12 of family v4 does not divide into whole chips and workers"},
      {"families:\n  v4:\n    sizes: [8, 16]\n",  // the old topologies name v4-32 and up
       "3:5: families.v4: topology given for v4-32, which is not one of its sizes"},
      {"families: [v4]\n", "1:11: families: expected a mapping, found a list"},
  };
  for (const Case& c : cases) {
    Result<Catalog> r = Override(c.yaml);
    EXPECT_EQ(r.status(), InvalidArgumentError(std::string(kUser) + ":" + c.want)) << c.yaml;
  }
}

// Overrides are keyed by the family's API name; an alias starts a new family, which
// must then be complete.
TEST(Override, AliasUpdatesTheFamily) {
  // "v5e:" is how users name v5litepod; it must update that family, not start a new one.
  Result<Catalog> c = Override("families:\n  v5e:\n    hbm_gib_per_chip: 24\n");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->families().size(), testing::BuiltinCatalog().families().size());
  EXPECT_EQ(c->FindFamily("v5litepod")->hbm_gib_per_chip, 24);
  EXPECT_EQ(c->FindFamily("v5litepod")->sizes,
            testing::BuiltinCatalog().FindFamily("v5litepod")->sizes);
}

TEST(Override, EmptyFamiliesChangesNothing) {
  Result<Catalog> c = Override("families: {}\n");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->AllTypeNames(), testing::BuiltinCatalog().AllTypeNames());
}

TEST(Override, EmptyFileIsAnError) {
  EXPECT_EQ(Override("# nothing yet\n").status(),
            InvalidArgumentError(std::string(kUser) + ": the file is empty"));
}

TEST(ParseCatalog, BuiltinParsesOnItsOwn) {
  Result<Catalog> c = ParseCatalog(BuiltinCatalogYaml(), "built-in catalog");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->families().size(), 7u);
  // A lone family must be complete: with an empty base, "v4: {prices: …}" is new.
  Result<Catalog> partial = ParseCatalog(
      "families:\n  v4:\n    prices:\n      - {region: r, on_demand: 1, source: s}\n", "x.yaml");
  EXPECT_EQ(partial.status(),
            InvalidArgumentError("x.yaml:3:5: families.v4: family v4 has no api_type; a new "
                                 "family must give it"));
}

}  // namespace
}  // namespace tpufleet
