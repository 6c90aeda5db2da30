# shellcheck shell=bash
# Shared by the benches that run jobs on the emulator's workers (bench/agent.sh,
# bench/jobs.sh), sourced: their start (root, the agent built next to tpufleet, a private
# temp dir holding HOME, the state and the emulator) and their end (the fleet, the gang
# watchers of this run's jobs, the holder and the emulator stopped; the temp dir removed).

# bench_start NAME BIN: sets $bench, $bin and $tmp; exits 0 (skipped) when not root.
bench_start() {
  bench=$1
  bin=$(realpath "$2")
  if [[ $(id -u) -ne 0 ]]; then
    echo "$bench bench: skipped (needs root)"
    exit 0
  fi
  if [[ ! -x $(dirname "$bin")/tpufleet-agent ]]; then
    echo "$bench bench: no tpufleet-agent next to $bin: build it first" >&2
    exit 1
  fi
  tmp=$(mktemp -d "/tmp/tpufleet-$bench-bench.XXXXXX")
  export HOME=$tmp/home TPUFLEET_STATE_DIR=$tmp/state TPUFLEET_EMULATOR_DIR=$tmp/emulator
  unset USER LOGNAME  # the fleet's login is then the default one
  mkdir -p "$HOME"
  ulimit -n "$(ulimit -Hn)"  # hundreds of workers' connections
}

say() { echo "$bench bench: $*" >&2; }

# shellcheck source=scripts/job_watchers.sh
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/job_watchers.sh"
# The gang watchers `run` started for this bench's jobs.
our_watchers() { job_watchers "$TPUFLEET_STATE_DIR"; }

# The end, for the exit trap; goes on past any failure.
bench_end() {
  set +e
  local p
  timeout 300 "$bin" down --all --yes >/dev/null 2>&1
  for p in $(our_watchers); do kill "$p" 2>/dev/null; done
  timeout 20 "$bin" holder stop >/dev/null 2>&1
  timeout 300 "$bin" emulator stop >/dev/null 2>&1
  rm -rf "$tmp"
}
