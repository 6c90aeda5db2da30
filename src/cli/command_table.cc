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
       "attributes, runs the spec's setup script once on every worker (again when it is\n"
       "edited), and writes SSH names\n"
        "(NODE for worker 0, NODE-wN) included from ~/.ssh/config if it is yours: with another\n"
        "user's HOME (sudo) that is refused unless TPUFLEET_SSH_INCLUDE=force (the file stays\n"
        "theirs); TPUFLEET_SSH_INCLUDE=off never edits it. Running it again changes nothing\n"
        "when nothing changed; after an interruption (even kill -9) it carries on, first in\n"
        "the zone it had asked, with the same request id. What a failed create left behind is\n"
        "deleted, or remembered as a leftover that up and down delete first. Nodes with the\n"
        "fleet's label that tpufleet has no record of are reported, untouched.\n"
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
       "(spot: at most). Leftovers (what failed creates left, still to delete) are listed\n"
       "with their cost; --refresh also reports nodes in the zones it lists that carry a\n"
       "fleet's label but have no record (untracked).",
       {{"refresh", "", "ask the cloud first"},
        {"workers", "", "list every worker's SSH name and address"}},
       true, RunStatus},
      {"down", "Delete nodes (and their queued resources) and their SSH names",
       "NODE... | --all [--yes]",
       "Deletes the leftovers of failed creates (without asking), then the nodes in the\n"
       "cloud, waits until they are gone, and forgets them. Nodes of the ssh-hosts provider\n"
       "are only forgotten; the machines are untouched. Asks for confirmation on a\n"
       "terminal; elsewhere --yes is required.",
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
      {"exec", "Run a command on every worker of nodes at once",
       "TARGET... [--group] [--fail-fast] [--timeout D] -- COMMAND [ARG...]",
       "TARGET: a node (all its workers), NODE:3, NODE:1-3,5, a label selector such as\n"
       "team=a (or team=a,role=train: all must match), or all. Connects to every worker at\n"
       "once over SSH (tpufleet's key, the host keys pinned by up), runs the command, and\n"
       "prints each line as it arrives prefixed with its worker ([pod/w3]; a line over 64 KiB\n"
       "in pieces); --group folds identical outputs into one block under the workers that\n"
       "printed them. --group and --json keep 1 MiB of each worker and 64 MiB in all, and\n"
       "say what they left out. The command and its arguments reach the worker exactly as\n"
       "typed (each word quoted once): for pipes, && or globs, pass a shell, e.g.\n"
       "-- bash -c 'nproc && ls ~'. Ctrl-C, --fail-fast and --timeout stop the command on\n"
       "the workers, not just here. Ends with the workers that failed (exit code,\n"
       "unreachable, timeout, refused key, changed host key). Exit status: 0 when every\n"
       "worker exited 0, 1 otherwise, 130 on Ctrl-C.",
       {{"group", "", "fold identical outputs into one block per output"},
        {"fail-fast", "", "stop every worker as soon as one fails"},
        {"timeout", "D", "stop a worker's command after D, e.g. 10m (default: no limit)"},
        {"connect-timeout", "D", "give up on a worker not logged in after D (default 10s)"},
        {"fanout", "N", "at most N workers connecting or running at once (default 1024)"}},
       true, RunExec},
      {"cp", "Copy files and directories to every worker at once, or back",
       "SOURCE... TARGET:PATH | TARGET:PATH LOCAL [--no-relay]",
       "To workers: cp ./src pod:~/code (a directory is sent as a tar and unpacked there),\n"
       "cp data.bin all:/tmp/ (a trailing / or an existing directory takes the file inside).\n"
       "TARGET is what exec takes: all, NODE, NODE:3, NODE:1-3,5, key=value. From workers:\n"
       "cp pod:3:~/out.zarr . from one worker, or cp pod:~/log.txt ./logs from several, each\n"
       "into ./logs/NODE-wN/. Files arrive under a temporary name and are renamed once their\n"
       "size is checked. A file of 16 MiB or more to 4 or more workers goes through a relay\n"
       "chain (each worker forwards it to the next over TCP, with python3 there), so this\n"
       "machine sends it once. Each copy's chain has a random key (given to the hops on\n"
       "stdin) that every connection proves before data flows, and each worker checks the\n"
       "source's SHA-256 before the file takes its name; any worker the chain missed gets it\n"
       "directly over SSH, and a connection that fails the key or a wrong digest is printed\n"
       "as a SECURITY event. --no-relay sends to each worker directly. Exit status: 0 when\n"
       "every worker has every file and nothing was reported, 1 otherwise.",
       {{"no-relay", "", "send to every worker directly over SSH"},
        {"connect-timeout", "D", "give up on a worker not logged in after D (default 10s)"}},
       true, RunCopy},
      {"ssh", "Log in to one worker, or run a command there, with OpenSSH",
       "NODE[:N] [-- COMMAND [ARG...]]",
       "Replaces tpufleet with the system's ssh, given tpufleet's ssh config (the fleet key\n"
       "and the host keys pinned by up) with -F: `ssh NODE-wN`, whether or not ~/.ssh/config\n"
       "includes that file. NODE alone is worker 0; NODE:N is worker N; a label selector\n"
       "(team=a) works when it names one worker. Without a command: a login shell. With one\n"
       "after `--`: its words reach the worker exactly as typed (each quoted once), with a\n"
       "terminal when tpufleet has one; for pipes or globs pass a shell, e.g.\n"
       "-- bash -c 'ls ~ | wc -l'. Exit status: the command's, or 255 when ssh failed.",
       {}, false, RunSsh},
      {"forward", "Forward a local port to a port on one worker (TensorBoard, Jupyter)",
       "NODE[:N] PORT[:LOCAL]",
       "Runs `ssh -N -L` with tpufleet's ssh config: connections to 127.0.0.1:LOCAL on this\n"
       "machine reach localhost:PORT on the worker (NODE alone is worker 0). LOCAL defaults\n"
       "to PORT when that is free here, else to a free port. Prints the local URL once the\n"
       "forward works (--json: url, local_port, remote_port and worker on one line) and\n"
       "runs until Ctrl-C or SIGTERM; ssh's own messages (\"connect failed\" while nothing\n"
       "listens on PORT yet) appear on stderr. Only this machine can use the local port.\n"
       "Exit status: 0 when stopped, 1 when ssh could not forward or the connection ended,\n"
       "130 when stopped before the forward worked.",
       {}, true, RunForward},
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
