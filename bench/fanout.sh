#!/usr/bin/env bash
# SSH fan-out, tpufleet against its peers (issue 5), on the local emulator's workers.
#
# What it measures, on the same hosts with the same login key and pinned host keys:
#  A. cold `hostname` on the first N workers, every tool at OpenSSH's defaults (the ssh
#     config tpufleet wrote): pdsh, parallel-ssh, clush, ansible, a bash `ssh &` loop,
#     and `tpufleet exec` with its connection holder stopped;
#  B. the same peers held to tpufleet's key exchange (a copy of the config with
#     KexAlgorithms curve25519-sha256, Ciphers aes128-ctr, MACs hmac-sha2-256);
#  C. warm: pdsh, parallel-ssh and clush through OpenSSH ControlMaster (the masters'
#     start is timed once, apart), ansible through its own ControlPersist masters, and
#     `tpufleet exec` run a second time (its holder up);
#  D. a broadcast of a random file (200 MiB) to the first 64 workers: pdcp, clush --copy,
#     a parallel scp loop, an `ssh 'cat >'` loop (informative) and `tpufleet cp` (its
#     relay chain, and --no-relay); cp takes one target, so the fleet's first nodes carry
#     a label (fanout-b64=yes) that names them.
# Each cell is the median over RUNS timed runs (after WARMUP untimed ones; D has no
# warm-up) of: wall s / client CPU s (rusage of the tool and every child it waited for,
# plus the CPU the helpers it keeps running spent meanwhile: tpufleet's connection
# holder, the ssh ControlMasters of C and ansible's) / total CPU s (busy jiffies of the
# whole machine from /proc/stat, so the workers' sshd count too; so does anything else
# running on the machine: on a busy machine this column is just cores x wall).
# Every run is checked: exit 0 and exactly the N expected worker hostnames in the output
# (D: sha256 of the copy on every worker, untimed). Markdown tables, the ratios the issue
# asks for (best peer / tpufleet) and the exact commands go to stdout.
#
# Needs root (the emulator's workers are network namespaces); without it, it skips.
# Installs the peers through scripts/setup-deps.sh --bench (Debian packages).
# Only loopback (the emulator's API) and the workers' 198.18.0.0/15 addresses are used.
#
# Usage: bench/fanout.sh path/to/tpufleet [SIZES] [RUNS]
#   SIZES  worker counts for A-C, default "1 16 64 256" (the fleet is sized to the
#          largest: v4-32 nodes of 4 workers each)
#   RUNS   timed runs per cell, default 3
# Environment (all optional):
#   FANOUT_WARMUP=1            untimed runs before the timed ones (A-C)
#   FANOUT_PARTS="A B C D"     which parts to run
#   FANOUT_PEERS="pdsh pssh clush ansible loop"   peer rows of A-C
#   FANOUT_BCAST_SIZES=64      worker counts for D;  FANOUT_BCAST_MIB=200
#   FANOUT_BCAST_RUNS=RUNS     timed runs per cell of D
#   FANOUT_NODE_TYPE=v4-32     the pod type the fleet is made of
# Takes about 1.5 hours with the defaults on a busy 2-core machine; ansible at N=256 is
# a third of it (FANOUT_PEERS="pdsh pssh clush loop" leaves it out), D another third.
# Not part of bench/run.sh by default: `bench/run.sh BIN` runs it when FANOUT=1.

# Commands are kept as text with $T, $CFG… unexpanded, to be printed as they ran.
# shellcheck disable=SC2016
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
bin=$(realpath "$1")
read -r -a sizes <<<"${2:-1 16 64 256}"
runs=${3:-3}
warmup=${FANOUT_WARMUP:-1}
parts=" ${FANOUT_PARTS:-A B C D} "
read -r -a peers <<<"${FANOUT_PEERS:-pdsh pssh clush ansible loop}"
read -r -a bcast_sizes <<<"${FANOUT_BCAST_SIZES:-64}"
bcast_mib=${FANOUT_BCAST_MIB:-200}
bcast_runs=${FANOUT_BCAST_RUNS:-$runs}
node_type=${FANOUT_NODE_TYPE:-v4-32}

if [[ $(id -u) -ne 0 ]]; then
  echo "fanout bench: skipped (needs root)"
  exit 0
fi
"$root/scripts/setup-deps.sh" --bench >&2

# What was running before, to check that cleanup left the machine as it found it.
snapshot() {
  {
    ip netns list 2>/dev/null | sort
    echo "sshd: $(pgrep -x sshd | sort -n | tr '\n' ' ')"
    echo "tpufleet: $(pgrep '^tpufleet' | sort -n | tr '\n' ' ')"
  }
}
before=$(snapshot)

tmp=$(mktemp -d /tmp/tpufleet-fanout.XXXXXX)
T=$tmp  # short name used in the printed commands
export HOME=$tmp/home TPUFLEET_STATE_DIR=$tmp/state TPUFLEET_EMULATOR_DIR=$tmp/emulator
mkdir -p "$HOME" "$tmp/cm" "$tmp/logs"
ulimit -n "$(ulimit -Hn)"  # 256 ssh children with 3 pipes each need more than 1024 fds

# Ends every ssh ControlMaster whose socket is in DIR (ours only: the dirs are private).
stop_masters() {
  local s
  for s in "$1"/*; do
    [[ -S $s ]] || continue
    ssh -F /dev/null -o ControlPath="$s" -O exit fanout-bench >/dev/null 2>&1 &
  done
  wait
}
cleanup() {
  set +e
  stop_masters "$tmp/cm"
  stop_masters "$HOME/.ansible/cp"
  "$bin" holder stop >/dev/null 2>&1
  "$bin" down --all --yes >/dev/null 2>&1
  "$bin" emulator stop >/dev/null 2>&1
  # Anything still running from our private dir (a master that missed its -O exit).
  pgrep -f "$tmp/" | grep -vxF -e $$ | xargs -r kill 2>/dev/null
  rm -rf "$tmp"
  local after _
  for _ in 1 2 3 4 5 6 7 8 9 10; do  # workers may take a moment to exit
    after=$(snapshot)
    [[ $after != "$before" ]] || break
    sleep 0.5
  done
  if [[ $after != "$before" ]]; then
    echo "fanout bench: the machine differs from before the run (others may be running):" >&2
    diff <(echo "$before") <(echo "$after") >&2
  fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- The fleet: enough v4-32 pods for the largest size. -----------------------------
if [[ $parts != *" D "* ]]; then bcast_sizes=(); fi
max_exec=0 max=0  # the most workers A-C use, and the whole bench
for n in "${sizes[@]}"; do
  if ((n > max_exec)); then max_exec=$n; fi
done
for n in "${bcast_sizes[@]}" "$max_exec"; do
  if ((n > max)); then max=$n; fi
done
per_node=$("$bin" catalog "$node_type" --json | python3 -c 'import json, sys; print(json.load(sys.stdin)["workers"])' 2>/dev/null)
((per_node > 0)) || { echo "fanout bench: cannot tell how many workers a $node_type has" >&2; exit 1; }
nodes=$(((max + per_node - 1) / per_node))
# `tpufleet cp` takes one target: the first B/per_node nodes carry the label
# fanout-bB=yes for each broadcast size B (a whole number of nodes), so one selector
# names them. Nodes with the same labels are one entry: a-0.., b-0.., … in fleet order.
mapfile -t cuts < <(for b in "${bcast_sizes[@]}"; do
  if ((b % per_node == 0 && b < nodes * per_node)); then echo $((b / per_node)); fi
done | sort -nu)
{
  printf 'fleet: fanout\nprovider: emulator\nnodes:\n'
  from=0 letter=0
  for end in "${cuts[@]}" "$nodes"; do
    ((end > from)) || continue
    name=$(echo {a..z} | cut -d' ' -f$((letter + 1)))
    printf '  - name: %s\n    type: %s\n    count: %d\n' "$name" "$node_type" $((end - from))
    labels=()
    for c in "${cuts[@]}"; do
      if ((from < c)); then labels+=("fanout-b$((c * per_node)): \"yes\""); fi
    done
    if ((${#labels[@]})); then
      printf -v joined '%s, ' "${labels[@]}"
      printf '    labels: {%s}\n' "${joined%, }"
    fi
    from=$end letter=$((letter + 1))
  done
} >"$tmp/fleet.yaml"
echo "fanout bench: starting the emulator, up of $nodes x $node_type ($((nodes * per_node)) workers)" >&2
"$bin" emulator start >/dev/null
up_start=$SECONDS
"$bin" up "$tmp/fleet.yaml" >"$tmp/logs/up.log" 2>&1 || { tail -20 "$tmp/logs/up.log" >&2; exit 1; }
echo "fanout bench: up took $((SECONDS - up_start)) s" >&2

# The ssh config tpufleet wrote, and the copies the peers use.
CFG=$TPUFLEET_STATE_DIR/ssh/config
[[ -f $CFG ]] || { echo "fanout bench: no ssh config at $CFG" >&2; exit 1; }
KEX=$tmp/ssh_config.kex   # B: tpufleet's key exchange, cipher and MAC
CM=$tmp/ssh_config.cm     # C: through ControlMaster
{
  echo "KexAlgorithms curve25519-sha256"
  echo "Ciphers aes128-ctr"
  echo "MACs hmac-sha2-256"
  cat "$CFG"
} >"$KEX"
{
  echo "ControlMaster no"
  echo "ControlPath $tmp/cm/%C"
  cat "$CFG"
} >"$CM"
export CFG KEX CM T

# Worker aliases (NODE-wK) in fleet order, and each one's hostname.
awk '$1 == "Host" { for (i = 2; i <= NF; i++) if ($i ~ /-w[0-9]+$/) print $i }' "$CFG" |
  sort -V >"$tmp/hosts"
total=$(wc -l <"$tmp/hosts")
((total >= max)) || { echo "fanout bench: $total workers in $CFG, need $max" >&2; exit 1; }
for n in "${sizes[@]}" "${bcast_sizes[@]}"; do head -n "$n" "$tmp/hosts" >"$tmp/h$n"; done
PDSH_SSH_ARGS="-F $KEX -x %h" pdsh -R ssh -f 64 -w "^$tmp/hosts" hostname 2>"$tmp/logs/names.err" |
  sed 's/: / /' | sort -V >"$tmp/names"
if [[ $(wc -l <"$tmp/names") -ne $total ]]; then
  echo "fanout bench: only $(wc -l <"$tmp/names") of $total workers answered" >&2
  head "$tmp/logs/names.err" >&2
  exit 1
fi
cut -d' ' -f2 "$tmp/names" >"$tmp/names.all"
for n in "${sizes[@]}" "${bcast_sizes[@]}"; do
  awk 'NR == FNR { want[$1] = 1; next } $1 in want { print $2 }' "$tmp/h$n" "$tmp/names" >"$tmp/names.$n"
done
for n in "${sizes[@]}"; do
  { printf '[all:vars]\nansible_ssh_common_args="-F %s"\n[fleet]\n' "$CFG"; cat "$tmp/h$n"; } >"$tmp/inv$n"
  { printf '[all:vars]\nansible_ssh_common_args="-F %s"\n[fleet]\n' "$KEX"; cat "$tmp/h$n"; } >"$tmp/inv$n.kex"
done

# ---- Measuring. -------------------------------------------------------------------------

results=$tmp/results.tsv
: >"$results"
declare -A commands  # "PART|ROW" -> the command as run (for the last N)
declare -A preps     # "PART|ROW" -> what runs untimed before each run

# cell PART ROW N CMD [measure.py options]: measures one cell, records its medians.
cell() {
  local part=$1 row=$2 n=$3 cmd=$4
  shift 4
  echo "fanout bench: $part | $row | N=$n" >&2
  local json
  json=$(python3 "$root/bench/measure.py" --log "$tmp/logs/$part.$n.${row//[^a-zA-Z0-9]/_}" "$@" -- "$cmd") ||
    json='{"error": "measure failed"}'
  printf '%s\t%s\t%s\t%s\n' "$part" "$row" "$n" "$json" >>"$results"
  commands["$part|$row"]=$cmd
  local prev=
  for arg in "$@"; do
    if [[ $prev == --prep ]]; then preps["$part|$row"]=$arg; fi
    prev=$arg
  done
}
# missing PART ROW N TEXT: a row that could not run.
missing() { printf '%s\t%s\t%s\t{"missing": "%s"}\n' "$1" "$2" "$3" "$4" >>"$results"; }

# Options of a cell whose output must name exactly the first N workers: "${exp[@]}".
expect() { exp=(--expect "$T/names.$1" --all "$T/names.all"); }

# ---- The peers' commands (one function per row; $1 = N, $2 = ssh config). -----------
peer_cmd() {
  local tool=$1 n=$2 cfg=$3 inv=$T/inv$2
  [[ $cfg == "\$KEX" ]] && inv=$T/inv$n.kex
  case $tool in
    pdsh) echo "PDSH_SSH_ARGS=\"-F $cfg -x %h\" pdsh -R ssh -f $n -w ^\$T/h$n hostname" ;;
    pssh) echo "parallel-ssh -i -p $n -h \$T/h$n -x \"-F $cfg\" hostname" ;;
    clush) echo "clush -f $n --hostfile=\$T/h$n -o \"-F $cfg\" hostname" ;;
    ansible) echo "LC_ALL=C.UTF-8 ansible -i ${inv/#$T/\$T} all -m command -a hostname -f $n" ;;
    loop) echo "for h in \$(cat \$T/h$n); do ssh -F $cfg \$h hostname & done; rc=0; for p in \$(jobs -p); do wait \$p || rc=1; done; exit \$rc" ;;
  esac
}
peer_label() {
  case $1 in
    pdsh) echo "pdsh" ;; pssh) echo "parallel-ssh" ;; clush) echo "clush" ;;
    ansible) echo "ansible" ;; loop) echo "ssh & loop (informative)" ;;
  esac
}

# ---- tpufleet's commands. Its exec, cp and holder are being written (issue 5): a row
# whose command is not there yet says so and the bench goes on.
# Targets for the first N workers: whole nodes by name, a partial one as NODE:A-B.
tf_targets() {
  head -n "$1" "$T/hosts" | sed -E 's/-w([0-9]+)$/ \1/' | awk -v per="$per_node" '
    { if ($1 != node) flush(); node = $1; if (first == "") first = $2; last = $2; count++ }
    END { flush() }
    function flush() {
      if (node == "") return
      if (count == per) printf "%s ", node
      else if (first == last) printf "%s:%s ", node, first
      else printf "%s:%s-%s ", node, first, last
      first = ""; count = 0
    }' | sed 's/ $//'
}
tf_has() { "$bin" "$1" --help >/dev/null 2>&1; }
TF_STOP="\"\$TPUFLEET\" holder stop >/dev/null 2>&1 || true"
TF_HELPER=(--extra "$TPUFLEET_STATE_DIR/holder.sock")  # the holder's command line names its socket
export TPUFLEET=$bin
tf_exec_cmd() {  # $1 = N, or "all"
  if [[ $1 == all ]]; then echo "\"\$TPUFLEET\" exec all -- hostname"
  else echo "\"\$TPUFLEET\" exec $(tf_targets "$1") -- hostname"; fi
}
tf_cp_cmd() {  # $1 = N, then cp's flags
  local target
  if (($1 == total)); then
    target=all
  elif grep -q "fanout-b$1:" "$T/fleet.yaml"; then
    target="fanout-b$1=yes"
  else
    target=$(tf_targets "$1")
    [[ $target != *" "* ]] || return 1  # several nodes and no label for them
  fi
  echo "\"\$TPUFLEET\" cp ${*:2}${2:+ }\$T/bcast.src $target:bcast.bin"
}
# The tpufleet rows of a cold (holder stopped before each run) or warm table.
tf_exec_rows() {
  local part=$1 mode=$2 n=$3 prep=() warm=$warmup
  if [[ $mode == cold ]]; then prep=(--prep "$TF_STOP"); fi
  if [[ $mode == warm ]] && ((warm < 1)); then warm=1; fi  # the first run starts the holder
  local label="tpufleet exec ($mode)" exp
  expect "$n"
  if ! tf_has exec; then
    missing "$part" "$label" "$n" "tpufleet exec: not built yet"
    return
  fi
  cell "$part" "$label" "$n" "$(tf_exec_cmd "$n")" --runs "$runs" --warmup "$warm" "${prep[@]}" "${exp[@]}" \
    "${TF_HELPER[@]}"
  if ((n == total)); then
    cell "$part" "tpufleet exec all ($mode)" "$n" "$(tf_exec_cmd all)" \
      --runs "$runs" --warmup "$warm" "${prep[@]}" "${exp[@]}" "${TF_HELPER[@]}"
  fi
  if [[ $mode == cold ]]; then bash -c "$TF_STOP"; fi
}

# Ansible keeps ControlPersist masters for 60 s by default: cold runs end them first.
ANSIBLE_HELPER=(--extra "$HOME/.ansible/cp/")  # its masters' titles name their sockets
# Our masters: as started (argv) or as retitled ("ssh: $T/cm/… [mux]").
CM_HELPER=(--extra "-F $CM -o ControlMaster=yes" --extra "$tmp/cm/")
ANSIBLE_STOP="for s in \$HOME/.ansible/cp/*; do [[ -S \$s ]] && ssh -F /dev/null -o ControlPath=\$s -O exit x 2>/dev/null & done; wait"

# ---- A and B: cold. ---------------------------------------------------------------------
if [[ $parts == *" A "* || $parts == *" B "* ]]; then
  "$bin" holder stop >/dev/null 2>&1 || true
fi
for part in A B; do
  [[ $parts == *" $part "* ]] || continue
  cfg='$CFG'
  [[ $part == B ]] && cfg='$KEX'
  for n in "${sizes[@]}"; do
    expect "$n"
    for tool in "${peers[@]}"; do
      prep=()
      if [[ $tool == ansible ]]; then prep=(--prep "$ANSIBLE_STOP" "${ANSIBLE_HELPER[@]}"); fi
      cell "$part" "$(peer_label "$tool")" "$n" "$(peer_cmd "$tool" "$n" "$cfg")" \
        --runs "$runs" --warmup "$warmup" "${prep[@]}" "${exp[@]}"
    done
    if [[ $part == A ]]; then tf_exec_rows A cold "$n"; fi
  done
  bash -c "$ANSIBLE_STOP"
done

# ---- C: warm. ---------------------------------------------------------------------------
if [[ $parts == *" C "* ]]; then
  # One master per worker (default key exchange), started once for all of them.
  start="for h in \$(cat \$T/h$max_exec); do ssh -F \$CM -o ControlMaster=yes -o ControlPersist=1800 -fN \$h & done; wait"
  cell C "ControlMaster start (once)" "$max_exec" "$start" --runs 1 "${CM_HELPER[@]}" \
    --check "[[ \$(find \$T/cm -type s | wc -l) -eq $max_exec ]]"
  for n in "${sizes[@]}"; do
    expect "$n"
    for tool in "${peers[@]}"; do
      case $tool in
        pdsh | pssh | clush | loop)
          cell C "$(peer_label "$tool") via ControlMaster" "$n" "$(peer_cmd "$tool" "$n" '$CM')" \
            --runs "$runs" --warmup "$warmup" "${exp[@]}" "${CM_HELPER[@]}" ;;
        ansible)  # its own masters (ControlPersist=60s): the warm-up run starts them
          cell C "ansible (own ControlPersist)" "$n" "$(peer_cmd ansible "$n" '$CFG')" \
            --runs "$runs" --warmup "$warmup" "${exp[@]}" "${ANSIBLE_HELPER[@]}" ;;
      esac
    done
    bash -c "$ANSIBLE_STOP"
    tf_exec_rows C warm "$n"
  done
  stop_masters "$tmp/cm"
  "$bin" holder stop >/dev/null 2>&1 || true
fi

# ---- D: broadcast. ----------------------------------------------------------------------
if [[ $parts == *" D "* ]]; then
  head -c "$((bcast_mib << 20))" /dev/urandom >"$tmp/bcast.src"
  sum=$(sha256sum "$tmp/bcast.src" | cut -d' ' -f1)
  for n in "${bcast_sizes[@]}"; do
    clean="PDSH_SSH_ARGS=\"-F \$KEX -x %h\" pdsh -R ssh -f 64 -w ^\$T/h$n 'rm -f bcast.bin'; sync"
    check="[[ \$(PDSH_SSH_ARGS=\"-F \$KEX -x %h\" pdsh -R ssh -f 64 -w ^\$T/h$n 'sha256sum bcast.bin' | grep -c ' $sum ') -eq $n ]]"
    opts=(--runs "$bcast_runs" --prep "$clean" --check "$check")
    loop="for h in \$(cat \$T/h$n); do %s & done; rc=0; for p in \$(jobs -p); do wait \$p || rc=1; done; exit \$rc"
    # shellcheck disable=SC2059
    {
      cell D pdcp "$n" "PDSH_SSH_ARGS=\"-F \$CFG -x %h\" pdcp -R ssh -f $n -w ^\$T/h$n \$T/bcast.src bcast.bin" "${opts[@]}"
      cell D "clush --copy" "$n" "clush -f $n --hostfile=\$T/h$n -o \"-F \$CFG\" --copy \$T/bcast.src --dest bcast.bin" "${opts[@]}"
      cell D "scp & loop" "$n" "$(printf "$loop" "scp -q -F \$CFG \$T/bcast.src \$h:bcast.bin")" "${opts[@]}"
      cell D "ssh 'cat >' & loop (informative)" "$n" "$(printf "$loop" "ssh -F \$CFG \$h 'cat > bcast.bin' < \$T/bcast.src")" "${opts[@]}"
    }
    for flags in "" --no-relay; do
      row="tpufleet cp${flags:+ $flags} (cold)"
      if ! tf_has cp; then
        missing D "$row" "$n" "tpufleet cp: not built yet"
      elif ! cmd=$(tf_cp_cmd "$n" $flags); then
        missing D "$row" "$n" "no single target for $n workers (use a multiple of $per_node)"
      else
        cell D "$row" "$n" "$cmd" "${opts[@]}" --prep "$clean; $TF_STOP" "${TF_HELPER[@]}"
      fi
    done
  done
fi

# ---- Report. ----------------------------------------------------------------------------
for k in "${!commands[@]}"; do
  printf '%s\t%s\t%s\n' "$k" "${commands[$k]}" "${preps[$k]:-}"
done >"$tmp/commands.tsv"
python3 - "$results" "$tmp/commands.tsv" "$bcast_mib" "$(nproc)" "$node_type" "$nodes" "$per_node" "$runs" "$warmup" <<'PY'
import json, sys
res_path, cmd_path, mib, cores, ntype, nodes, per, runs, warm = sys.argv[1:]
mib = int(mib)
cells, order, sizes = {}, {}, {}
for line in open(res_path):
    part, row, n, js = line.rstrip("\n").split("\t", 3)
    n = int(n)
    cells[(part, row, n)] = json.loads(js)
    order.setdefault(part, [])
    if row not in order[part]:
        order[part].append(row)
    sizes.setdefault(part, [])
    if n not in sizes[part]:
        sizes[part].append(n)
cmds = {}
for l in open(cmd_path):
    k, c, p = l.rstrip("\n").split("\t", 2)
    cmds[k] = (c, p)
failed = False

def f(x):
    return f"{x:.3f}" if x < 0.1 else f"{x:.2f}"
def fmt(c, part, n):
    global failed
    if c is None:
        return "—"
    if "missing" in c:
        return c["missing"]
    if "error" in c:
        failed = True
        return "error"
    s = f"{f(c['wall'])} / {f(c['client'])} / {f(c['total'])}"
    if part == "D":
        s += f" ({n * mib * 1.048576 / c['wall']:.0f} MB/s)"
    if c["fails"]:
        failed = True
        s += f" **FAILED {len(c['fails'])}/{c['runs']}**"
    return s
def ok(c):
    return c is not None and "wall" in c and not c["fails"]

titles = {
    "A": "A. Cold exec of `hostname`, OpenSSH defaults (tpufleet's ssh config as written)",
    "B": "B. Cold exec, peers held to tpufleet's key exchange (curve25519-sha256, aes128-ctr, hmac-sha2-256)",
    "C": "C. Warm exec: peers through OpenSSH ControlMaster, tpufleet's second run",
    "D": f"D. Broadcast of a {mib} MiB random file",
}
print(f"### SSH fan-out ({cores} cores; {nodes} x {ntype} on the emulator, {per} workers each; "
      f"medians of {runs} runs after {warm} warm-up, D without warm-up)")
print()
print("Each cell: median wall s / client CPU s / total CPU s (D: and aggregate MB/s). "
      "Client CPU: the tool and its children, plus what the helpers it keeps running spent "
      "meanwhile (tpufleet's holder, ssh ControlMasters); total CPU: the whole machine "
      "(/proc/stat), workers' sshd included.")
for part in sizes:
    sizes[part].sort()
for part in "ABCD":
    if part not in order:
        continue
    ns = sizes[part]
    print()
    print(f"**{titles[part]}**")
    print()
    print("| tool | " + " | ".join(f"N={n}" for n in ns) + " |")
    print("|---|" + "---|" * len(ns))
    for row in order[part]:
        print(f"| {row} | " + " | ".join(fmt(cells.get((part, row, n)), part, n) for n in ns) + " |")

# Ratios: best peer / tpufleet, on wall time (and the CPUs, informative).
peers = {"A": ["pdsh", "parallel-ssh", "clush", "ansible"],
         "B": ["pdsh", "parallel-ssh", "clush", "ansible"],
         "C": ["pdsh via ControlMaster"],
         "D": ["pdcp", "clush --copy", "scp & loop"]}
goals = {"A": ("tpufleet exec (cold)", 4, "cold exec vs the best peer at its defaults"),
         "B": ("tpufleet exec (cold)", 1.5, "cold exec vs the best peer at equal key exchange"),
         "C": ("tpufleet exec (warm)", 2, "warm exec vs pdsh through ControlMaster"),
         "D": ("tpufleet cp (cold)", 2, "broadcast vs the best peer")}
print()
print("**Ratios** (best peer ÷ tpufleet; goal at N=256 for exec, N=64 for the broadcast)")
print()
for part in "ABCD":
    if part not in order:
        continue
    tf_row, goal, what = goals[part]
    for n in sizes[part]:
        tf = cells.get(("A" if part == "B" else part, tf_row, n))
        cand = [(cells[(part, p, n)]["wall"], p) for p in peers[part] if ok(cells.get((part, p, n)))]
        if not cand:
            continue
        wall, best = min(cand)
        b = cells[(part, best, n)]
        if tf is None or "missing" in tf or not ok(tf):
            why = tf["missing"] if tf and "missing" in tf else "no valid tpufleet run"
            print(f"- {part}, N={n}, {what}: best peer {best} {f(wall)} s; {why}")
            continue
        r = [b[k] / tf[k] if tf[k] > 0 else float("inf") for k in ("wall", "client", "total")]
        print(f"- {part}, N={n}, {what} (goal ≥ {goal}×): {best} ÷ tpufleet = "
              f"**{r[0]:.1f}× wall** ({r[1]:.1f}× client CPU, {r[2]:.1f}× total CPU)")

print()
print("**Commands** (`$T`: the bench's temp dir with the host lists `h<N>` and inventories; "
      "`$CFG`: `$TPUFLEET_STATE_DIR/ssh/config` as `tpufleet up` wrote it; `$KEX`: a copy "
      "starting with `KexAlgorithms curve25519-sha256`, `Ciphers aes128-ctr`, `MACs hmac-sha2-256`; "
      "`$CM`: a copy starting with `ControlMaster no`, `ControlPath $T/cm/%C`)")
print()
print("```")
for part in "ABCD":
    for row in order.get(part, []):
        if f"{part}|{row}" in cmds:
            c, p = cmds[f"{part}|{row}"]
            print(f"# {part}, {row} (N = its last column)")
            if p:
                print(f"#   before each run, untimed: {p}")
            print(c)
print("```")
sys.exit(1 if failed else 0)
PY
