#!/usr/bin/env bash
# The tpufleet demo: the questions a TPU user asks on day one, answered offline.
# Usage: scripts/demo.sh path/to/tpufleet
set -euo pipefail
bin=$(realpath "${1:-build/src/app/tpufleet}")
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"  # so paths in messages read as a user would type them
tpufleet() { "$bin" "$@"; }

step() {
  printf '\n\033[1m== %s\033[0m\n$ tpufleet %s\n' "$1" "${*:2}"
}

step "Which TPU families are there?" catalog
tpufleet catalog
step "What is a v4-32?" catalog v4-32
tpufleet catalog v4-32
step "What does a v6e-8 cost for a day, on demand and on spot?" estimate v6e-8 --hours 24 --spot
tpufleet estimate v6e-8 --hours 24 --spot
step "Which hardware fits a model needing 32 GiB of HBM per replica and 250 GiB of host RAM?" \
  plan --hbm-gib 32 --host-ram-gib 250 --max-usd-per-hour 30
tpufleet plan --hbm-gib 32 --host-ram-gib 250 --max-usd-per-hour 30
step "Is my fleet spec right?" validate examples/fleet.yaml
tpufleet validate "examples/fleet.yaml"
step "A spec with a mistake gets one message pointing at the line" \
  validate examples/broken/wrong-type.yaml
if tpufleet validate "examples/broken/wrong-type.yaml"; then
  echo "demo: the broken spec was accepted" >&2
  exit 1
fi
printf '\nDemo done. Try: %s help\n' "$bin"
