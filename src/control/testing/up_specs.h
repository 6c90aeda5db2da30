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

// Fleet "lab" of ssh-hosts: node `name` on `hosts` machines (198.18.0.10, .11, …) that
// ops logs in to, `more` appended; the machines are put in `t`'s fake cloud.
inline FleetSpec SshHostsSpec(TestWorld& t, const std::string& name, int hosts,
                              const std::string& more = "") {
  CreateNodeRequest machines;
  machines.node_id = name;
  machines.type = "v4-" + std::to_string(8 * hosts);  // the fake's way to give it N workers
  t.cloud.AddNode(machines);
  std::string list;
  for (int i = 0; i < hosts; ++i) {
    list += (i ? ", 198.18.0." : "198.18.0.") + std::to_string(10 + i);
  }
  return t.Spec("fleet: lab\nprovider: ssh-hosts\nnodes:\n  - name: " + name +
                "\n    hosts: [" + list + "]\n    ssh_user: ops\n" + more);
}

}  // namespace tpufleet::testing
