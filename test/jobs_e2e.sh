#!/usr/bin/env bash
# End to end: jobs (`run`, `jobs`, `logs`, `cancel`) as a user drives them, against
# `tpufleet emulator` with real worker hosts and the node agent `up` installs on each.
# Covers issue 12's "done means" for jobs, on a v4-32 (4 workers):
#   a. a job keeps running after the `run` that started it gets SIGKILL and the
#      connection holder is stopped; `logs` shows every worker's lines; `jobs` shows
#      each worker's exit code once it ends;
#   b. one worker's process exiting 1 stops the job on the other three, by `run` and by
#      the detached watcher alone; `jobs` says which worker failed first and how;
#   c. a second accelerator job on the node waits for the first, and with --no-wait is
#      refused naming the holder; it starts once the first is cancelled;
#   d. bad input: an unknown job, a duplicate name, a target with no workers, a command
#      that is not on the workers (exit 127, reported per worker), a --workdir that does
#      not exist: one message each, nothing started;
#   and down plus emulator stop leave no process, namespace, sshd or link of this run.
# Prints "ok N - ..." or "not ok N - ..." per check and exits 1 if any failed.
# Usage: jobs_e2e.sh path/to/tpufleet. Exit 77 (skipped) when not root, when a tool it
# needs is missing, or when no tpufleet-agent was built next to tpufleet.
set -uo pipefail
source "$(dirname "$0")/e2e_lib.sh"
bin=$(realpath "$1")
e2e_require jq curl ssh ssh-keygen nsenter timeout ip pgrep
e2e_require_agent "$bin"
e2e_home jobs
bg_pids=()

# shellcheck source=scripts/job_watchers.sh
source "$(dirname "$0")/../scripts/job_watchers.sh"
# The gang watchers the runs of this script started.
our_watchers() { job_watchers "$state"; }
cleanup() {
  local p
  for p in "${bg_pids[@]}"; do end_ours "$p" KILL; done
  for p in $(our_watchers); do kill "$p" 2>/dev/null; done
  e2e_end
}
trap cleanup EXIT
trap 'exit 143' TERM INT HUP  # so that a ctest timeout still cleans up

# jobs_json: `tpufleet jobs --json` into $tmp/jobs.json.
jobs_json() { tf jobs --json >"$tmp/jobs.json" 2>"$tmp/jobs.err" || { cat "$tmp/jobs.err"; return 1; }; }
# job_field ID JQ: a field of job ID in $tmp/jobs.json.
job_field() { jq -r --arg id "$1" ".jobs[] | select(.id == \$id) | $2" "$tmp/jobs.json"; }
count_procs() { pgrep -fc "$1" || true; }
# How many jobs the agents know.
job_count() { jobs_json && jq '.jobs | length' "$tmp/jobs.json"; }

track_hosts_begin

# ---------------------------------------------------------------------------------
note "the emulator, a v4-32 (4 workers) and the node agent on each"
check_emulator_starts
cat >"$tmp/fleet.yaml" <<EOF
fleet: jb
provider: emulator
nodes:
  - name: pod
    type: v4-32
    zones: [$zone]
EOF
up_fleet() { up_spec "$tmp/fleet.yaml"; }
check "up brings up the v4-32 with an agent on every worker" up_fleet
remember_hosts
agents_answer() {
  jobs_json || return 1
  [[ $(jq '.unreachable | length' "$tmp/jobs.json") == 0 ]] || { cat "$tmp/jobs.json"; return 1; }
}
check "jobs asks all 4 agents and every one answers" agents_answer

# ---------------------------------------------------------------------------------
note "a. a job outlives the run that started it and the holder"
ticker='for i in $(seq 1 100000); do echo "tick $i rank $TPUFLEET_RANK of $TPUFLEET_WORLD_SIZE"; sleep 0.2; done'
"$bin" run pod --name ticker --no-accelerator -- bash -c "$ticker" \
  >"$tmp/ticker.out" 2>"$tmp/ticker.err" &
run_pid=$!
bg_pids+=("$run_pid")
all_ranks_print() {
  local w
  for w in 0 1 2 3; do
    grep -q "^pod/w$w | tick [0-9]* rank $w of 4" "$tmp/ticker.out" || return 1
  done
}
check "run prints the id, then every worker's lines prefixed pod/wN |" \
  wait_for 60 all_ranks_print
ticker_id=$(head -1 "$tmp/ticker.out")
survives_sigkill() {
  kill -KILL "$run_pid"
  timeout 20 "$bin" holder stop >/dev/null 2>&1
  local before
  before=$(grep -c '| tick' "$tmp/ticker.out")
  sleep 2
  tf_run after logs "$ticker_id" --tail 2
  rc_is after 0 || { shows after; return 1; }
  local w last
  for w in 0 1 2 3; do
    last=$(grep "^pod/w$w | tick" "$tmp/after.out" | tail -1 | awk '{print $4}')
    [[ -n $last ]] || { echo "no line of pod/w$w"; shows after; return 1; }
    # Still ticking after the kill: later ticks than any `run` printed.
    ((last > before / 4)) || { echo "pod/w$w stopped at tick $last"; shows after; return 1; }
  done
  jobs_json && [[ $(job_field "$ticker_id" .state) == running ]] || { cat "$tmp/jobs.json"; return 1; }
}
check "after SIGKILL of run and holder stop, the job runs on: logs --tail shows new ticks of all 4" \
  survives_sigkill
cancel_ticker() {
  tf_run cancel cancel "$ticker_id" --grace 5s
  rc_is cancel 0 || { shows cancel; return 1; }
  grep -q "^Job $ticker_id (ticker) cancelled after " "$tmp/cancel.out" || { shows cancel; return 1; }
  jobs_json || return 1
  [[ $(job_field "$ticker_id" '[.workers[].signal] | join(",")') == TERM,TERM,TERM,TERM ]] ||
    { cat "$tmp/jobs.json"; return 1; }
  [[ $(count_procs 'seq 1 100000') == 0 ]] || { pgrep -af 'seq 1 100000'; return 1; }
}
check "cancel: TERM on all 4 workers, jobs shows each worker's signal, nothing left running" \
  cancel_ticker
exit_codes() {
  tf_run codes run pod --keep-going --no-accelerator -- bash -c 'sleep 1; exit $TPUFLEET_RANK'
  [[ $(cat "$tmp/codes.rc") != 0 ]] || { shows codes; return 1; }
  local id
  id=$(head -1 "$tmp/codes.out")
  jobs_json || return 1
  [[ $(job_field "$id" '[.workers[].exit_code] | map(tostring) | join(",")') == 0,1,2,3 ]] ||
    { cat "$tmp/jobs.json"; return 1; }
  [[ $(job_field "$id" .state) == failed ]] || { cat "$tmp/jobs.json"; return 1; }
}
check "jobs shows each worker's exit code (0,1,2,3 with --keep-going)" exit_codes

# ---------------------------------------------------------------------------------
note "b. one worker failing stops the gang"
gang_by_run() {
  tf_run gang run pod --name gang --no-accelerator -- \
    bash -c 'if [ "$TPUFLEET_RANK" = 2 ]; then sleep 2; echo bye; exit 1; fi; exec sleep 600'
  rc_is gang 1 || { shows gang; return 1; }
  grep -q "w2 failed first: exit 1" "$tmp/gang.err" || { shows gang; return 1; }
  local id
  id=$(head -1 "$tmp/gang.out")
  jobs_json || return 1
  [[ $(job_field "$id" .first_failure) == "w2 failed first: exit 1" ]] || { cat "$tmp/jobs.json"; return 1; }
  [[ $(job_field "$id" '[.workers[].state] | join(",")') == cancelled,cancelled,failed,cancelled ]] ||
    { cat "$tmp/jobs.json"; return 1; }
  [[ $(count_procs 'sleep 600') == 0 ]] || { pgrep -af 'sleep 600'; return 1; }
}
check "w2 exits 1: run stops w0, w1, w3, exits 1; jobs: w2 failed first: exit 1" gang_by_run
gang_by_watcher() {
  tf_run lone run --detach pod --name lone --no-accelerator -- \
    bash -c 'if [ "$TPUFLEET_RANK" = 1 ]; then sleep 2; exit 7; fi; exec sleep 601'
  rc_is lone 0 || { shows lone; return 1; }
  # Nobody looks: the watcher `run` left behind stops the others.
  none_left() { [[ $(count_procs 'sleep 601') == 0 ]]; }
  wait_for 60 none_left || { pgrep -af 'sleep 601'; cat "$state/job-watchers.log"; return 1; }
  local id
  id=$(head -1 "$tmp/lone.out")
  # The watcher writes its line once every worker has answered the stop: the processes
  # may be gone a moment before.
  said_why() { grep -q "job $id: w1 failed first: exit 7; stopped it on" "$state/job-watchers.log"; }
  wait_for 10 said_why || { cat "$state/job-watchers.log"; return 1; }
}
check "run --detach, w1 exits 7: the detached watcher alone stops the others" gang_by_watcher
piped_run() {
  # The watcher outlives `run`, but not with the caller's pipe: the pipeline ends at once.
  timeout 60 bash -c '"$0" run --detach pod --name piped --no-accelerator -- sleep 604 | cat' \
    "$bin" >"$tmp/piped.out" 2>"$tmp/piped.err" ||
    { echo "the pipeline did not end:"; cat "$tmp/piped.out" "$tmp/piped.err"; return 1; }
  local id
  id=$(head -1 "$tmp/piped.out")
  pgrep -f "jobs --watch $id" >/dev/null || { echo "no watcher for $id"; return 1; }
  tf cancel "$id" >/dev/null 2>&1 || return 1
  none_left() { [[ $(count_procs 'sleep 604') == 0 ]]; }
  wait_for 30 none_left || { pgrep -af 'sleep 604'; return 1; }
}
check "run --detach | cat ends while the job's watcher lives on (it holds none of run's files)" piped_run

# ---------------------------------------------------------------------------------
note "c. one process per TPU"
second_waits() {
  tf_run first run --detach pod --name first -- bash -c 'exec sleep 602'
  rc_is first 0 || { shows first; return 1; }
  first_id=$(head -1 "$tmp/first.out")
  tf_run refused run --no-wait pod --name refused -- true
  rc_is refused 1 || { shows refused; return 1; }
  grep -q "the TPU is held by job $first_id" "$tmp/refused.err" || { shows refused; return 1; }
  tf_run second run --detach pod --name second -- bash -c 'echo got the TPU'
  rc_is second 0 || { shows second; return 1; }
  second_id=$(head -1 "$tmp/second.out")
  jobs_json || return 1
  [[ $(job_field "$second_id" .state) == waiting ]] || { cat "$tmp/jobs.json"; return 1; }
}
check "a second TPU job waits for the first; with --no-wait it is refused naming the holder" \
  second_waits
second_runs_after() {
  tf_run cfirst cancel first
  rc_is cfirst 0 || { shows cfirst; return 1; }
  second_done() { jobs_json && [[ $(job_field "$second_id" .state) == succeeded ]]; }
  wait_for 60 second_done || { cat "$tmp/jobs.json"; return 1; }
  tf_run slogs logs second
  # Worker 0's job runs on a terminal (for attach): its lines end in \r\n.
  [[ $(grep -c '| got the TPU' "$tmp/slogs.out") == 4 ]] || { shows slogs; return 1; }
}
check "once the first is cancelled, the waiting job runs on all 4 workers" second_runs_after

# ---------------------------------------------------------------------------------
note "d. bad input: one message each, nothing started"
before=$(job_count)
bad_input() {
  local name=$1 want_rc=$2 message=$3
  shift 3
  tf_run "$name" "$@"
  rc_is "$name" "$want_rc" || { shows "$name"; return 1; }
  grep -qF -- "$message" "$tmp/$name.err" || { shows "$name"; return 1; }
}
check "an unknown job: did you mean" bad_input unknown 1 'did you mean' logs tikcer
tf run --detach pod --name dupe --no-accelerator -- sleep 603 >/dev/null 2>&1
check "a duplicate name among live jobs" bad_input dup 2 'is named "dupe" and has not ended' \
  run pod --name dupe --no-accelerator -- true
check "a target with no nodes" bad_input nonode 1 'no node has the labels team=nobody' \
  run team=nobody -- true
check "a --workdir that does not exist" bad_input nodir 2 \
  'the job was not started: ' run pod --workdir /no/such/dir -- true
no_new_jobs() { [[ $(job_count) == $((before + 1)) ]] || { cat "$tmp/jobs.json"; return 1; }; }
check "none of them started a job (the one dupe aside)" no_new_jobs
missing_command() {
  tf_run missing run pod --no-accelerator -- no-such-program-x --flag
  rc_is missing 127 || { shows missing; return 1; }
  local id
  id=$(head -1 "$tmp/missing.out")
  jobs_json || return 1
  [[ $(job_field "$id" '[.workers[].exit_code] | map(tostring) | join(",")') == 127,127,127,127 ]] ||
    { cat "$tmp/jobs.json"; return 1; }
  # Worker 0's stderr shares its terminal with stdout.
  [[ $(cat "$tmp/missing.out" "$tmp/missing.err" |
       grep -c '^pod/w[0-3] | .*no-such-program-x: command not found') == 4 ]] ||
    { shows missing; return 1; }
}
check "a command not on the workers: exit 127 on each, reported per worker" missing_command
tf cancel dupe >/dev/null 2>&1
no_watchers() { [[ -z $(our_watchers) ]]; }
watchers_end() { wait_for 30 no_watchers || { ps -fp "$(our_watchers | tr '\n' ,)"; return 1; }; }
check "every job's watcher ended with its job" watchers_end

# ---------------------------------------------------------------------------------
down_all() { tf down --all --yes >"$tmp/down.txt" 2>&1 || { cat "$tmp/down.txt"; return 1; }; }
check "down --all" down_all
timeout 20 "$bin" holder stop >/dev/null 2>&1  # the runs' and watchers' connection holder
check "emulator stop leaves no process, namespace, sshd or link of this run" stop_clean
echo "1..$n"
((failed == 0))
