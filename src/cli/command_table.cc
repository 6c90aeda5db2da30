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
      {"up", "Bring a fleet to its spec: create, wait, pin keys, set up, write SSH names",
       "FLEET.yaml [--dry-run] [--timeout D]",
       "Creates every node of the spec that does not exist, in the first candidate zone that\n"
       "has capacity (zones that stocked out in the last hour go last), directly or as a\n"
       "queued resource. Preempted spot nodes are deleted and made again. Waits until every\n"
       "worker is READY and accepts SSH, pins each worker's host key from the node's guest\n"
       "attributes, runs the spec's setup script once on every worker, and writes SSH names\n"
       "(NODE for worker 0, NODE-wN) included from ~/.ssh/config. Running it again changes\n"
       "nothing when nothing changed; after an interruption (even kill -9) it carries on.\n"
       "--dry-run prints what would be created and its price per hour, changing nothing.\n"
       "Exit status: 0 when every node is ready, 1 otherwise.",
       {{"dry-run", "", "show the plan and its price; change nothing"},
        {"timeout", "D", "longest wait for one node, e.g. 45m (default 30m)"}},
       true, RunUp},
      {"status", "Show nodes, their state, workers, age and cost so far", "[NODE...] [--refresh]",
       "From local state by default (no network). --refresh asks the cloud about every zone\n"
       "the nodes are in (concurrently), records what changed (state, addresses,\n"
       "preemptions) and rewrites the SSH names. With NODE names or --workers, also lists\n"
       "each worker's SSH name and address. Cost so far is at list prices since creation\n"
       "(spot: at most).",
       {{"refresh", "", "ask the cloud first"},
        {"workers", "", "list every worker's SSH name and address"}},
       true, RunStatus},
      {"down", "Delete nodes (and their queued resources) and their SSH names",
       "NODE... | --all [--yes]",
       "Deletes the nodes in the cloud, waits until they are gone, and forgets them. Nodes of\n"
       "the ssh-hosts provider are only forgotten; the machines are untouched. Asks for\n"
       "confirmation on a terminal; elsewhere --yes is required.",
       {{"all", "", "every node tpufleet tracks"}, {"yes", "", "do not ask for confirmation"}},
       true, RunDown},
      {"import", "Adopt nodes made elsewhere (gcloud, console) into tpufleet",
       "--project P --zones Z1[,Z2] [NODE...] [--fleet NAME] [--provider gcp-tpu|emulator]",
       "Finds the nodes in the zones (all of them, or the named ones), adds tpufleet's key to\n"
       "their ssh-keys (keeping the others), pins their host keys and writes SSH names, so\n"
       "status, ssh and exec work on them. Nothing is created or deleted.",
       {{"project", "P", "GCP project id"},
        {"zones", "Z1,Z2", "zones to look in"},
        {"fleet", "NAME", "the fleet they join (default imported)"},
        {"provider", "NAME", "gcp-tpu (default) or emulator"}},
       true, RunImport},
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
