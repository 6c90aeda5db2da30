#!/usr/bin/env bash
# Runs every benchmark and prints its tables. Usage: bench/run.sh path/to/tpufleet
# To record the results, pass a second argument: bench/run.sh BIN bench/RESULTS.md
# FANOUT=1 also runs bench/fanout.sh (issue 5's SSH fan-out against pdsh & co., 1-1.5 h).
set -euo pipefail
here=$(dirname "$0")
"$here/cli_latency.sh" "$@"
"$here/fleet.sh" "$1"
"$here/emulator_hosts.sh" "$(dirname "$1")/../emulator/hosts/emulator_hosts_bench"
if [[ ${FANOUT:-0} == 1 ]]; then
  "$here/fanout.sh" "$1"
fi
