#!/usr/bin/env bash
# The emulator's worker hosts: wall time until every worker's sshd accepts connections,
# for 16, 64 and 256 workers (one node, and a fleet of 4-worker nodes booted by 4
# threads), cold (first boot: host keys, users) and warm (restart), plus halt and
# destroy times and memory per worker (RSS, PSS, and the drop in MemAvailable).
# Target (DESIGN.md): 256 workers up in under a minute on a 2-core machine.
#
# Needs root (workers are network namespaces); without it, it says so and skips.
# Usage: bench/emulator_hosts.sh path/to/emulator_hosts_bench [SIZES]   (SIZES: 16,64,256)
set -euo pipefail
bin=$(realpath "$1")
sizes=${2:-16,64,256}
if [[ $(id -u) -ne 0 ]]; then
  echo "emulator hosts bench: skipped (needs root)"
  exit 0
fi
state=$(mktemp -d /tmp/tpufleet-hosts-bench.XXXXXX)
# However the bench ends, no worker, veth, bridge or disk stays: its workers die with it
# (death signal), and --clean removes the bridge and the disks.
trap '"$bin" --clean --state="$state" || true' EXIT
echo "## Emulator worker hosts ($(nproc) cores)"
echo
"$bin" --sizes="$sizes" --state="$state"
