#!/usr/bin/env bash
# Google's gcloud as a measured peer (issue 15), on the same emulator in the same run:
#  L. `gcloud compute tpus tpu-vm list` next to `tpufleet status` (local state) and
#     `tpufleet status --refresh` (asks the API), with hyperfine;
#  S. `gcloud compute tpus tpu-vm ssh NODE --worker=all --command=hostname` next to
#     `tpufleet exec NODE -- hostname` on one pod of 4, 16 and 64 workers (v4-32, v4-128,
#     v4-512), cold and warm:
#       gcloud cold: no ~/.ssh (its HOME's), so each run makes google_compute_engine,
#         finds its key in neither the project's nor the node's metadata, updates the
#         node (the emulator's guest agents then write it into authorized_keys), reads
#         the host keys from the guest attributes and retries ssh until the key is in;
#       gcloud warm: the key and google_compute_known_hosts kept (after one untimed run);
#       tpufleet cold: its connection holder stopped before each run; warm: holder up.
#     gcloud runs one ssh process per worker, each in a thread of its own, all at once
#     (--batch-size defaults to all; command_lib/compute/tpus/tpu_vm/ssh.py).
#  C. `gcloud … tpu-vm scp FILE NODE:f --worker=all` of a random file (200 MiB) next to
#     `tpufleet cp FILE NODE:f` (gcloud warm, tpufleet cold: the realistic first copy).
# Each S/C cell is the median over RUNS timed runs of wall s and client CPU s: utime +
# stime of the tool and every process it waited for (gcloud's ssh/scp children), plus
# what tpufleet's connection holder spent meanwhile. The emulator's and the workers'
# sshd CPU is not counted. Every run is checked: exit 0 and exactly the pod's worker
# hostnames (S), the file's sha256 on every worker (C, untimed); list must name every
# node. A failed check makes the cell "FAILED", never a time.
#
# gcloud is not installed on CI's Debian: then its rows say "skipped" and the tpufleet
# rows still run. gcloud never sees a real configuration: a throwaway CLOUDSDK_CONFIG,
# the endpoints overridden to this emulator, its token file as the access token.
# Needs root (the emulator's workers are network namespaces); without it, it skips.
#
# Usage: bench/gcloud.sh path/to/tpufleet [SIZES] [RUNS]
#   SIZES  pod sizes in workers for S, default "4 16 64" (v4-32, v4-128, v4-512)
#   RUNS   timed runs per S/C cell, default 3 (list/status: hyperfine, 10 runs)
#   GCLOUD_SCP_SIZE=64  the pod C copies to;  GCLOUD_SCP_MIB=200
# Not part of bench/run.sh (about 15 minutes on a busy 2-core machine).
# Commands are kept as text with $T, $TPUFLEET unexpanded, to be printed as they ran.
# shellcheck disable=SC2016
set -euo pipefail

bin=$(realpath "$1")
read -r -a sizes <<<"${2:-4 16 64}"
runs=${3:-3}
scp_size=${GCLOUD_SCP_SIZE:-64}
scp_mib=${GCLOUD_SCP_MIB:-200}

if [[ $(id -u) -ne 0 ]]; then
  echo "gcloud bench: skipped (needs root)"
  exit 0
fi
gcloud=""
if command -v gcloud >/dev/null; then
  gcloud=$(command -v gcloud)
else
  echo "gcloud bench: gcloud is not installed: its rows are skipped" >&2
fi

tmp=$(mktemp -d /tmp/tpufleet-gcloud-bench.XXXXXX)
T=$tmp
export HOME=$tmp/home TPUFLEET_STATE_DIR=$tmp/state TPUFLEET_EMULATOR_DIR=$tmp/emulator
mkdir -p "$HOME" "$tmp/logs" "$tmp/gh"
ulimit -n "$(ulimit -Hn)"
cleanup() {
  set +e
  "$bin" holder stop >/dev/null 2>&1
  "$bin" down --all --yes >/dev/null 2>&1
  "$bin" emulator stop >/dev/null 2>&1
  # An ssh or gcloud a signal left behind (ours only: every one names our private dir).
  pgrep -f "$tmp/" | grep -vxF -e $$ | xargs -r kill 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

# ---- The emulator and one pod per size. ---------------------------------------------
declare -A type_of=([4]=v4-32 [16]=v4-128 [64]=v4-512)
zone=us-central2-b
{
  printf 'fleet: gb\nprovider: emulator\nnodes:\n'
  for n in $(printf '%s\n' "${sizes[@]}" "$scp_size" | sort -nu); do
    [[ -n ${type_of[$n]:-} ]] || { echo "gcloud bench: no pod size $n (4, 16 or 64)" >&2; exit 2; }
    printf '  - name: p%s\n    type: %s\n    count: 1\n    zones: [%s]\n' "$n" "${type_of[$n]}" "$zone"
  done
} >"$tmp/fleet.yaml"
echo "gcloud bench: emulator start and up" >&2
"$bin" emulator start >/dev/null
ep=$(jq -r .endpoint "$TPUFLEET_EMULATOR_DIR/daemon.json")  # gcloud_env's endpoint
"$bin" up "$tmp/fleet.yaml" >"$tmp/logs/up.log" 2>&1 || { tail -20 "$tmp/logs/up.log" >&2; exit 1; }

# gcloud's environment: test/gcloud_lib.sh's gcloud_env (a throwaway CLOUDSDK_CONFIG in
# $tmp, the endpoint overrides, the emulator's token, no prompts or update checks).
# shellcheck source=test/gcloud_lib.sh
source "$(dirname "$0")/../test/gcloud_lib.sh"
# The pods' names, project and worker hostnames, from the state tpufleet keeps.
"$bin" status --json >"$tmp/status.json"
declare -A node_of
for n in "${sizes[@]}" "$scp_size"; do
  node_of[$n]=$(jq -r --arg t "${type_of[$n]}" '[.nodes[] | select(.type == $t) | .node] | first // empty' "$tmp/status.json")
  jq -r --arg t "${type_of[$n]}" '.nodes[] | select(.type == $t) | .workers[].hostname' "$tmp/status.json" >"$tmp/names.$n"
  [[ -n ${node_of[$n]} && $(wc -l <"$tmp/names.$n") -eq $n ]] ||
    { echo "gcloud bench: no $n-worker node in tpufleet status --json" >&2; exit 1; }
done
jq -r '.nodes[].workers[].hostname' "$tmp/status.json" >"$tmp/names.all"  # what a check may see
gcloud_env "$(jq -r '.nodes[0].project' "$tmp/status.json")"
export T TPUFLEET=$bin

# ---- Measuring. -------------------------------------------------------------------------
results=$tmp/results.tsv
: >"$results"
# cell PART ROW N CMD [measure.py options]: one measured cell (CMD kept for "Rerun").
cell() {
  local part=$1 row=$2 n=$3 cmd=$4 json
  shift 4
  echo "gcloud bench: $part | $row | N=$n" >&2
  json=$(python3 "$(dirname "$0")/measure.py" --log "$tmp/logs/$part.$n.${row//[^a-zA-Z0-9]/_}" "$@" -- "$cmd") ||
    json='{"fails": ["measure failed"]}'
  printf '%s\t%s\t%s\t%s\t%s\n' "$part" "$row" "$n" "$json" "$cmd" >>"$results"
}
skipped() { printf '%s\t%s\t%s\t{"skipped": "%s"}\t\n' "$1" "$2" "$3" "$4" >>"$results"; }

load_start=$(cut -d' ' -f1-3 /proc/loadavg)
TF_STOP='"$TPUFLEET" holder stop >/dev/null 2>&1 || true'
HOLDER=(--extra "$TPUFLEET_STATE_DIR/holder.sock")
vm="gcloud compute tpus tpu-vm"

# ---- L: list against status. ------------------------------------------------------------
list_note=""
if [[ -n $gcloud ]]; then
  $vm list --zone="$zone" --format='value(name)' >"$tmp/list.out" 2>"$tmp/list.err" || true
  for n in "${sizes[@]}"; do
    grep -qx "${node_of[$n]}" "$tmp/list.out" || list_note="gcloud list did not name ${node_of[$n]}: $(tail -2 "$tmp/list.err")"
  done
fi
"$bin" status --refresh >"$tmp/status.out" 2>&1 || list_note="tpufleet status --refresh failed: $(tail -2 "$tmp/status.out")"
lcmds=("$bin status" "$bin status --refresh")
[[ -n $gcloud && -z $list_note ]] && lcmds+=("$gcloud compute tpus tpu-vm list --zone=$zone")
[[ -z $list_note ]] && hyperfine -N --warmup 2 --runs 10 --export-json "$tmp/list.json" "${lcmds[@]}" >/dev/null

# ---- S: ssh --worker=all against exec. ----------------------------------------------------
for n in "${sizes[@]}"; do
  node=${node_of[$n]}
  exp=(--expect "$T/names.$n" --all "$T/names.all")
  cell S "tpufleet exec (cold)" "$n" "\"\$TPUFLEET\" exec $node -- hostname" \
    --runs "$runs" --prep "$TF_STOP" "${exp[@]}" "${HOLDER[@]}"
  cell S "tpufleet exec (warm)" "$n" "\"\$TPUFLEET\" exec $node -- hostname" \
    --runs "$runs" --warmup 1 "${exp[@]}" "${HOLDER[@]}"
  if [[ -z $gcloud ]]; then
    skipped S "gcloud ssh --worker=all (cold)" "$n" "gcloud not installed"
    skipped S "gcloud ssh --worker=all (warm)" "$n" "gcloud not installed"
    continue
  fi
  gssh="HOME=\$T/gh $vm ssh alice@$node --zone=$zone --worker=all --command=hostname"
  cell S "gcloud ssh --worker=all (cold)" "$n" "$gssh" --runs "$runs" --prep "rm -rf $T/gh/.ssh" "${exp[@]}"
  cell S "gcloud ssh --worker=all (warm)" "$n" "$gssh" --runs "$runs" --warmup 1 "${exp[@]}"
done
"$bin" holder stop >/dev/null 2>&1 || true

# ---- C: scp --worker=all against cp. ------------------------------------------------------
head -c "$((scp_mib << 20))" /dev/urandom >"$tmp/payload"
sum=$(sha256sum "$tmp/payload" | cut -d' ' -f1)
node=${node_of[$scp_size]}
clean="\"\$TPUFLEET\" exec $node -- rm -f payload.bin; sync"
check="[[ \$(\"\$TPUFLEET\" exec $node -- sha256sum payload.bin | grep -c ' $sum ') -eq $scp_size ]]"
cell C "tpufleet cp (cold)" "$scp_size" "\"\$TPUFLEET\" cp \$T/payload $node:payload.bin" \
  --runs "$runs" --prep "$clean; $TF_STOP" --check "$check" "${HOLDER[@]}"
if [[ -n $gcloud ]]; then
  # The check reads the file in tpufleet's user's home, so gcloud copies as that user;
  # its key for that user goes into the node's metadata first (untimed), as warm.
  user=$("$bin" exec "$node:0" -- id -un 2>/dev/null | awk '{print $NF}')
  HOME=$T/gh $vm ssh "$user@$node" --zone="$zone" --worker=all --command=true >"$tmp/logs/C.key" 2>&1 ||
    echo "gcloud bench: gcloud ssh $user@$node failed: $(tail -2 "$tmp/logs/C.key")" >&2
  cell C "gcloud scp --worker=all (warm)" "$scp_size" \
    "HOME=\$T/gh $vm scp \$T/payload $user@$node:payload.bin --zone=$zone --worker=all" \
    --runs "$runs" --prep "$clean" --check "$check"
else
  skipped C "gcloud scp --worker=all (warm)" "$scp_size" "gcloud not installed"
fi

# ---- Report. ------------------------------------------------------------------------------
load_end=$(cut -d' ' -f1-3 /proc/loadavg)
python3 - "$results" "$tmp/list.json" "$bin" "$scp_mib" "$list_note" <<'PY'
import json, os, sys
res, listj, binary, mib, list_note = sys.argv[1:6]
print("### L. list against status (hyperfine, 10 runs after 2 warm-ups)\n")
if list_note:
    print(f"Not measured: {list_note}\n")
elif os.path.exists(listj):
    rs = json.load(open(listj))["results"]
    ref = next(r for r in rs if r["command"].endswith("status --refresh"))
    print("| command | wall median | wall mean ± σ | CPU user+sys (mean) | gcloud list / this (wall, CPU) |")
    print("|---|---|---|---|---|")
    gl = next((r for r in rs if "gcloud" in r["command"]), None)
    for r in rs:
        cmd = r["command"].replace(binary, "tpufleet").rsplit("/bin/", 1)[-1] if "gcloud" in r["command"] else r["command"].replace(binary, "tpufleet")
        cpu = r["user"] + r["system"]
        ratio = ""
        if gl and r is not gl:
            ratio = f"{gl['median'] / r['median']:.0f}× / {(gl['user'] + gl['system']) / cpu:.0f}×"
        print(f"| `{cmd}` | {r['median']*1e3:.1f} ms | {r['mean']*1e3:.1f} ± {(r['stddev'] or 0)*1e3:.1f} ms | {cpu*1e3:.1f} ms | {ratio} |")
    print()
rows = [l.rstrip("\n").split("\t") for l in open(res)]
def fmt(j):
    if "skipped" in j: return "skipped: " + j["skipped"]
    if j.get("fails"): return "FAILED (" + "; ".join(j["fails"])[:120] + ")"
    return f"{j['wall']:.2f} s / {j['client']:.2f} s"
for part, title in (("S", "S. `hostname` on every worker of one pod: wall / client CPU (median)"),
                    ("C", f"C. a {mib} MiB file to every worker of one pod: wall / client CPU (median)")):
    sel = [r for r in rows if r[0] == part]
    if not sel: continue
    ns = sorted({int(r[2]) for r in sel})
    names = list(dict.fromkeys(r[1] for r in sel))
    cells = {(r[1], int(r[2])): json.loads(r[3]) for r in sel}
    print(f"### {title}\n")
    print("| tool | " + " | ".join(f"{n} workers" for n in ns) + " |")
    print("|---|" + "---|" * len(ns))
    for name in names:
        print(f"| {name} | " + " | ".join(fmt(cells[(name, n)]) if (name, n) in cells else "" for n in ns) + " |")
    def ok(j): return j and not j.get("fails") and "wall" in j
    pairs = [("tpufleet exec (cold)", "gcloud ssh --worker=all (cold)"), ("tpufleet exec (warm)", "gcloud ssh --worker=all (warm)"),
             ("tpufleet cp (cold)", "gcloud scp --worker=all (warm)")]
    for t, g in pairs:
        for n in ns:
            a, b = cells.get((t, n)), cells.get((g, n))
            if ok(a) and ok(b):
                print(f"- {g} / {t}, {n} workers: {b['wall']/a['wall']:.1f}× wall, {b['client']/max(a['client'],1e-3):.1f}× client CPU")
    print()
print("Commands as run (`$T` = the bench's temp dir, `$TPUFLEET` = the binary; gcloud's"
      " environment as in gcloud_env):\n")
for r in rows:
    if len(r) > 4 and r[4]:
        print(f"- {r[0]} {r[1]}, N={r[2]}: `{r[4]}`")
PY
echo
echo "Load average (1, 5, 15 min): $load_start at the start, $load_end at the end; $(nproc) cores."
