// The table of subcommands: what `tpufleet help` lists, in this order.
#include "cli/command.h"

namespace tpufleet::cli {

namespace {

std::vector<Command>& Table() {
  static std::vector<Command> table = {
      {"catalog", "Show the accelerator families, or what one type is and costs", "[TYPE]",
       "Without TYPE: one line per family (sizes, HBM per chip, host RAM, price, zones).\n"
       "With TYPE (e.g. v4-32, v5litepod-16, v6e-256): chips, worker VMs, chips per worker,\n"
       "TensorCores, topology, HBM and host RAM, runtime versions, zones, and the price per\n"
       "hour on demand and on spot. Prices are list prices per chip-hour in the family's\n"
       "reference region; see data/catalog.yaml for sources and dates.",
       {}, true, RunCatalog},
      {"estimate", "Estimate what N slices of a type cost for some hours",
       "TYPE --hours H [--count N] [--spot] [--zone ZONE]",
       "On-demand cost = chips x price per chip-hour x hours x count, at the list price of\n"
       "ZONE's region (default: the family's reference region). With --spot, also the range\n"
       "that the family's spot discounts give (spot prices vary by region and move).",
       {{"hours", "H", "how long the slices run (hours, may be fractional)"},
        {"count", "N", "how many slices (default 1)"},
        {"spot", "", "also give the spot price range"},
        {"zone", "ZONE", "price in this zone's region"}},
       true, RunEstimate},
      {"plan", "Find the TPU types that fit a model, cheapest first",
       "--hbm-gib X --host-ram-gib Y [--replicas N] [--max-usd-per-hour P]",
       "A replica needs X GiB of accelerator memory: one chip when X fits in one chip's HBM,\n"
       "else ceil(X / HBM per chip) chips of one slice. N replicas run at once, so a type\n"
       "fits when it has N x that many chips and every worker VM has at least Y GiB of host\n"
       "RAM. Lists every fitting type by on-demand price per hour (reference region), and\n"
       "says for each family with no fit why not (HBM, host RAM, or price).",
       {{"hbm-gib", "X", "accelerator memory one replica needs, GiB"},
        {"host-ram-gib", "Y", "host RAM each worker needs, GiB (default 0)"},
        {"replicas", "N", "replicas running at once (default 1)"},
        {"max-usd-per-hour", "P", "leave out types costing more than P per hour"}},
       true, RunPlan},
      {"validate", "Check a fleet spec and show what `up` would ask for", "FLEET.yaml",
       "Checks every field of the spec (see docs/fleet-spec.md): types, zones that offer\n"
       "them, runtime versions, capacity, durations, users and keys. An error names the file,\n"
       "line, column and field, what was expected, and the nearest valid value. When the spec\n"
       "is valid, prints each node's slices, capacity, zones in order, runtime version and\n"
       "on-demand cost per hour, the fleet's cost per hour and per day, and a warning when\n"
       "that exceeds budget.usd_per_day. Changes nothing. Exit status: 0 valid, 1 not.",
       {}, true, RunValidate},
  };
  return table;
}

}  // namespace

const std::vector<Command>& Commands() { return Table(); }

void AddCommands(std::vector<Command> commands) {
  for (Command& c : commands) {
    Table().push_back(std::move(c));
  }
}

}  // namespace tpufleet::cli
