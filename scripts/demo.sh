#!/usr/bin/env bash
# The tpufleet demo: the questions a TPU user asks on day one, answered offline.
# Usage: scripts/demo.sh path/to/tpufleet
set -euo pipefail
bin=$(realpath "${1:-build/src/app/tpufleet}")
root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/job_watchers.sh
source "$root/scripts/job_watchers.sh"
cd "$root"  # so paths in messages read as a user would type them
tpufleet() { "$bin" "$@"; }

# step TITLE COMMAND...: a heading and the command a user would type.
step() {
  printf '\n\033[1m== %s\033[0m\n$ %s\n' "$1" "${*:2}"
}

step "Which TPU families are there?" tpufleet catalog
tpufleet catalog
step "What is a v4-32?" tpufleet catalog v4-32
tpufleet catalog v4-32
step "What does a v6e-8 cost for a day, on demand and on spot?" tpufleet estimate v6e-8 --hours 24 --spot
tpufleet estimate v6e-8 --hours 24 --spot
step "Which hardware fits a model needing 32 GiB of HBM per replica and 250 GiB of host RAM?" \
  tpufleet plan --hbm-gib 32 --host-ram-gib 250 --max-usd-per-hour 30
tpufleet plan --hbm-gib 32 --host-ram-gib 250 --max-usd-per-hour 30
step "Is my fleet spec right?" tpufleet validate examples/fleet.yaml
tpufleet validate "examples/fleet.yaml"
step "A spec with a mistake gets one message pointing at the line" \
  tpufleet validate examples/broken/wrong-type.yaml
if tpufleet validate "examples/broken/wrong-type.yaml"; then
  echo "demo: the broken spec was accepted" >&2
  exit 1
fi

# ---- The local Cloud TPU: an emulator of the TPU API whose workers are real hosts.
if [[ $(id -u) -ne 0 ]]; then
  printf '\n(The emulator part of the demo needs root: its workers are network namespaces.)\n'
  exit 0
fi
tmp=$(mktemp -d)
export TPUFLEET_EMULATOR_DIR=$tmp/emulator TPUFLEET_STATE_DIR=$tmp/state HOME=$tmp/home
mkdir -p "$HOME"
# Every step of the clean-up runs whatever the one before it did: a failed `down` must
# not leave the emulator running (set -e would end the trap at its first failure).
# The `run` the demo kills (it may still run when a step before the kill failed) goes
# first, and the gang watchers `run` leaves (`tpufleet jobs --watch ID`, sessions of
# their own, this demo's state dir in their environment) before the nodes go.
run_pid=""
cleanup() {
  set +e
  [[ -n $run_pid ]] && kill -KILL "$run_pid" 2>/dev/null
  local p
  for p in $(job_watchers "$TPUFLEET_STATE_DIR"); do kill "$p" 2>/dev/null; done
  "$bin" down --all --yes >/dev/null 2>&1
  "$bin" emulator stop >/dev/null 2>&1
  "$bin" holder stop >/dev/null 2>&1
  rm -rf "$tmp"
}
trap cleanup EXIT
# Ctrl-C or a TERM still cleans up (the `run` in the background ignores SIGINT).
trap 'exit 130' INT
trap 'exit 143' TERM HUP
# How long the demo waits for the injected preemption to show (seconds): the emulator
# turns a node PREEMPTED at once with --notice 0s; a minute means something is wrong.
preempt_wait=${TPUFLEET_DEMO_PREEMPT_WAIT:-60}
# How long it waits for the job's first steps (seconds; they come within a few).
job_wait=${TPUFLEET_DEMO_JOB_WAIT:-60}

step "Start the local Cloud TPU" tpufleet emulator start
tpufleet emulator start

step "What would the example fleet create, and what would it cost?" \
  tpufleet up examples/emulator-fleet.yaml --dry-run
tpufleet up examples/emulator-fleet.yaml --dry-run

step "Bring it up: a v4-32 pod (4 workers) and a single-host v5e, set up and reachable" \
  tpufleet up examples/emulator-fleet.yaml
tpufleet up examples/emulator-fleet.yaml

step "Where is everything, and what has it cost so far?" tpufleet status demo-pod
tpufleet status demo-pod

step "Run a command on every worker of the fleet at once (one SSH engine, no ssh processes)" \
  tpufleet exec all -- hostname
tpufleet exec all -- hostname

step "Identical output from many workers is folded into one block" \
  tpufleet exec demo-pod --group -- nproc
tpufleet exec demo-pod --group -- nproc

step "Copy a file to every worker, then check it arrived whole everywhere" \
  "tpufleet cp notes.txt all:; tpufleet exec all --group -- sha256sum notes.txt"
printf 'hyperparameters: lr=3e-4 batch=1024\n' >"$tmp/notes.txt"
(cd "$tmp" && tpufleet cp notes.txt all:)
tpufleet exec all --group -- sha256sum notes.txt

step "A shell on one worker, by its node and index (OpenSSH with pinned host keys)" \
  tpufleet ssh demo-pod:3 -- cat setup-done.txt
tpufleet ssh demo-pod:3 -- cat setup-done.txt

# ---- Jobs: kept by the node agent `up` installed on every worker.
step "Is every worker of the pod fit for a job? (TPU devices, who holds them, metadata, disk, agent, clock)" \
  tpufleet doctor demo-pod
tpufleet doctor demo-pod

step "A job on all 4 workers of the pod (tpu-standin stands in for a JAX program on the TPU)" \
  tpufleet run demo-pod --name train -- tpu-standin --step-ms 1000 --checkpoint-every 5 --checkpoint-dir ckpt
# Its output reaches the terminal through tee, so that the demo sees its first steps.
: >"$tmp/run.out"
exec {run_out}> >(tee "$tmp/run.out")
tee_pid=$!
"$bin" run demo-pod --name train -- \
  tpu-standin --step-ms 1000 --checkpoint-every 5 --checkpoint-dir ckpt \
  >&"$run_out" 2>&1 {run_out}>&- &
run_pid=$!
deadline=$((SECONDS + job_wait))
until (($(grep -c '| step [0-9]' "$tmp/run.out") >= 8)); do
  if ((SECONDS >= deadline)) || ! kill -0 "$run_pid" 2>/dev/null; then
    echo "demo: the job printed no step on every worker within ${job_wait}s" >&2
    exit 1
  fi
  sleep 0.2
done

step "Kill that tpufleet run with SIGKILL and stop the connection holder: the job runs on" \
  "kill -KILL <the run's pid>; tpufleet holder stop; tpufleet jobs demo-pod"
kill -KILL "$run_pid"
wait "$run_pid" 2>/dev/null || true
run_pid=""
exec {run_out}>&-
wait "$tee_pid"
echo "(tpufleet run: killed by SIGKILL)"
tpufleet holder stop
tpufleet jobs demo-pod

step "Follow its logs, every worker's lines prefixed (Ctrl-C after 4 s; the job goes on)" \
  tpufleet logs train -f --tail 1
rc=0
timeout -s INT 4 "$bin" logs train -f --tail 1 || rc=$?
[[ $rc == 124 ]] || { echo "demo: logs -f ended by itself (exit $rc)" >&2; exit 1; }

step "A second TPU job on the same node waits until the TPU is free" \
  "tpufleet run --detach demo-pod --name train-2 -- tpu-standin ...; tpufleet jobs demo-pod"
tpufleet run --detach demo-pod --name train-2 -- \
  tpu-standin --step-ms 1000 --checkpoint-every 5 --checkpoint-dir ckpt
tpufleet jobs demo-pod

step "Cancel the first: TERM on every worker (it checkpoints), and the second gets the TPU and resumes" \
  "tpufleet cancel train; tpufleet logs train-2 -f --worker 0"
tpufleet cancel train
rc=0
timeout -s INT 4 "$bin" logs train-2 -f --worker 0 || rc=$?
[[ $rc == 124 ]] || { echo "demo: logs -f of train-2 ended by itself (exit $rc)" >&2; exit 1; }

step "What is each chip of the pod doing, and who holds it? (one snapshot; without --once, a live view)" \
  tpufleet top demo-pod --once
tpufleet top demo-pod --once

step "Cancel the second; every job with each worker's exit code" \
  "tpufleet cancel train-2; tpufleet jobs"
tpufleet cancel train-2
tpufleet jobs

step "Running up again changes nothing" tpufleet up examples/emulator-fleet.yaml
tpufleet up examples/emulator-fleet.yaml

step "Spot preemption, injected; up makes the node again" \
  "tpufleet emulator inject preempt demo-pod; tpufleet up examples/emulator-fleet.yaml"
tpufleet emulator inject preempt demo-pod --notice 0s >/dev/null
deadline=$((SECONDS + preempt_wait))
until tpufleet status --refresh demo-pod | grep -q PREEMPTED; do
  if ((SECONDS >= deadline)); then
    echo "demo: demo-pod did not turn PREEMPTED within ${preempt_wait}s of the injected preemption" >&2
    exit 1
  fi
  sleep 0.3
done
tpufleet status demo-pod | head -2
tpufleet up examples/emulator-fleet.yaml

step "Tear everything down" "tpufleet down --all --yes; tpufleet emulator stop"
tpufleet down --all --yes
tpufleet status
tpufleet emulator stop
printf '\nDemo done. Try: %s help\n' "$bin"
