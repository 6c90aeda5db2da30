// The fleet specs control's up tests share.
#pragma once

#include <string>

#include "control/testing/test_world.h"

namespace tpufleet::testing {

// Fleet "lab": a spot v4-32 (4 workers) named trainer, zone b before zone a, and `more`
// appended (more fields of trainer, or more nodes).
inline std::string Trainer(const std::string& more = "") {
  return std::string("fleet: lab\nproject: ") + kProject +
         "\nnodes:\n"
         "  - name: trainer\n"
         "    type: v4-32\n"
         "    zones: [us-central2-b, us-central2-a]\n"
         "    capacity: spot\n" +
         more;
}

// A v4-8 node entry (one worker) for Trainer(): `name`, in zones b then a.
inline std::string SmallNode(const std::string& name, const std::string& more = "") {
  return "  - name: " + name + "\n    type: v4-8\n    zones: [us-central2-b, us-central2-a]\n" +
         more;
}

}  // namespace tpufleet::testing
