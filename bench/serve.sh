#!/usr/bin/env bash
# `tpufleet serve` keeping N single-host nodes (default 256) on the local emulator, each
# worker a real host with the node agent `up` installs: what one reconcile pass costs
# and how many API calls serve makes, in a steady state (nothing to do but watch) and
# while it recovers a batch of spot nodes preempted at once.
#   CPU per pass  serve's own user+sys CPU (/proc/PID/stat) over a window, divided by
#                 the passes it made in that window (its /metrics); serve's last pass
#                 as /metrics reports it beside it
#   API calls     per minute, from serve's /metrics (tpufleet_api_calls_total)
# The emulator's and the agents' CPU are not counted.
#
# Needs root (the emulator's workers are network namespaces); without it, it skips.
# Usage: bench/serve.sh path/to/tpufleet [NODES] [SECONDS] [PASS]
#   NODES    single-host spot nodes (v5litepod-4), default 256
#   SECONDS  length of each measured window, default 120
#   PASS     serve's --pass, default 5 (serve's own default)
set -euo pipefail
bin=$(realpath "$1")
nodes=${2:-256}
window=${3:-120}
pass=${4:-5}
# How many nodes the recovery window preempts at once.
readonly kPreempted=16
if [[ $(id -u) -ne 0 ]]; then
  echo "serve bench: skipped (needs root)"
  exit 0
fi
tmp=$(mktemp -d /tmp/tpufleet-serve-bench.XXXXXX)
export HOME=$tmp/home TPUFLEET_STATE_DIR=$tmp/state TPUFLEET_EMULATOR_DIR=$tmp/emulator
mkdir -p "$HOME"
serve_pid=""
# Every step of the clean-up runs though one fails (set -e would end the trap there).
trap '[[ -z $serve_pid ]] || kill "$serve_pid" 2>/dev/null || true
      "$bin" down --all --yes >/dev/null 2>&1 || true; "$bin" emulator stop >/dev/null 2>&1 || true
      rm -rf "$tmp"' EXIT
"$bin" emulator start >/dev/null
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')

spec=$tmp/fleet.yaml
cat >"$spec" <<YAML
fleet: bench
provider: emulator
nodes:
  - name: n
    type: v5litepod-4
    capacity: spot
    count: $nodes
    zones: [us-west4-a]
    setup: echo ok > ~/setup.txt
YAML
up_start=$SECONDS
"$bin" up "$spec" --timeout 30m >"$tmp/up.txt" 2>&1 || { tail -20 "$tmp/up.txt"; exit 1; }
up_seconds=$((SECONDS - up_start))

"$bin" serve "$spec" --pass "$pass" --listen "127.0.0.1:$port" 2>"$tmp/serve.log" &
serve_pid=$!
metrics() {
  curl -s --max-time 30 -H @<(printf 'Authorization: Bearer %s\n' "$(cat "$TPUFLEET_STATE_DIR/serve/token")") \
    "http://127.0.0.1:$port/metrics"
}
# metric NAME FILE: the sum of NAME's samples (every label set) in FILE; 0 when absent.
metric() { awk -v n="$1" '$1 == n || index($1, n "{") == 1 { s += $NF } END { print s + 0 }' "$2"; }
cpu_seconds() {  # utime + stime of serve, in seconds
  awk -v hz="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); print ($12 + $13) / hz }' "/proc/$serve_pid/stat"
}
# Until serve's first pass shows in its metrics (a minute at most).
for _ in $(seq 1 60); do
  kill -0 "$serve_pid" 2>/dev/null || { echo "serve exited:"; tail -5 "$tmp/serve.log"; exit 1; }
  metrics >"$tmp/m0.txt" 2>/dev/null && grep -q '^tpufleet_reconcile_pass' "$tmp/m0.txt" && break
  sleep 1
done
grep -q '^tpufleet_reconcile_pass' "$tmp/m0.txt" || { echo "no pass in serve's /metrics after a minute"; exit 1; }
# The first passes start every agent's notice stream: let them settle first.
sleep "$((pass * 3))"

# measure LABEL: one window; prints a table row.
measure() {
  local label=$1 c0 c1 p0 p1 a0 a1 t0 t1
  metrics >"$tmp/a.txt"
  c0=$(cpu_seconds)
  t0=$(date +%s.%N)
  sleep "$window"
  metrics >"$tmp/b.txt"
  c1=$(cpu_seconds)
  t1=$(date +%s.%N)
  p0=$(metric tpufleet_reconcile_passes_total "$tmp/a.txt")
  p1=$(metric tpufleet_reconcile_passes_total "$tmp/b.txt")
  a0=$(metric tpufleet_api_calls_total "$tmp/a.txt")
  a1=$(metric tpufleet_api_calls_total "$tmp/b.txt")
  awk -v l="$label" -v c="$(awk -v a="$c0" -v b="$c1" 'BEGIN { print b - a }')" \
    -v p="$(awk -v a="$p0" -v b="$p1" 'BEGIN { print b - a }')" \
    -v api="$(awk -v a="$a0" -v b="$a1" 'BEGIN { print b - a }')" \
    -v t="$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')" \
    -v last="$(grep -E '^tpufleet_reconcile_pass_seconds(_sum)? ' "$tmp/b.txt" | awk '{print $2}' | head -1)" \
    'BEGIN {
       per = p > 0 ? sprintf("%.1f ms", 1000 * c / p) : "no pass counted";
       printf "| %s | %.0f s | %d | %.2f s (%.1f %% of a core) | %s | %s | %.0f |\n",
              l, t, p, c, 100 * c / t, per, last == "" ? "-" : last, api * 60 / t
     }'
}

echo "## serve keeping $nodes nodes on the emulator ($(nproc) cores, --pass $pass, ${window} s windows)"
echo
echo "up of the $nodes nodes (with agents): ${up_seconds} s."
echo
echo "| window | length | passes | serve CPU | CPU per pass | pass seconds (metrics) | API calls/min |"
echo "|---|---|---|---|---|---|---|"
measure "steady (nothing to do)"
for i in $(seq 0 $((kPreempted - 1))); do
  "$bin" emulator inject preempt "n-$((i * nodes / kPreempted))" --notice 1s >/dev/null
done
measure "$kPreempted preempted at once, recovered"
cp "$tmp/b.txt" "$tmp/metrics-end.txt"
echo
echo "Recoveries counted by serve: $(metric tpufleet_recoveries_total "$tmp/metrics-end.txt") of $kPreempted;" \
  "preemptions: $(metric tpufleet_preemptions_total "$tmp/metrics-end.txt")."
echo "Rerun: bench/serve.sh $1 $nodes $window $pass"
