#!/usr/bin/env bash
# Fleet commands against the local emulator: `status` from local state vs `status
# --refresh` (which asks the API about every zone), and `up` of 16 single-host nodes from
# nothing (create, READY, host keys, SSH login, setup) and again when nothing changed.
# hyperfine gives wall time (mean ± σ) and CPU (user+sys) of the tpufleet process; the
# emulator's own CPU is not counted.
#
# There is no peer to run beside it here: gcloud, SkyPilot and xpk need Google's API
# (no network in this workplace). The comparable figure from the peers' own reports is
# in the RESULTS table's notes.
#
# Needs root (the emulator's workers are network namespaces); without it, it skips.
# Usage: bench/fleet.sh path/to/tpufleet [NODES]
set -euo pipefail
bin=$(realpath "$1")
nodes=${2:-16}
if [[ $(id -u) -ne 0 ]]; then
  echo "fleet bench: skipped (needs root)"
  exit 0
fi
tmp=$(mktemp -d /tmp/tpufleet-fleet-bench.XXXXXX)
export HOME=$tmp/home TPUFLEET_STATE_DIR=$tmp/state TPUFLEET_EMULATOR_DIR=$tmp/emulator
mkdir -p "$HOME"
trap '"$bin" down --all --yes >/dev/null 2>&1 || true; "$bin" emulator stop >/dev/null 2>&1 || true
      rm -rf "$tmp"' EXIT

spec=$tmp/fleet.yaml
# shellcheck source=bench/spec_lib.sh
source "$(dirname "$0")/spec_lib.sh"
single_host_spec "$spec" bench "$nodes" 'echo ok > ~/setup.txt'
"$bin" emulator start >/dev/null

echo "## Fleet commands on the emulator ($(nproc) cores, $nodes single-host nodes)"
echo
json=$tmp/hf.json
hyperfine -N --runs 3 --prepare "$bin down --all --yes" --export-json "$json.up" \
  "$bin up $spec" >/dev/null
"$bin" up "$spec" >/dev/null
hyperfine -N --runs 5 --export-json "$json.again" "$bin up $spec" >/dev/null
hyperfine -N --warmup 3 --runs 30 --export-json "$json.status" \
  "$bin status" "$bin status --refresh" >/dev/null

echo "| command | wall mean ± σ | CPU user+sys |"
echo "|---|---|---|"
for f in "$json.up" "$json.again" "$json.status"; do
  python3 - "$f" "$tmp/" <<'PY'
import json, sys
for r in json.load(open(sys.argv[1]))["results"]:
    cmd = r["command"].split("/tpufleet ", 1)[1].replace(sys.argv[2], "")
    mean, sd = r["mean"], r["stddev"] or 0
    unit, k = ("ms", 1e3) if mean < 1 else ("s", 1)
    cpu = (r["user"] + r["system"]) * 1e3
    print(f"| `tpufleet {cmd}` | {mean*k:.2f} ± {sd*k:.2f} {unit} | {cpu:.1f} ms |")
PY
done
