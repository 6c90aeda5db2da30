#!/usr/bin/env bash
# `tpufleet serve` keeping N single-host nodes on the local emulator (by default 16, then
# 64, then 256: the fleet grows between sizes), each worker a real host with the node
# agent `up` installs: what one reconcile pass costs and how many API calls serve makes,
# in a steady state (nothing to do but watch) and while it recovers N/16 spot nodes
# preempted at once. Per size and window:
#   CPU per pass  serve's own user+sys CPU (/proc/PID/stat) over the window, divided by
#                 the passes it made in it (its /metrics); beside it the last pass's
#                 CPU and wall time as /metrics reports them
#                 (tpufleet_reconcile_pass_seconds, tpufleet_reconcile_pass_wall_seconds)
#   API calls     per minute, from serve's /metrics (tpufleet_api_calls_total)
#   memory        serve's VmRSS at the window's end; the peak of its anonymous part
#                 (RssAnon, sampled every second), and VmHWM, its peak RSS including
#                 the file pages it maps (the agent binary a recovery installs is
#                 mmapped by each install job: page cache, counted once per mapping)
#   load          the machine's 1-minute load average at the window's end
# The emulator's and the agents' CPU are not counted.
#
# Needs root (the emulator's workers are network namespaces); without it, it skips.
# Usage: bench/serve.sh path/to/tpufleet [SIZES] [SECONDS] [PASS]
#   SIZES    single-host spot nodes (v5litepod-4) kept, ascending, default "16 64 256"
#   SECONDS  length of each measured window, default 120
#   PASS     serve's --pass, default 5 (serve's own default)
set -euo pipefail

# shellcheck source=bench/agent_lib.sh
source "$(dirname "$0")/agent_lib.sh"
bench_start serve "$1"
read -r -a sizes <<<"${2:-16 64 256}"
window=${3:-120}
pass=${4:-5}
serve_pid=""
# serve_stop: ends this bench's serve (SIGTERM, then SIGKILL after 30 s).
serve_stop() {
  [[ -n $serve_pid ]] || return 0
  kill "$serve_pid" 2>/dev/null || true
  for _ in $(seq 1 30); do
    kill -0 "$serve_pid" 2>/dev/null || break
    sleep 1
  done
  kill -KILL "$serve_pid" 2>/dev/null || true
  wait "$serve_pid" 2>/dev/null || true
  serve_pid=""
}
cleanup() {
  set +e
  serve_stop
  bench_end
  bench_inotify_restore
}
trap cleanup EXIT
trap 'exit 130' INT TERM
bench_inotify_raise "${sizes[-1]}"

say "starting the emulator"
"$bin" emulator start >/dev/null
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
spec=$tmp/fleet.yaml

metrics() {
  curl -s --max-time 30 --cacert "$TPUFLEET_STATE_DIR/serve/tls.crt" \
    -H @<(printf 'Authorization: Bearer %s\n' "$(cat "$TPUFLEET_STATE_DIR/serve/token")") \
    "https://127.0.0.1:$port/metrics"
}
# metric NAME FILE: the sum of NAME's samples (every label set) in FILE; 0 when absent.
metric() { awk -v n="$1" '$1 == n || index($1, n "{") == 1 { s += $NF } END { print s + 0 }' "$2"; }
cpu_seconds() {  # utime + stime of serve (every thread), in seconds
  awk -v hz="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); print ($12 + $13) / hz }' "/proc/$serve_pid/stat"
}
kib() { awk -v k="$1:" '$1 == k { print $2 }' "/proc/$serve_pid/status"; }

# measure SIZE LABEL: one window of serve keeping SIZE nodes; prints a table row.
measure() {
  local size=$1 label=$2 c0 c1 t0 t1 rss hwm load anon=0 a
  metrics >"$tmp/a.txt"
  c0=$(cpu_seconds)
  t0=$(date +%s.%N)
  for _ in $(seq 1 "$window"); do
    sleep 1
    a=$(kib RssAnon || true)
    if ((${a:-0} > anon)); then anon=$a; fi
  done
  metrics >"$tmp/b.txt"
  c1=$(cpu_seconds)
  t1=$(date +%s.%N)
  rss=$(kib VmRSS)
  hwm=$(kib VmHWM)
  load=$(cut -d' ' -f1 /proc/loadavg)
  awk -v n="$size" -v l="$label" -v c0="$c0" -v c1="$c1" -v t0="$t0" -v t1="$t1" \
    -v p="$(($(metric tpufleet_reconcile_passes_total "$tmp/b.txt") - $(metric tpufleet_reconcile_passes_total "$tmp/a.txt")))" \
    -v api="$(($(metric tpufleet_api_calls_total "$tmp/b.txt") - $(metric tpufleet_api_calls_total "$tmp/a.txt")))" \
    -v last="$(metric tpufleet_reconcile_pass_seconds "$tmp/b.txt")" \
    -v wall="$(metric tpufleet_reconcile_pass_wall_seconds "$tmp/b.txt")" \
    -v rss="$rss" -v anon="$anon" -v hwm="$hwm" -v load="$load" \
    'BEGIN {
       c = c1 - c0; t = t1 - t0;
       per = p > 0 ? sprintf("%.1f ms", 1000 * c / p) : "no pass counted";
       printf "| %d | %s | %.0f s | %d | %.2f s (%.2f %% of a core) | %s | %.1f / %.1f ms | %.1f | %.1f / %.1f / %.1f MiB | %s |\n",
              n, l, t, p, c, 100 * c / t, per, 1000 * last, 1000 * wall, api * 60 / t, rss / 1024, anon / 1024,
              hwm / 1024, load
     }'
}

echo "## serve keeping ${sizes[*]} nodes on the emulator ($(nproc) cores, --pass $pass, ${window} s windows, $(date -u '+%Y-%m-%d %H:%M') UTC)"
echo
echo "| nodes | window | length | passes | serve CPU | CPU per pass | last pass CPU / wall (metrics) | API calls/min | RSS / anon peak / HWM | load |"
echo "|---|---|---|---|---|---|---|---|---|---|"
notes=()
for n in "${sizes[@]}"; do
  cat >"$spec" <<YAML
fleet: bench
provider: emulator
nodes:
  - name: n
    type: v5litepod-4
    capacity: spot
    count: $n
    zones: [us-west4-a]
    setup: echo ok > ~/setup.txt
YAML
  say "up of $n nodes"
  up_start=$SECONDS
  "$bin" up "$spec" --timeout 30m >"$tmp/up.txt" 2>&1 || { tail -20 "$tmp/up.txt" >&2; exit 1; }
  up_took=$((SECONDS - up_start))

  "$bin" serve "$spec" --pass "$pass" --listen "127.0.0.1:$port" 2>"$tmp/serve-$n.log" &
  serve_pid=$!
  # Until serve's first pass shows in its metrics (a minute at most).
  for _ in $(seq 1 60); do
    kill -0 "$serve_pid" 2>/dev/null || { say "serve exited:"; tail -5 "$tmp/serve-$n.log" >&2; exit 1; }
    metrics >"$tmp/m0.txt" 2>/dev/null && [[ $(metric tpufleet_reconcile_passes_total "$tmp/m0.txt") -gt 0 ]] && break
    sleep 1
  done
  [[ $(metric tpufleet_reconcile_passes_total "$tmp/m0.txt") -gt 0 ]] ||
    { say "no pass in serve's /metrics after a minute"; exit 1; }
  # The first passes start every agent's notice stream: let them settle first.
  sleep "$((pass * 3))"
  say "$n nodes: steady window"
  measure "$n" "steady"
  preempted=$((n / 16 > 0 ? n / 16 : 1))
  say "$n nodes: $preempted preempted at once"
  for i in $(seq 0 $((preempted - 1))); do
    "$bin" emulator inject preempt "n-$((i * n / preempted))" --notice 1s >/dev/null
  done
  measure "$n" "$preempted preempted, recovered"
  notes+=("$n nodes: \`up\` took ${up_took} s; recoveries counted by serve $(metric tpufleet_recoveries_total "$tmp/b.txt") of $preempted, preemptions $(metric tpufleet_preemptions_total "$tmp/b.txt")")
  cp "$tmp/b.txt" "$tmp/metrics-$n.txt"
  serve_stop
done
echo
for line in "${notes[@]}"; do echo "- $line."; done
echo
echo "Rerun: bench/serve.sh $1 \"${sizes[*]}\" $window $pass"
