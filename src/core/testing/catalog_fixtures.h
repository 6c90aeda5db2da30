// Catalog documents shared by the tests of core and cli.
#pragma once

#include <gtest/gtest.h>

#include <string_view>
#include <utility>

#include "core/catalog.h"

namespace tpufleet::testing {

// The built-in catalog, parsed once (an empty one, and a test failure, if it does not parse).
inline const Catalog& BuiltinCatalog() {
  static const Catalog* catalog = [] {
    Result<Catalog> c = ParseCatalog(BuiltinCatalogYaml(), "built-in catalog");
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return new Catalog(c.ok() ? std::move(c).value() : Catalog());
  }();
  return *catalog;
}

// A made-up family, complete, as a user would add one before tpufleet knows it.
inline constexpr std::string_view kNewFamilyV7x =
    "families:\n"
    "  v7x:\n"
    "    generation: TPU v7x (test)\n"
    "    api_type: V7X\n"
    "    suffix: chips\n"
    "    chips_per_worker: 4\n"
    "    max_single_host_chips: 4\n"
    "    sizes: [4, 8, 16]\n"
    "    topologies: {4: 2x2x1, 8: 2x2x2, 16: 2x2x4}\n"
    "    hbm_gib_per_chip: 192\n"
    "    hosts:\n"
    "      - {chips_per_worker: 4, machine_type: tpu7x-standard-4t, vcpus: 224, ram_gib: 960}\n"
    "    runtime_versions: [v2-alpha-tpu7x]\n"
    "    zones: [us-central1-c]\n"
    "    prices:\n"
    "      - {region: us-central1, on_demand: 5.00, spot: 2.00, source: test}\n";

}  // namespace tpufleet::testing
