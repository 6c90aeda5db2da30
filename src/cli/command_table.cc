// The table of subcommands: what `tpufleet help` lists, in this order.
#include "cli/app.h"
#include "cli/invite_command.h"

namespace tpufleet::cli {

std::vector<Command> CliCommands() {
  std::vector<Command> table = {
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
       {{"hours", "H", "how long the slices run (hours, may be fractional; at most 876000)"},
        {"count", "N", "how many slices (default 1)"},
        {"spot", "", "also give the spot price range"},
        {"zone", "ZONE", "price in this zone's region"}},
       true, RunEstimate},
      {"plan", "Find the TPU types that fit a model, cheapest first",
       "--hbm-gib X [--host-ram-gib Y] [--replicas N] [--shardable] [--all] "
       "[--max-usd-per-hour P]",
       "Reasons in devices as JAX sees them: one per TensorCore on v2, v3 and tpu7x (8, 16\n"
       "and 96 GiB), one per chip on v4 and v5p (megacore: 32, 95 GiB), v5e and v6e (16, 32\n"
       "GiB). A replica needs X GiB of accelerator memory: one device when X fits in one;\n"
       "else, with --shardable, ceil(X / HBM per device) devices of one slice, and without\n"
       "it the family does not fit. N replicas run at once, so a type fits when its devices\n"
       "hold N replicas and every worker VM has at least Y GiB of host RAM. Lists the\n"
       "smallest fitting slice of each family (--all: every fitting size) by on-demand\n"
       "price per hour (reference region), says per row how a replica is laid out, and for\n"
       "each family with no fit why not (HBM, host RAM, or price).",
       {{"hbm-gib", "X", "accelerator memory one replica needs, GiB"},
        {"host-ram-gib", "Y", "host RAM each worker needs, GiB (default 0)"},
        {"replicas", "N", "replicas running at once (default 1)"},
        {"shardable", "", "a replica may be split over several devices"},
        {"all", "", "list every fitting size, not only the smallest per family"},
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
       "FLEET.yaml [--dry-run] [--timeout D] [--yes]",
       "Creates every node of the spec that does not exist, in the first candidate zone that\n"
       "has capacity (zones that stocked out in the last hour go last), directly or as a\n"
       "queued resource. Preempted spot nodes are deleted and made again. Waits until every\n"
       "worker is READY and accepts SSH, pins each worker's host key from the node's guest\n"
       "attributes (ssh-hosts: from your known_hosts, else the key the host offers once you\n"
       "confirm its fingerprint at the terminal, or with --yes; a key that then fails\n"
       "verification fails that node at once), runs the spec's setup script once on every\n"
       "worker (again when it is edited), and writes SSH names\n"
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
        {"timeout", "D", "longest wait for one node, e.g. 45m (default 30m)"},
        {"yes", "", "pin ssh-hosts host keys missing from known_hosts without asking"}},
       true, RunUp, false, /*positional_input_bytes=*/kMaxSpecBytes},
      {"status", "Show nodes, their state, workers, age and cost so far", "[NODE...] [--refresh]",
       "From local state by default (the cloud is not asked). --refresh asks the cloud about\n"
       "every zone the nodes are in (concurrently), records what changed (state, addresses,\n"
       "preemptions) and rewrites the SSH names. With NODE names or --workers, also lists\n"
       "each worker's SSH name and address. Cost so far is at list prices since creation\n"
       "(spot: at most). Leftovers (what failed creates left, still to delete) are listed\n"
       "with their cost; --refresh also reports nodes in the zones it lists that carry a\n"
       "fleet's label but have no record (untracked). The VERDICT column (busy, input-bound,\n"
       "straggler, idle, quiet; see `tpufleet top`) asks the agents of the nodes that have\n"
       "one, at most 1.5 s; a node that does not answer so soon is unknown. --json asks no\n"
       "agent.",
       {{"refresh", "", "ask the cloud first"},
        {"workers", "", "list every worker's SSH name and address"}},
       true, RunStatus},
      {"down", "Delete nodes (and their queued resources) and their SSH names",
       "NODE... | --all [--yes]",
       "Deletes the leftovers of failed creates (without asking), then the nodes in the\n"
       "cloud, waits until they are gone, and forgets them. Nodes of the ssh-hosts provider\n"
       "are only forgotten; the machines are untouched. Asks for confirmation on a\n"
       "terminal; elsewhere (and through a team server) --yes is required. Through a team\n"
       "server, an admin deletes the nodes of their fleets; --all: those of every fleet\n"
       "they administer (docs/serve.md).",
       {{"all", "", "every node tpufleet tracks"}, {"yes", "", "do not ask for confirmation"}},
       true, RunDown},
      {"import", "Adopt nodes made elsewhere (gcloud, console) into tpufleet",
       "--project P --zones Z1[,Z2] [NODE...] [--fleet NAME] [--provider gcp-tpu|emulator]",
       "Finds the nodes in the zones (all of them, or the named ones), adds tpufleet's key to\n"
       "their ssh-keys (keeping the others), pins their host keys and writes SSH names, so\n"
       "status, ssh and exec work on them. Nothing is created or deleted. Through a team\n"
       "server, only its operator may: it uses the server's cloud credentials.",
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
       "-- bash -c 'ls ~ | wc -l'. The config reaches a worker through `tpufleet ssh-proxy`,\n"
       "which finds its new address when it moved. Exit status: the command's, or 255 when\n"
       "ssh failed.",
       {}, false, RunSsh},
      {"forward", "Forward a local port to a port on one worker (TensorBoard, Jupyter)",
       "NODE[:N] PORT[:LOCAL]",
       "Runs `ssh -N -L` with tpufleet's ssh config: connections to 127.0.0.1:LOCAL on this\n"
       "machine reach localhost:PORT on the worker (NODE alone is worker 0). LOCAL defaults\n"
       "to PORT when that is free here, else to a free port. Prints the local URL once the\n"
       "forward works (--json: url, local_port, remote_port and worker on one line) and\n"
       "runs until Ctrl-C or SIGTERM; ssh's own messages (\"connect failed\" while nothing\n"
       "listens on PORT yet) appear on stderr. Only this machine can use the local port.\n"
       "When the connection drops (the worker rebooted or moved), it says so and starts ssh\n"
       "again after 1 s, 2 s, ... up to 30 s, reaching the worker at its new address, until\n"
       "it works or the failure is one no retry mends (host key, login refused, node gone).\n"
       "Exit status: 0 when stopped, 1 when ssh could not forward at first or hit such a\n"
       "failure, 130 when stopped before the forward worked.",
       {}, true, RunForward},
      {"run", "Run a job on every worker of a node, kept by the workers' agents",
       "NODE [--name N] [--workdir D] [--env K=V]... [--detach] [--no-wait] [--kill-stale] "
       "[--keep-going] [--no-accelerator] [--restart POLICY [--max-restarts N]] -- COMMAND "
       "[ARG...]",
       "Starts COMMAND on every worker of NODE at once, as a job kept by each worker's\n"
       "tpufleet-agent (installed by up): it goes on when this command, the SSH connection or\n"
       "the terminal goes away, and its output is kept in log files on the workers. Worker r\n"
       "of W runs it as rank r, with TPUFLEET_RANK, TPUFLEET_WORLD_SIZE, TPUFLEET_COORDINATOR\n"
       "and the TPU variables JAX and PyTorch/XLA read, so jax.distributed.initialize() needs\n"
       "no arguments. The words after `--` reach the worker's login shell (bash -lc) quoted\n"
       "once each; for pipes or &&, pass a shell: -- bash -c 'cd code && python3 train.py'.\n"
       "--env values travel to the agents on stdin, never on a command line. Every worker\n"
       "checks the job first (name, user, workdir); if one refuses, none starts. A job that\n"
       "uses the TPU waits while another job holds it (--no-wait: refused, naming the holder);\n"
       "a stale /tmp/libtpu_lockfile is removed, a process of no job holding the TPU refuses\n"
       "the job (--kill-stale: it is killed). Prints the job's id, then every worker's output\n"
       "as it comes, prefixed `pod/w3 | `, until the job ends; Ctrl-C detaches (the job goes\n"
       "on). When one worker fails, the job is stopped on the others (--keep-going: not): a\n"
       "watcher started in the background sees to it, and so do `jobs` and `logs -f`.\n"
       "--restart on-preemption keeps the job in tpufleet's state for `tpufleet serve`,\n"
       "which starts it again on the node it recreates after a preemption (on-failure: also\n"
       "when it failed), at most --max-restarts times; the job sees TPUFLEET_RESTARTS (0 at\n"
       "first) and should resume from its last checkpoint. `cancel` ends that.\n"
       "Exit status: the job's (0 when every worker exited 0; the first failure's exit code,\n"
       "or 128+signal), 2 when it was refused, 130 when detached.",
       {{"name", "N", "the job's name (default: the command's first word)"},
        {"workdir", "D", "run in D (default: the login's home; relative to it)"},
        {"env", "K=V", "set K in the job's environment (repeat for more)"},
        {"detach", "", "return once the job started; do not follow its logs"},
        {"no-wait", "", "refuse if the TPU is held, instead of waiting for it"},
        {"kill-stale", "", "kill a process of no job that holds the TPU"},
        {"keep-going", "", "do not stop the other workers when one fails"},
        {"no-accelerator", "", "the job does not use the TPU: never wait for it"},
        {"restart", "POLICY", "on-preemption or on-failure: serve starts it again (default never)"},
        {"max-restarts", "N", "with --restart: give up after N restarts (default 10)"}},
       false, RunJobRun},
      {"jobs", "List the jobs on the fleet's workers: state, exit codes, who, when",
       "[TARGET...]",
       "Asks every worker's agent (or those of TARGET: a node, NODE:N, key=value, all) for\n"
       "its jobs and shows one row per job: its state (starting, waiting for the TPU,\n"
       "running, succeeded, failed, cancelled, lost), each worker's exit code or signal in\n"
       "order (runs folded: 0x3,1; - while running, ? when the worker did not answer), who\n"
       "started it, when, how long it ran, and which worker failed first and how. A job on\n"
       "which a worker failed while others still run is stopped on them (unless started\n"
       "with --keep-going), and it says so. Workers that did not answer are named on stderr.\n"
       "When jobs are running, their workers' agents are asked once more, for their metrics,\n"
       "and each running job gets a VERDICT (busy, input-bound, straggler, idle, quiet,\n"
       "unknown; see `tpufleet top` and docs/monitoring.md). A job run with --restart shows\n"
       "its RESTARTS (so far/limit) and TTR, its node's last time-to-recover.",
       {{"watch", "ID", "watch job ID and stop it when a worker fails (run starts this)", 0,
         true}},
       true, RunJobs},
      {"events", "Show the event log: preemptions, recoveries and every step, with times",
       "[NODE...] [--since DUR|TIME] [--kind K]",
       "Prints what tpufleet recorded of the nodes (of NODE only, when named), oldest first:\n"
       "create-requested, ready, stockout, deleted, and what `tpufleet serve` saw and did:\n"
       "preempted (by which signal), detected, delete-requested, create-requested, ready,\n"
       "agent-up, setup-done, job-resumed, recovered (seconds= is the time-to-recover, from\n"
       "the preemption to the node back with its jobs), ttl-warned, idle, stopped,\n"
       "budget-reached. While a node recovers, STEP says how long after the preemption each\n"
       "step came. From local state only. --since takes a duration back from now (30m, 2d)\n"
       "or a time (2026-01-01T12:00:00Z). At most the newest 1000 events.",
       {{"since", "DUR|TIME", "only events since then: 30m, 2d, or 2026-01-01T12:00:00Z"},
        {"kind", "K", "only events of kind K: preempted, recovered, …"}},
       true, RunEvents},
      {"logs", "Show a job's output: every worker's, prefixed, or one worker's",
       "JOB [--worker N] [-f] [--tail N]",
       "JOB is a job's id or name (the newest with it). Prints what every worker's process\n"
       "wrote, each line prefixed with its worker (pod/w3 | ), stderr lines on stderr; with\n"
       "--worker N only worker N's, as written. The logs are kept on the workers, so this\n"
       "works after the job ended and from any machine of the same user. -f follows the job\n"
       "until it ends (Ctrl-C stops following, the job goes on) and stops the other workers\n"
       "when one fails, as `run` does.",
       {{"worker", "N", "only worker N's output"},
        {"follow", "", "go on printing until the job ends", 'f'},
        {"tail", "N", "only the last N lines of each worker's stdout and stderr"}},
       false, RunLogs},
      {"cancel", "Stop a job on every worker: TERM, then KILL after a grace period",
       "JOB [--grace D]",
       "Sends SIGTERM to the job's processes on every worker where it has not ended, and\n"
       "SIGKILL D later (default 10s) to what is left. Waits until they have ended, then\n"
       "prints how the job ended. Exit status: 0 when it has ended everywhere.",
       {{"grace", "D", "time between TERM and KILL, e.g. 30s (default 10s)"}},
       true, RunCancel},
      {"attach", "Attach this terminal to a running job's terminal on worker 0", "JOB",
       "Connects with the system's ssh (tpufleet's ssh config, as `tpufleet ssh`) to worker 0\n"
       "of the job and relays this terminal to the job's own: what you type reaches the\n"
       "program (a debugger, a prompt), and you see it as it runs. Ctrl-] detaches; the job\n"
       "goes on. The other workers' output: tpufleet logs JOB.",
       {}, false, RunAttach},
      {"doctor", "Check every worker: TPU devices, their users, agent, metadata, disk, clock",
       "[TARGET...]",
       "Asks every worker of TARGET (a node, NODE:N, key=value, all; default all) at once,\n"
       "through its node agent: the accelerator devices are there and as many as the type\n"
       "has per worker; who holds them and /tmp/libtpu_lockfile (a stale lockfile or an\n"
       "orphaned holder fails); the metadata server answers and its accelerator type and\n"
       "endpoints agree with the TPU API; free space on / and /tmp; the agent answers at the\n"
       "version of this tpufleet's agent binary; the worker's clock is within 1 s of this\n"
       "machine's (half the round trip allowed). One line per worker, failing ones first,\n"
       "each failed check with what to do. Exit status: 0 when every check passed, 1\n"
       "otherwise, 2 for a target that names no worker.",
       {}, true, RunDoctor},
      {"top", "Show the accelerators of workers live: use, holders, hosts, and why idle",
       "[TARGET...] [--once] [--since DUR] [--fold] [--sort KEY] [--filter TEXT] "
       "[--idle-after DUR] [--refresh S]",
       "Asks the node agent of every worker of TARGET (a node, NODE:N, key=value, all;\n"
       "default all) at once for what it measured, and shows one row per worker: its\n"
       "verdict, each chip's duty cycle and HBM as bars (one cell per chip, ? when no job\n"
       "serves runtime metrics), the process holding the chips (pid, user, job, command),\n"
       "and the host's CPU and memory. Below: each job's, node's and worker's verdict that\n"
       "needs attention, in words with the numbers: input-bound (the TPU starves while the\n"
       "job's host CPU is at its limit), straggler (one worker far less busy than the\n"
       "others), idle (nothing used the node for --idle-after, default 10m). See\n"
       "docs/monitoring.md for the thresholds. A worker that does not answer keeps its row,\n"
       "saying why.\n"
       "On a terminal: a full-screen view refreshed every --refresh seconds (default 2), with\n"
       "sparklines of the last 5 minutes (--since: longer); keys q quit, s sort, f fold, /\n"
       "filter, arrows and PgUp/PgDn scroll, r refresh. Nodes of more than 8 workers are\n"
       "folded into one row (f: all or none). --once prints one snapshot as a table, or\n"
       "with --json as a document (docs/top.md). Exit status: 0 when every worker\n"
       "answered, 1 otherwise.",
       {{"once", "", "print one snapshot and exit (a table, or --json)"},
        {"since", "DUR", "sparklines of duty cycle and CPU over the last DUR (at most 24h)"},
        {"fold", "", "one row per node"},
        {"sort", "KEY", "name (default), duty, hbm, cpu or verdict"},
        {"filter", "TEXT", "only rows whose node, worker, verdict or holder has TEXT"},
        {"idle-after", "DUR", "a node unused this long is idle (default 10m)"},
        {"refresh", "S", "seconds between rounds of the live view (default 2)"}},
       true, RunTop},
      {"users", "Add, change, list or remove collaborators' accounts on the fleet's workers",
       "add NAME --key FILE|- [--sudo] [--nodes SEL] [--role R] --spec FLEET.yaml | "
       "set NAME [--sudo|--no-sudo] [--key FILE|-] [--nodes SEL] [--role R] --spec FLEET.yaml | "
       "list [--spec FLEET.yaml] | remove NAME [--purge] --spec FLEET.yaml",
       "A collaborator gets a Unix account with their own key on every worker of the nodes\n"
       "--nodes selects (a node, a label selector such as team=a, or all; repeat it for\n"
       "several; default every node), now and after every recreate: kept in tpufleet's\n"
       "state beside the spec's own users, made by each worker's agent. --sudo gives\n"
       "passwordless sudo; without it there is none. --role (member, viewer, admin; default\n"
       "member) is kept for the team server. `add` and `set` apply at once on every READY\n"
       "node they select (others get it when up or serve brings them back), with one line\n"
       "per node. `remove` takes the account away on those nodes: its processes and jobs\n"
       "are stopped, its key and sudo removed, the account locked; the home is kept unless\n"
       "--purge (then the account and home are deleted; also for a name removed before).\n"
       "Names the spec has, root, system accounts and tpufleet's own login are refused.\n"
       "--spec is the fleet's spec: its users and nodes decide each node's accounts. Exit\n"
       "status: 0 when every node applied it, 1 otherwise, 2 for bad usage.",
       {{"key", "FILE", "the collaborator's OpenSSH public key file(s), - for stdin", 0, false,
         kMaxKeyFileBytes},
        {"sudo", "", "passwordless sudo"},
        {"no-sudo", "", "(set) take sudo away"},
        {"nodes", "SEL", "the nodes: NODE, key=value or all (repeatable; default all)"},
        {"role", "R", "member (default), viewer or admin: for the team server"},
        {"purge", "", "(remove) delete the account and its home too"},
        {"spec", "FLEET.yaml", "the fleet's spec", 0, false, kMaxSpecBytes}},
       true, RunUsers},
      {"audit", "Show the team server's audit log: who did what through it, and how it ended",
       "[--since DUR|TIME] [--limit N]",
       "Prints the audit log `tpufleet serve` keeps in the state store, oldest first: each\n"
       "request's time, person (\"operator\" for serve's own token, \"?\" for a bad one), action\n"
       "(the command line, its --env values and anything after -- left out, or the API's\n"
       "METHOD PATH) and outcome (ok, exit N, refused: why, unauthenticated). Through a team\n"
       "server (--server) only an admin of every fleet may read it; here, whoever holds the\n"
       "state. --since takes a duration back from now (30m, 2d) or a time\n"
       "(2026-01-01T12:00:00Z). At most the newest --limit lines (default 100, at most 10000).",
       {{"since", "DUR|TIME", "only lines since then: 30m, 2d, or 2026-01-01T12:00:00Z"},
        {"limit", "N", "at most the newest N lines (default 100)"}},
       true, RunAudit},
      {"cost", "Show where the money went: spend per person, node, fleet or job, and budgets left",
       "[--by person|node|fleet|job|day] [--since DUR|TIME] [--csv] [--goodput]",
       "Adds up the spend ledger in the state store: every stretch a node spent in a billed\n"
       "state (a PREEMPTED husk until deleted; not a queued resource still waiting), at the\n"
       "list price of its type, zone and capacity when the stretch began (spot: the most it\n"
       "can cost; reserved: nothing). While jobs run on a node (`tpufleet run`) its hours are\n"
       "shared among them and billed to who ran each; the rest is billed to the fleet's owner\n"
       "(the spec's `owner`, else whoever applied it). The ledger is written while\n"
       "`tpufleet serve` keeps the fleet. One line per person (default), node, fleet, job or\n"
       "UTC day since --since (default 30d): spent, billed node-hours and what it costs per\n"
       "hour now;\n"
       "then today's and this month's spend (UTC) with where they end at the current rate,\n"
       "and each fleet's budget left. --csv prints the lines as CSV. Through a team server an\n"
       "admin sees their fleets' whole ledger and budgets, anyone else what is billed to them.\n"
       "--goodput splits each line's paid time instead: busy (the TPUs' duty cycle, as the\n"
       "agents measured it in serve's metrics rounds), lost to preemption (from the\n"
       "preemption to the job resumed), idle (no job ran, or nothing used the node), starved\n"
       "by the input pipeline, the rest of a job's measured time, and its time no agent\n"
       "measured; as shares of each line's spend, then a verdict of where most of it went.",
       {{"by", "person|node|fleet|job|day", "what a line is (default person)"},
        {"since", "DUR|TIME", "from then: 30d (default), 12h, or 2026-01-01T00:00:00Z"},
        {"csv", "", "the lines as CSV, for a spreadsheet"},
        {"goodput", "", "where the paid time went: busy, preempted, idle, input-bound"}},
       true, RunCost},
      {"invite", "Write the file a collaborator joins the team server with",
       "NAME --server-url https://HOST:PORT [--out FILE] [--replace]",
       "Run where the team server's state is. NAME must be a collaborator of some fleet\n"
       "(`users add` first). Makes them a token for the server and writes an invite file\n"
       "(0600; default ./NAME.tpufleet-invite, never over an existing file): the server's\n"
       "URL, the SHA-256 fingerprint of serve's certificate (STATE/serve/tls.crt, or\n"
       "--server-fingerprint), their name and the token. The file is a credential: send it\n"
       "privately; they run `tpufleet join FILE`. The token is never printed. --replace\n"
       "forgets their older tokens (revoking earlier invites); `users remove` does too once\n"
       "they are on no fleet. --json: {file, person, server, fingerprint}.",
       {{"server-url", "URL", "serve's address as the collaborator's laptop reaches it"},
        {"out", "FILE", "where to write the invite (default ./NAME.tpufleet-invite)"},
        {"replace", "", "forget the person's older tokens"}},
       true, RunInvite},
      {"join", "Join a team server with an invite: its SSH names, and the default server",
       "FILE|-",
       "Run on the collaborator's own machine, with the file `tpufleet invite` made. Checks\n"
       "it, pins the server's certificate it names (a server presenting another is refused\n"
       "before anything is sent), keeps the token (0600) in ~/.config/tpufleet/servers/,\n"
       "and makes this server the default: after a join, commands given neither --server\n"
       "nor TPUFLEET_SERVER go to it (TPUFLEET_SERVER set empty runs them here). Then writes\n"
       "SSH names for the workers you may use, ~/.ssh/tpufleet/HOST:PORT/config, included\n"
       "by ~/.ssh/config: `ssh NODE` (worker 0) and `ssh NODE-wN`, as you, with your own\n"
       "key, host keys pinned; each connection asks the server where the worker is now, so\n"
       "they keep working after a recreate. Join again to pick up new nodes.",
       {},
       true, RunJoin},
      {"ssh-proxy", "Connect ssh to a worker wherever it is now (the ssh config's ProxyCommand)",
       "--state-dir DIR -- NODE N | --server URL -- NODE N",
       "Run by ssh, for the Host blocks tpufleet writes, not by people. Connects to worker N\n"
       "of NODE at the address in tpufleet's state; when that does not answer within 3 s,\n"
       "asks the cloud for the node (as `status --refresh NODE` does, recording what changed)\n"
       "and connects to its address now. With --server (the names `join` writes): asks the\n"
       "team server for the worker's address and host keys, rewriting those names' files\n"
       "when they changed. Then relays its stdin and stdout to the connection.\n"
       "Errors go to stderr, where ssh shows them.",
       {{"state-dir", "DIR", "tpufleet's state directory (the one that wrote the config)"}},
       false, RunSshProxy, true},
  };
  return table;
}

}  // namespace tpufleet::cli
