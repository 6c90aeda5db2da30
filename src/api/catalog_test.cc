// The catalog, estimate and validate wire types encoded from fixed values and compared
// with their golden files in src/api/testdata/ (TPUFLEET_UPDATE_GOLDEN=1 rewrites them:
// see api/testing/golden.h).
#include "api/catalog.h"

#include <gtest/gtest.h>

#include "api/testing/golden.h"

namespace tpufleet::api {
namespace {

using api_testing::ExpectGolden;

FamilyFacts V4() {
  FamilyFacts f;
  f.family = "v4";
  f.generation = "TPU v4";
  f.api_type = "V4";
  f.suffix_counts = "tensor_cores";
  f.hbm_gib_per_chip = 32;
  f.hbm_gib_per_device = 32;
  f.runtime_versions = {"tpu-ubuntu2204-base", "tpu-vm-v4-base"};
  f.zones = {"us-central2-b"};
  f.source = "cloud.google.com/tpu/pricing (2026-01)";
  f.price_per_chip_hour = 3.22;
  f.price_region = "us-central2";
  f.spot_discount_min = 0.6;
  f.spot_discount_max = 0.7;
  return f;
}

// A family the catalog has no price or host shape for.
FamilyFacts Unpriced() {
  FamilyFacts f;
  f.family = "v9x";
  f.generation = "TPU v9x";
  f.api_type = "V9X";
  f.suffix_counts = "chips";
  f.hbm_gib_per_chip = 192;
  f.devices_per_chip = 2;
  f.hbm_gib_per_device = 96;
  f.runtime_versions = {"v9x-base"};
  f.zones = {"us-central1-ai1a"};
  f.source = "a test";
  f.price_note = "not published";
  return f;
}

TEST(ApiJson, CatalogFamilies) {
  std::vector<CatalogFamily> families = {{V4(), {8, 16}, {"v4-8", "v4-16"}},
                                         {Unpriced(), {4}, {"v9x-4"}}};
  ExpectGolden("src/api/testdata/catalog_families.json", ToJson(families) + "\n");
}

TEST(ApiJson, CatalogType) {
  CatalogType t;
  t.facts = V4();
  t.type = "v4-32";
  t.chips = 16;
  t.workers = 4;
  t.chips_per_worker = 4;
  t.tensor_cores = 32;
  t.devices = 16;
  t.topology = "2x2x4";
  t.hbm_gib_total = 512;
  t.host_machine_type = "ct4p-hightpu-4t";
  t.host_vcpus_per_worker = 240;
  t.host_ram_gib_per_worker = 407;
  t.host_ram_gib_total = 1628;
  t.default_runtime_version = "tpu-ubuntu2204-base";
  t.price = TypePrice{51.52, 15.456, 20.608};
  ExpectGolden("src/api/testdata/catalog_type.json", ToJson(t) + "\n");
}

TEST(ApiJson, CatalogTypeWithoutPriceOrHost) {
  CatalogType t;
  t.facts = Unpriced();
  t.type = "v9x-4";
  t.chips = 4;
  t.workers = 1;
  t.chips_per_worker = 4;
  t.tensor_cores = 8;
  t.devices = 8;
  t.hbm_gib_total = 768;
  t.default_runtime_version = "v9x-base";
  ExpectGolden("src/api/testdata/catalog_type_unpriced.json", ToJson(t) + "\n");
}

TEST(ApiJson, Estimate) {
  Estimate e{"v4-32", 2, 1.5, 32, "us-central2", 3.22, 103.04, 154.56, std::nullopt,
             std::nullopt};
  ExpectGolden("src/api/testdata/estimate.json", ToJson(e) + "\n");
  e.spot_min_usd = 46.368;
  e.spot_max_usd = 61.824;
  ExpectGolden("src/api/testdata/estimate_spot.json", ToJson(e) + "\n");
}

TEST(ApiJson, ValidateReport) {
  ValidateReport r;
  r.fleet = "lab";
  r.provider = "gcp-tpu";
  r.project = "lab-project";
  ValidatedNode trainer;
  trainer.name = "trainer";
  trainer.names = {"trainer-0", "trainer-1"};
  trainer.type = "v4-32";
  trainer.count = 2;
  trainer.chips = 16;
  trainer.workers = 4;
  trainer.capacity = "spot";
  trainer.queued = true;
  trainer.queued_valid_until_seconds = 7200;
  trainer.zones = {"us-central2-b"};
  trainer.runtime_version = "tpu-ubuntu2204-base";
  trainer.usd_per_hour = 103.04;
  trainer.price_region = "us-central2";
  trainer.ttl_seconds = 86400;
  trainer.idle = ValidatedNode::Idle{7200, "delete"};
  trainer.spot_fallback = ValidatedNode::SpotFallback{3, 3600};
  ValidatedNode lab;
  lab.name = "lab";
  lab.names = {"lab"};
  lab.workers = 2;
  lab.hosts = std::vector<std::string>{"gpu1.lab.example", "10.1.2.3"};
  r.nodes = {trainer, lab};
  r.usd_per_hour = 103.04;
  r.usd_per_day = 2472.96;
  r.budget = ValidatedBudget{1600, std::nullopt, "delete-spot"};
  r.prometheus_port = 9431;
  r.warnings = {"at on-demand prices the fleet costs $2,472.96 a day, more than its budget"};
  ExpectGolden("src/api/testdata/validate_report.json", ToJson(r) + "\n");
}

// `plan`: a priced type whose chip is two devices, a replica sharded over two of them,
// and a type the catalog has no price for.
TEST(ApiJson, Plan) {
  std::vector<PlanOption> options = {
      {.type = "v3-8", .family = "v3", .chips = 4, .workers = 1, .devices = 8,
       .devices_per_chip = 2, .hbm_gib_per_device = 16, .devices_per_replica = 2,
       .chips_per_replica = 1, .sharded = true, .layout = "1 replica on 2 devices (sharded)",
       .replicas_that_fit = 4, .host_ram_gib_per_worker = 340, .usd_per_hour = 8.8},
      {.type = "v9x-4", .family = "v9x", .chips = 4, .workers = 1, .devices = 4,
       .hbm_gib_per_device = 96, .chips_per_replica = 1, .layout = "1 replica per device",
       .replicas_that_fit = 4, .host_ram_gib_per_worker = 200,
       .usd_per_hour = std::nullopt}};
  ExpectGolden("src/api/testdata/plan.json", ToJson(options) + "\n");
  EXPECT_EQ(ToJson(std::vector<PlanOption>{}), "[]");  // no type fits
}

}  // namespace
}  // namespace tpufleet::api
