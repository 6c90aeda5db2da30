// libFuzzer target for the fleet spec parser: on any bytes, ParseFleetSpec returns a
// FleetSpec that keeps its promises or one InvalidArgument naming the document; it
// never crashes, throws, hangs or runs out of memory. Run it as fuzz/README.md says.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "core/catalog.h"
#include "core/fleet_spec.h"
#include "util/strings.h"

namespace {

using tpufleet::FleetSpec;
using tpufleet::NodeSpec;

const tpufleet::Catalog& BuiltinCatalog() {
  static const tpufleet::Catalog* catalog = [] {
    auto c = tpufleet::ParseCatalog(tpufleet::BuiltinCatalogYaml(), "built-in catalog");
    if (!c.ok()) {
      std::abort();
    }
    return new tpufleet::Catalog(std::move(*c));
  }();
  return *catalog;
}

// What `up` relies on in a spec that parsed; abort() makes a broken promise a crash.
void CheckPromises(const FleetSpec& spec, const tpufleet::Catalog& catalog) {
  auto require = [](bool ok) {
    if (!ok) {
      std::abort();
    }
  };
  require(tpufleet::CheckNodeName(spec.name).ok());
  require(!spec.nodes.empty());
  for (const NodeSpec& node : spec.nodes) {
    require(node.count >= 1 && node.count <= tpufleet::kMaxCount);
    require(node.names.size() == static_cast<size_t>(node.count));
    for (const std::string& name : node.names) {
      require(tpufleet::CheckNodeName(name).ok());
    }
    for (const auto& user : tpufleet::UsersOn(spec, node)) {
      require(tpufleet::CheckUserName(user.name).ok() && !user.keys.empty());
    }
    if (spec.provider == tpufleet::Provider::kSshHosts) {
      require(!node.hosts.empty() && node.workers == static_cast<int>(node.hosts.size()));
      continue;
    }
    auto type = catalog.Lookup(node.type);
    require(type.ok() && type->name == node.type && type->workers == node.workers);
    require(!node.zones.empty() && !node.runtime_version.empty());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const tpufleet::Catalog& catalog = BuiltinCatalog();
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto spec = tpufleet::ParseFleetSpec(text, "fuzz.yaml", catalog);
  if (spec.ok()) {
    CheckPromises(*spec, catalog);
  } else if (spec.status().code() != tpufleet::StatusCode::kInvalidArgument ||
             !tpufleet::StartsWith(spec.status().message(), "fuzz.yaml")) {
    std::abort();  // every failure is the user's input, and names the document
  }
  return 0;
}
