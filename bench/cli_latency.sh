#!/usr/bin/env bash
# Latency of the commands that answer without a network (target: ~10 ms each), measured
# with hyperfine: wall time (mean ± σ) and CPU time (user + system) per run.
#
# No peer answers these questions offline on this machine (gcloud and SkyPilot need the
# network and PyPI, which CI cannot reach), so for scale the table includes the floor any
# Python CLI pays before doing any work: starting the interpreter (gcloud, sky and
# tpunicorn are Python programs).
#
# Usage: bench/cli_latency.sh path/to/tpufleet [RESULTS_MD]
set -euo pipefail
bin=$(realpath "$1")
out=${2:-}
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export HOME=$tmp   # no user catalog override

commands=(
  "$bin catalog"
  "$bin catalog v4-32"
  "$bin catalog v4-32 --json"
  "$bin estimate v6e-256 --hours 24 --spot"
  "$bin plan --hbm-gib 32 --host-ram-gib 250"
  "$bin validate $root/examples/fleet.yaml"
  "python3 -c pass"
)
hyperfine -N --warmup 5 --min-runs 50 --export-json "$tmp/h.json" "${commands[@]}" >/dev/null

table=$(python3 - "$tmp/h.json" "$bin" "$root" <<'PY'
import json, sys
data, binary, root = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3]
print("| command | wall mean ± σ (ms) | CPU user+sys (ms) |")
print("|---|---|---|")
for r in data["results"]:
    cmd = r["command"].replace(binary, "tpufleet").replace(root + "/", "")
    print(f"| `{cmd}` | {r['mean']*1e3:.2f} ± {r['stddev']*1e3:.2f} | {(r['user']+r['system'])*1e3:.2f} |")
PY
)
echo "$table"
if [[ -n $out ]]; then
  {
    echo "### CLI latency, $(date -u +%Y-%m-%d), $(nproc) cores"
    echo
    echo "$table"
    echo
  } >> "$out"
fi
