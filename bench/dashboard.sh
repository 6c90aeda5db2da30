#!/usr/bin/env bash
# The dashboard with many nodes and many people looking (issue 17): `tpufleet serve`
# keeping NODES single-host spot nodes on the local emulator (each worker a real host with
# the agent `up` installs; a job on JOBS of them, node n-0's the TPU stand-in so that its
# plots have samples), and Debian's chromium, headless, opening its dashboard: first alone,
# then while DASHBOARDS open dashboards ask what theirs ask (bench/dashboard_load.js says
# how, and what is timed). serve's CPU is its own (/proc); chromium's, the emulator's and
# the agents' are not counted.
#
# Needs root (the emulator's workers are network namespaces), node, chromium and
# test/browser's node_modules (scripts/setup-deps.sh); without them, it skips.
# Usage: bench/dashboard.sh path/to/tpufleet [NODES] [DASHBOARDS] [SECONDS] [JOBS]
#   NODES       nodes kept (v5litepod-4, spot), default 256
#   DASHBOARDS  dashboards open at once, default 50
#   SECONDS     the loaded window, default 120
#   JOBS        nodes running a job, default 16
set -euo pipefail

here=$(dirname "$0")
# shellcheck source=bench/agent_lib.sh
source "$here/agent_lib.sh"
bench_start dashboard "$1"
nodes=${2:-256}
dashboards=${3:-50}
window=${4:-120}
jobs=${5:-16}
if ! command -v node >/dev/null || ! command -v chromium >/dev/null ||
  [[ ! -d $here/../test/browser/node_modules/puppeteer-core ]]; then
  say "skipped: needs node, chromium and test/browser/node_modules (scripts/setup-deps.sh)"
  rm -rf "$tmp"
  exit 0
fi
serve_pid=""
cleanup() {
  set +e
  for p in $(pgrep -f "chromium.*$tmp/" 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done
  [[ -n $serve_pid ]] && kill "$serve_pid" 2>/dev/null && wait "$serve_pid" 2>/dev/null
  bench_end
  bench_inotify_restore
}
trap cleanup EXIT
trap 'exit 130' INT TERM
bench_inotify_raise "$nodes"

say "starting the emulator"
"$bin" emulator start >/dev/null
spec=$tmp/fleet.yaml
cat >"$spec" <<YAML
fleet: dash
provider: emulator
owner: ada
budget: {usd_per_day: 20000}
nodes:
  - name: n
    type: v5litepod-4
    capacity: spot
    count: $nodes
    zones: [us-west4-a]
YAML
say "up of $nodes nodes"
up_start=$SECONDS
"$bin" up "$spec" --timeout 30m >"$tmp/up.txt" 2>&1 || { tail -20 "$tmp/up.txt" >&2; exit 1; }
say "up took $((SECONDS - up_start)) s; a job on $jobs nodes"
"$bin" run --detach n-0 --name plotted -- tpu-standin --duty-cycle 40 --step-ms 1000 \
  >"$tmp/run.txt" 2>&1 || { tail -5 "$tmp/run.txt" >&2; exit 1; }
for i in $(seq 1 $((jobs - 1))); do
  "$bin" run --detach "n-$i" --name "job-$i" --no-accelerator -- \
    sh -c 'while :; do date; sleep 5; done' >"$tmp/run.txt" 2>&1 ||
    { say "run on n-$i failed:"; tail -5 "$tmp/run.txt" >&2; exit 1; }
done
log_job=$("$bin" jobs --json | jq -r '.jobs[] | select(.name == "plotted") | .id')

bench_serve "$spec" "$tmp/serve.log" || exit 1
# Two metrics rounds (30 s apart) give the goodput report its first measured hour.
say "serve started; 70 s for its first passes and metrics rounds"
sleep 70

echo "## The dashboard: $nodes nodes, $dashboards dashboards ($(nproc) cores, ${window} s window, $(date -u '+%Y-%m-%d %H:%M') UTC)"
echo
TMPDIR=$tmp HOME=$tmp/home node "$here/dashboard_load.js" "https://127.0.0.1:$serve_port" \
  "$TPUFLEET_STATE_DIR/serve/token" "$nodes" "$serve_pid" "$dashboards" "$window" 30 5 \
  n-0 "$log_job"
echo
echo "Rerun (as root): bench/dashboard.sh $1 $nodes $dashboards $window $jobs"
