// The built-in catalog, parsed once, for core's tests.
#pragma once

#include <gtest/gtest.h>

#include "core/catalog.h"

namespace tpufleet::testing {

inline const Catalog& BuiltinCatalog() {
  static const Catalog* catalog = [] {
    Result<Catalog> c = ParseCatalog(BuiltinCatalogYaml(), "built-in catalog");
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return new Catalog(c.ok() ? std::move(c).value() : Catalog());
  }();
  return *catalog;
}

}  // namespace tpufleet::testing
