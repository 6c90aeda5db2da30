#!/usr/bin/env bash
# Runs every benchmark and prints its tables. Usage: bench/run.sh path/to/tpufleet
# To record the results, pass a second argument: bench/run.sh BIN bench/RESULTS.md
# bench/agent.sh (the node agent's memory and CPU, issue 12) takes about 4 minutes.
# FANOUT=1 also runs bench/fanout.sh (issue 5's SSH fan-out against pdsh & co., 1-1.5 h);
# JOBS=1 also runs bench/jobs.sh (issue 12's run to every rank started next to exec on 4,
# 64 and 256 workers, about 15 minutes).
# SERVE=1 also runs bench/serve.sh (issue 14's serve: CPU per reconcile
# pass and API calls per minute at 16, 64 and 256 nodes, about 20 minutes).
# DASHBOARD=1 also runs bench/dashboard.sh (issue 17's dashboard: page loads and serve's
# CPU with 256 nodes and 50 open dashboards, about 20 minutes).
set -euo pipefail
here=$(dirname "$0")
"$here/cli_latency.sh" "$@"
"$here/fleet.sh" "$1"
"$here/emulator_hosts.sh" "$(dirname "$1")/../emulator/hosts/emulator_hosts_bench"
"$here/agent.sh" "$1"
if [[ ${FANOUT:-0} == 1 ]]; then
  "$here/fanout.sh" "$1"
fi
if [[ ${JOBS:-0} == 1 ]]; then
  "$here/jobs.sh" "$1"
fi
if [[ ${SERVE:-0} == 1 ]]; then
  "$here/serve.sh" "$1"
fi
if [[ ${DASHBOARD:-0} == 1 ]]; then
  "$here/dashboard.sh" "$1"
fi
