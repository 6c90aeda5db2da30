#!/usr/bin/env bash
# End to end: `tpufleet top` and its verdicts (issue 13), against `tpufleet emulator`
# with real worker hosts, the node agent `up` installs on each and tpu-standin serving
# libtpu's runtime metrics on every worker:
#   a. a v4-32 (4 workers) runs a job whose workers run the stand-in at 60 % duty
#      cycle, except worker 2, which runs it input-bound (its host CPU spinning, the TPU
#      at 10 %): `top --once --json` shows each chip's duty cycle and HBM within a few
#      points of what the stand-in says it reports, names the holder of every chip (the
#      stand-in's pid, the job's user and id), calls worker 2 input-bound with its
#      numbers, the others busy, and the job a straggler naming worker 2;
#   b. `top --once` prints the same as a table, a row per worker; a worker cut off the
#      network keeps its row, which says why it has no numbers;
#   c. once the job is cancelled the pod is not idle at once, but idle after --idle-after 20s;
#      a single-host v4-8 whose job is input-bound is not idle however long it runs;
#   and down plus emulator stop leave no process, namespace, sshd or link of this run.
# Prints "ok N - ..." or "not ok N - ..." per check and exits 1 if any failed.
# Usage: top_e2e.sh path/to/tpufleet. Exit 77 (skipped) when not root, when a tool it
# needs is missing, or when no tpufleet-agent was built next to tpufleet.
set -uo pipefail
source "$(dirname "$0")/e2e_lib.sh"
bin=$(realpath "$1")
e2e_require jq curl ssh ssh-keygen nsenter timeout ip pgrep
e2e_require_agent "$bin"
e2e_home top
trap e2e_end EXIT
trap 'exit 143' TERM INT HUP  # so that a ctest timeout still cleans up

# What `top --idle-after` is given in c: short, so that the test need not wait 10 min.
readonly idle_after=20s
# The duty cycle worker 0, 1 and 3 are told to report (worker 2 reports the stand-in's
# input-bound default). "A few points": how far top's numbers may be from the stand-in's.
readonly duty=60
readonly points=3
# The samples the verdicts need come once a second into a 60 s window: a minute and a
# half from the job's start is enough for every verdict to have formed.
readonly verdict_wait=150

# ---- `top --json` (docs/cli.md): {"nodes": [{"name", "verdict", "detail", "worker"?,
# "workers": [{"worker", "name", "verdict", "detail", "report"? (the agent's
# MetricsReport), "error"?}]}], "jobs": [{"id", "node", "user", "verdict", "detail",
# "worker"?}]}; "worker" of a node or job names its straggler.
# top_json NAME ARGS...: `top ARGS --once --json` into $tmp/NAME.json; fails when its
# output is not JSON.
top_json() {
  local name=$1
  shift
  tf_run "$name" top "$@" --once --json
  [[ $(jq -s 'length == 1 and (.[0] | type) == "object"' "$tmp/$name.out" 2>/dev/null) == true ]] ||
    { shows "$name"; return 1; }
  cp "$tmp/$name.out" "$tmp/$name.json"
}
# worker_q NAME NODE W JQ: JQ of worker W of NODE in $tmp/NAME.json.
worker_q() {
  jq -r --arg n "$2" --argjson w "$3" ".nodes[] | select(.name == \$n) | .workers[] | select(.worker == \$w) | $4" \
    "$tmp/$1.json"
}
# job_q NAME ID JQ, node_q NAME NODE JQ: the same of a job and a node.
job_q() { jq -r --arg id "$2" ".jobs[] | select(.id == \$id) | $3" "$tmp/$1.json"; }
node_q() { jq -r --arg n "$2" ".nodes[] | select(.name == \$n) | $3" "$tmp/$1.json"; }

track_hosts_begin

# ---------------------------------------------------------------------------------
note "the emulator, a v4-32 (4 workers) and a v4-8, the node agent on each"
check_emulator_starts
cat >"$tmp/fleet.yaml" <<EOF
fleet: tp
provider: emulator
nodes:
  - name: pod
    type: v4-32
    zones: [$zone]
  - name: solo
    type: v4-8
    zones: [$zone]
EOF
up_fleet() { up_spec "$tmp/fleet.yaml"; }
check "up brings up the v4-32 and the v4-8 with an agent on every worker" up_fleet
remember_hosts

# ---------------------------------------------------------------------------------
note "a. a job at $duty % duty cycle, worker 2 input-bound"
# TPU_WORKER_ID is the worker's index in every TPU job (core/job.h).
program="if [ \"\$TPU_WORKER_ID\" = 2 ]; then exec tpu-standin --input-bound --step-ms 1000; \
else exec tpu-standin --duty-cycle $duty --step-ms 1000; fi"
starts_job() {
  tf_run train run --detach pod --name train -- sh -c "$program"
  rc_is train 0 || { shows train; return 1; }
  job=$(head -1 "$tmp/train.out")
  [[ -n $job ]] || { shows train; return 1; }
}
check "run --detach starts the job on the pod" starts_job
job=${job:-none}
# Each worker's stand-in prints its pid, then per step what it reports of each chip:
# "step 3 rank=2 loss=… duty_cycle=10.0% hbm=16.0/32.0GiB".
every_worker_steps() {
  tf logs "$job" >"$tmp/logs.out" 2>/dev/null
  tr -d '\r' <"$tmp/logs.out" >"$tmp/logs.txt"
  local w
  for w in 0 1 2 3; do
    grep -q "^pod/w$w | step [0-9]* rank=$w .* duty_cycle=" "$tmp/logs.txt" || return 1
  done
}
check "every worker's stand-in prints its steps and what it reports" \
  wait_for 60 every_worker_steps
# told W FIELD: what worker W's stand-in says: pid, duty (percent), hbm_used, hbm_total
# (GiB).
told() {
  case $2 in
    pid) sed -n "s/^pod\/w$1 | tpu-standin: pid \([0-9]*\) .*/\1/p" "$tmp/logs.txt" | head -1 ;;
    duty) sed -n "s/^pod\/w$1 | step .* duty_cycle=\([0-9.]*\)% .*/\1/p" "$tmp/logs.txt" | head -1 ;;
    hbm_used) sed -n "s/^pod\/w$1 | step .* hbm=\([0-9.]*\)\/.*/\1/p" "$tmp/logs.txt" | head -1 ;;
    hbm_total) sed -n "s/^pod\/w$1 | step .* hbm=[0-9.]*\/\([0-9.]*\)GiB.*/\1/p" "$tmp/logs.txt" | head -1 ;;
  esac
}
told_right() {
  local w
  for w in 0 1 3; do [[ $(told $w duty) == "$duty.0" ]] || { cat "$tmp/logs.txt"; return 1; }; done
  near "$(told 2 duty)" 0 24 || { echo "worker 2 reports $(told 2 duty) %, not below 25"; return 1; }
}
check "the stand-ins report $duty % (worker 2: the input-bound default, below 25 %)" told_right

# Polls top until worker 2 is input-bound, the job a straggler and every worker's window
# holds enough samples for a verdict (none "unknown").
verdicts_formed() {
  local w
  top_json snap pod >/dev/null 2>&1 || return 1
  for w in 0 1 3; do
    [[ $(worker_q snap pod $w .verdict) != unknown ]] || return 1
  done
  [[ $(worker_q snap pod 2 .verdict) == input-bound &&
     $(job_q snap "$job" .verdict) == straggler ]]
}
formed() {
  wait_for "$verdict_wait" verdicts_formed && return 0
  echo "no input-bound worker 2 and straggler job within ${verdict_wait}s; the last top --json:"
  [[ -s $tmp/snap.json ]] || { shows snap; return 1; }
  echo "job: $(job_q snap "$job" '{verdict, detail}')"
  echo "worker 2: $(worker_q snap pod 2 '{verdict, detail, window: .report.window}')"
  return 1
}
check "within ${verdict_wait}s top --json calls worker 2 input-bound and the job a straggler" formed
# From here on, one snapshot: $tmp/snap.json.
duty_near() {
  local w want got
  for w in 0 1 2 3; do
    want=$(told $w duty)
    [[ $(worker_q snap pod $w '.report.sample.chips | length') == 4 ]] ||
      { echo "worker $w: not 4 chips"; cat "$tmp/snap.json"; return 1; }
    for got in $(worker_q snap pod $w '.report.sample.chips[].duty_cycle_percent'); do
      near "$got" "$want" "$points" || { echo "worker $w: a chip at $got %, told $want %"; return 1; }
    done
  done
}
check "each chip's duty cycle is within $points points of what its stand-in reports" duty_near
hbm_near() {
  local w used total got_used got_total
  for w in 0 1 2 3; do
    [[ $(worker_q snap pod $w '.report.sample.chips | length') == 4 ]] ||
      { echo "worker $w: not 4 chips"; return 1; }
    used=$(told $w hbm_used)
    total=$(told $w hbm_total)
    while read -r got_used got_total; do
      # Within a few points of the total, in GiB.
      near "$(awk -v b="$got_used" 'BEGIN { print b / 2^30 }')" "$used" \
        "$(awk -v t="$total" -v p="$points" 'BEGIN { print t * p / 100 }')" &&
        near "$(awk -v b="$got_total" 'BEGIN { print b / 2^30 }')" "$total" 0.05 ||
        { echo "worker $w: HBM $got_used of $got_total bytes, told $used of $total GiB"; return 1; }
    done < <(worker_q snap pod $w '.report.sample.chips[] | "\(.hbm_used_bytes) \(.hbm_total_bytes)"')
  done
}
check "each chip's HBM (used and total) is within $points points of what its stand-in reports" hbm_near
holders_named() {
  local user w pid
  tf jobs --json >"$tmp/jobs.json" 2>/dev/null || return 1
  user=$(jq -r --arg id "$job" '.jobs[] | select(.id == $id) | .user' "$tmp/jobs.json")
  [[ -n $user ]] || { cat "$tmp/jobs.json"; return 1; }
  for w in 0 1 2 3; do
    pid=$(told $w pid)
    [[ -n $pid ]] || { echo "worker $w's stand-in printed no pid"; return 1; }
    # Every chip has one holder: the stand-in, of this job and user.
    jq -e --argjson w "$w" --argjson pid "$pid" --arg user "$user" --arg job "$job" \
      '.nodes[] | select(.name == "pod") | .workers[] | select(.worker == $w) | .report.sample.chips |
       length == 4 and all(.holders | length == 1 and .[0].pid == $pid and
                                     .[0].user == $user and .[0].job == $job)' \
      "$tmp/snap.json" >/dev/null ||
      { echo "worker $w: want pid $pid, user $user, job $job on every chip"; worker_q snap pod $w .report.sample.chips; return 1; }
    worker_q snap pod $w '.report.sample.chips[0].holders[0].command' | grep -q '^tpu-standin' ||
      { echo "worker $w: the holder's command"; worker_q snap pod $w .report.sample.chips; return 1; }
  done
}
check "every chip's holder is named: the stand-in's pid, the job's user and id, its command" holders_named
input_bound_said() {
  local detail
  detail=$(worker_q snap pod 2 .detail)
  # The numbers: its duty cycle, its HLO queue, its host CPU.
  [[ $detail == input-bound:* && $detail =~ [0-9]+\ ?%.*[0-9]+\ ?% && $detail == *"HLO queue"* ]] ||
    { echo "worker 2: $detail"; worker_q snap pod 2 .report.window; return 1; }
}
check "worker 2 is input-bound, and its verdict gives the duty cycle, the queue and the CPU" \
  input_bound_said
others_busy() {
  local w
  for w in 0 1 3; do
    [[ $(worker_q snap pod $w .verdict) == busy ]] ||
      { worker_q snap pod $w "{worker, verdict, detail}"; return 1; }
  done
}
check "workers 0, 1 and 3 are busy" others_busy
straggler_named() {
  [[ $(job_q snap "$job" .worker) == 2 ]] || { job_q snap "$job" "{verdict, detail}"; return 1; }
  job_q snap "$job" .detail | grep -q 'w\(orker \)\?2' || { job_q snap "$job" "{verdict, detail}"; return 1; }
  [[ $(node_q snap pod .verdict) == straggler ]] || { node_q snap pod "{verdict, detail}"; return 1; }
}
check "the job (and its node) is a straggler naming worker 2" straggler_named

# ---------------------------------------------------------------------------------
note "b. the table, and a worker that does not answer"
# row NAME W: the table's row of pod's worker W in $tmp/NAME.out (NODE WORKER VERDICT …).
row() { grep -E "^pod +w$2 " "$tmp/$1.out"; }
table_shows() {
  tf_run table top pod --once
  rc_is table 0 || return 1
  local w
  for w in 0 1 3; do
    row table $w | grep -qE "^pod +w$w +busy " || return 1
  done
  row table 2 | grep -qE "^pod +w2 +input-bound " || return 1
  # Below the rows, a sentence for each verdict that is not busy.
  grep -q "^job $job (pod): straggler: " "$tmp/table.out" &&
    grep -q "^pod/w2: input-bound: " "$tmp/table.out"
}
# A verdict near its threshold may change between two rounds: the table gets a few.
table_rows() { wait_for 30 table_shows || { shows table; return 1; }; }
check "top --once: a row per worker, worker 2 input-bound, and the job a straggler" table_rows
cut_off_row() {
  tf emulator inject cutoff pod --worker 3 >/dev/null || return 1
  tf_run cut top pod --once
  tf_run cutj top pod --once --json
  tf emulator inject clear >/dev/null
  local w
  for w in 0 1 2; do
    row cut $w | grep -qE "^pod +w$w +(busy|input-bound) " || { shows cut; return 1; }
  done
  cp "$tmp/cutj.out" "$tmp/cutj.json"
  local error
  error=$(worker_q cutj pod 3 '.error // empty')
  [[ -n $error && -z $(worker_q cutj pod 0 '.error // empty') ]] || { shows cutj; return 1; }
  # The row stays, saying why it has no numbers.
  row cut 3 | grep -qF "no answer: ${error:0:20}" || { shows cut; return 1; }
}
check "a worker cut off the network keeps its row, with the error (table and --json)" cut_off_row
answers_again() { top_json back pod && [[ $(worker_q back pod 3 '.report.sample.chips | length') == 4 ]]; }
check "once the cut-off ends, worker 3 answers again" wait_for 60 answers_again

# ---------------------------------------------------------------------------------
note "c. idle: after --idle-after $idle_after with no job, no login, no holder"
cancels() {
  tf_run cancel cancel "$job" --grace 5s
  rc_is cancel 0 || { shows cancel; return 1; }
}
check "cancel ends the job" cancels
# The single-host node's input-bound job runs while the pod waits to turn idle.
starts_solo() {
  tf_run solo run --detach solo --name solo -- tpu-standin --input-bound --step-ms 1000
  rc_is solo 0 || { shows solo; return 1; }
  solo_started=$SECONDS
}
check "a job on the v4-8 runs the stand-in input-bound" starts_solo
solo_started=${solo_started:-$SECONDS}
not_idle_yet() {
  top_json q pod --idle-after "$idle_after" || return 1
  local v
  v=$(node_q q pod .verdict)
  [[ -n $v && $v != idle ]] || { node_q q pod "{verdict, detail}"; return 1; }
}
check "just after the cancel the pod is not idle yet" not_idle_yet
pod_idle() { top_json idle pod --idle-after "$idle_after" && [[ $(node_q idle pod .verdict) == idle ]]; }
turns_idle() {
  wait_for 90 pod_idle || { node_q idle pod "{verdict, detail}"; return 1; }
  local w
  for w in 0 1 2 3; do
    [[ $(worker_q idle pod $w .verdict) == idle ]] || { worker_q idle pod $w "{verdict, detail}"; return 1; }
  done
}
check "the pod turns idle (every worker and the node) after --idle-after $idle_after" turns_idle
solo_input_bound() {
  # Past the idle time, with the verdict's window full of the job's samples.
  wait_for 120 eval 'top_json s solo --idle-after "$idle_after" &&
    [[ $(node_q s solo .verdict) == input-bound ]]' ||
    { node_q s solo "{verdict, detail}"; worker_q s solo 0 .report.window; return 1; }
  local left=$((solo_started + 30 - SECONDS))
  ((left <= 0)) || sleep "$left"
  top_json s solo --idle-after "$idle_after" || return 1
  [[ $(node_q s solo .verdict) == input-bound &&
     $(worker_q s solo 0 .verdict) == input-bound ]] || { cat "$tmp/s.json"; return 1; }
}
check "the v4-8 running an input-bound job is input-bound, never idle, well past $idle_after" \
  solo_input_bound
tf cancel solo >/dev/null 2>&1

# ---------------------------------------------------------------------------------
down_all() { tf down --all --yes >"$tmp/down.txt" 2>&1 || { cat "$tmp/down.txt"; return 1; }; }
check "down --all" down_all
timeout 20 "$bin" holder stop >/dev/null 2>&1  # top's and the runs' connection holder
check "emulator stop leaves no process, namespace, sshd or link of this run" stop_clean
echo "1..$n"
((failed == 0))
