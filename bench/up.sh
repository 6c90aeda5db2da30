#!/usr/bin/env bash
# `up` of N single-host nodes from nothing on the local emulator (create, READY, host
# keys, the SSH login check and a one-line setup on every worker, SSH files written),
# for two builds of tpufleet side by side in the same run, on the same emulator: issue
# 11 moved up's login check and setup from one `ssh` process per worker onto the libssh2
# fan-out engine, and its nodes from a thread each onto one loop.
# hyperfine gives wall time (mean ± σ) and CPU (user+sys) of the tpufleet process and
# its children (the ssh processes of the build before); the emulator's own CPU is not
# counted. Each run starts from nothing (`down --all` before it, not timed).
#
# Needs root (the emulator's workers are network namespaces); without it, it skips.
# Usage: bench/up.sh path/to/tpufleet path/to/tpufleet-before ["16 64"] [RUNS]
set -euo pipefail
after=$(realpath "$1")
before=$(realpath "$2")
sizes=${3:-"16 64"}
runs=${4:-3}
if [[ $(id -u) -ne 0 ]]; then
  echo "up bench: skipped (needs root)"
  exit 0
fi
tmp=$(mktemp -d /tmp/tpufleet-up-bench.XXXXXX)
export HOME=$tmp/home TPUFLEET_STATE_DIR=$tmp/state TPUFLEET_EMULATOR_DIR=$tmp/emulator
mkdir -p "$HOME"
trap '"$after" down --all --yes >/dev/null 2>&1 || true; "$after" emulator stop >/dev/null 2>&1 || true
      rm -rf "$tmp"' EXIT
"$after" emulator start >/dev/null

echo "## up of N single-host nodes on the emulator ($(nproc) cores, $runs runs each)"
echo
echo "| nodes | build | wall mean ± σ | CPU user+sys |"
echo "|---|---|---|---|"
for n in $sizes; do
  spec=$tmp/fleet-$n.yaml
  cat >"$spec" <<YAML
fleet: bench
provider: emulator
nodes:
  - name: n
    type: v5litepod-4
    count: $n
    zones: [us-west4-a]
    setup: echo ok > ~/setup.txt
YAML
  for build in before after; do
    bin=${!build}
    hyperfine -N --runs "$runs" --prepare "$bin down --all --yes" \
      --export-json "$tmp/$build-$n.json" "$bin up $spec" >/dev/null
    python3 - "$tmp/$build-$n.json" "$n" "$build" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["results"][0]
mean, sd = r["mean"], r["stddev"] or 0
print(f"| {sys.argv[2]} | {sys.argv[3]} | {mean:.2f} ± {sd:.2f} s | {r['user'] + r['system']:.2f} s |")
PY
  done
done
"$after" down --all --yes >/dev/null
