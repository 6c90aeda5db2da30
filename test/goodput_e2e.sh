#!/usr/bin/env bash
# End to end, issue 17's "done means": where the money went, on the emulator at
# accelerated prices (a catalog override: v4 at $360 per chip-hour on demand, $90 spot).
# Two fleets kept by one `tpufleet serve`: lab (owner ada) with a spot v4-16 `pod`
# running a stand-in at 90 % duty cycle (`run --restart on-preemption`) and a v4-8
# `idle` that runs nothing; feed (owner bo) with a v4-8 `feed` whose job is input-bound.
# The pod is preempted once. Then:
#   1. `cost --by person`, `--by job`, `--by node` and `--by fleet` each add up to the
#      ledger (the store's stretches, summed here from the database at the report's own
#      time);
#   2. `cost --goodput`: the pod's job lost to preemption what the events say (from the
#      preemption to the job resumed, less the seconds nothing was billed), and was busy
#      90 % (within 5 points) of the time the agents measured; idle was idle (95 % of its
#      measured time); feed's job was input-bound (60 % of its measured time at least: the
#      stand-in needs its CPU, which a loaded machine gives it less often); by person, the preemption and the
#      idling are ada's and the input-bound time bo's; the verdict says where most went.
# Everything (serve, the fleets, the emulator, $tmp) is removed on exit, even on failure.
# Prints "ok N - ..." or "not ok N - ..." per check and exits 1 if any failed.
# Usage: goodput_e2e.sh path/to/tpufleet. Exit 77 (skipped) when not root, when a tool it
# needs is missing, or when no tpufleet-agent was built next to tpufleet.
set -uo pipefail
here=$(dirname "$0")
source "$here/e2e_lib.sh"
# shellcheck source=scripts/job_watchers.sh
source "$here/../scripts/job_watchers.sh"
bin=$(realpath "$1")
e2e_require jq curl ssh ssh-keygen timeout ip pgrep python3
e2e_require_agent "$bin"
e2e_home goodput

# How long the jobs run before and after the preemption: several of serve's 30 s metrics
# rounds each.
readonly kRunSeconds=70
# The pod's stand-in's duty cycle, and how far the measured busy share may be from it
# (the agents' one-minute windows lag a job's start and end).
readonly kDuty=90

serve_pid=""
trap 'stop_serve; for w in $(job_watchers "$state"); do kill "$w" 2>/dev/null; done; tf down --all --yes >/dev/null 2>&1; e2e_end' EXIT
trap 'exit 143' TERM INT HUP

# Accelerated prices, for the emulator and every command.
cat >"$tmp/prices.yaml" <<EOF
families:
  v4:
    prices:
      - {region: us-central2, on_demand: 360, spot: 90, source: "goodput_e2e.sh: accelerated"}
EOF
export TPUFLEET_CATALOG=$tmp/prices.yaml

track_hosts_begin
emulator_starts() {
  cat >"$tmp/emulator.yaml" <<EOF
timings: {create: 1s, delete: 300ms, preemption_notice: 1s}
EOF
  tf emulator start --config "$tmp/emulator.yaml" >"$tmp/start.txt" || { cat "$tmp/start.txt"; return 1; }
  ep=$(jq -r .endpoint "$TPUFLEET_EMULATOR_DIR/daemon.json") && [[ $ep == http://127.0.0.1:* ]]
}
check "emulator start --config (short timings)" emulator_starts
ep=${ep:-http://127.0.0.1:1/}

cat >"$tmp/lab.yaml" <<EOF
fleet: lab
provider: emulator
owner: ada
nodes:
  - name: pod
    type: v4-16
    capacity: spot
    zones: [$zone]
  - name: idle
    type: v4-8
    zones: [$zone]
EOF
cat >"$tmp/feed.yaml" <<EOF
fleet: feed
provider: emulator
owner: bo
nodes:
  - name: feed
    type: v4-8
    zones: [$zone]
EOF
up_both() { up_spec "$tmp/lab.yaml" && up_spec "$tmp/feed.yaml"; }
check "up brings up lab (a spot v4-16 pod, a v4-8) and feed (a v4-8)" up_both
remember_hosts

t0=$(date -u +%Y-%m-%dT%H:%M:%SZ)
start_serve() { serve_tls "$tmp/lab.yaml" serve.log "$tmp/feed.yaml" --pass 1; }
check "serve keeps both fleets" start_serve

start_jobs() {
  tf_run run-pod run pod --detach --name train --restart on-preemption --max-restarts 5 -- \
    tpu-standin --duty-cycle "$kDuty" --step-ms 500
  tf_run run-feed run feed --detach --name loader -- tpu-standin --input-bound --step-ms 500
  rc_is run-pod 0 || { shows run-pod; return 1; }
  rc_is run-feed 0 || { shows run-feed; return 1; }
  pod_job=$(head -1 "$tmp/run-pod.out")
  feed_job=$(head -1 "$tmp/run-feed.out")
  [[ -n $pod_job && -n $feed_job ]]
}
check "pod runs a stand-in at $kDuty % duty cycle, feed an input-bound one" start_jobs
pod_job=${pod_job:-none}
feed_job=${feed_job:-none}

note "the jobs run ${kRunSeconds}s, the pod is preempted, then they run ${kRunSeconds}s more"
sleep "$kRunSeconds"
resumed() { tf events --json >"$tmp/events.json" 2>/dev/null &&
  jq -e '[.[] | select(.node == "pod" and .kind == "job-resumed")] | length > 0' "$tmp/events.json" >/dev/null; }
preempted_and_resumed() {
  tf emulator inject preempt pod --notice 1s >"$tmp/inject.txt" 2>&1 || { cat "$tmp/inject.txt"; return 1; }
  wait_for 180 resumed || { tail -20 "$tmp/serve.log"; return 1; }
}
check "the pod, preempted, is made again by serve and its job resumed" preempted_and_resumed
sleep "$kRunSeconds"

cost() {  # cost NAME ARGS…: `tpufleet cost --since $t0 ARGS… --json` into $tmp/NAME.json
  local name=$1
  shift
  tf cost --since "$t0" "$@" --json >"$tmp/$name.json" 2>"$tmp/$name.err" ||
    { cat "$tmp/$name.err"; return 1; }
}
# The ledger's total at a report's own time: every billed stretch of the store, clipped
# to the report's span (NodeState::IsBilled's states are the billed ones).
ledger_usd() {
  python3 - "$state/state.db" "$1" <<'PY'
import datetime, json, sqlite3, sys
report = json.load(open(sys.argv[2]))
def micros(text):
    t = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    return t.timestamp() * 1e6
lo, hi = micros(report["since"]), micros(report["now"])
unbilled = {"", "REQUESTED", "QUEUED", "ACCEPTED", "PROVISIONING", "WAITING_FOR_RESOURCES",
            "STOCKOUT", "NOT_FOUND", "DELETED", "STOPPED", "FAILED", "SUSPENDED"}
usd = 0.0
for state, rate, start, end in sqlite3.connect(sys.argv[1]).execute(
        "SELECT state, usd_per_hour, start, end_time FROM spend"):
    if state in unbilled:
        continue
    a, b = max(start, lo), min(end if end is not None else hi, hi)
    if b > a:
        usd += rate * (b - a) / 3.6e9
print(f"{usd:.6f}")
PY
}
adds_up() {
  local by total ledger
  for by in person job node fleet; do
    cost "by-$by" --by "$by" || return 1
    total=$(jq .usd "$tmp/by-$by.json")
    ledger=$(ledger_usd "$tmp/by-$by.json") || return 1
    # The report's time is printed to the second: a second of the whole fleet's rate.
    near "$total" "$ledger" "$(jq '.usd_per_hour / 3600 + 0.01' "$tmp/by-$by.json")" ||
      { echo "by $by: the lines add up to $total, the ledger to $ledger"; return 1; }
    [[ $(jq '[.lines[].usd] | add' "$tmp/by-$by.json") != null ]] || return 1
    near "$(jq '[.lines[].usd] | add' "$tmp/by-$by.json")" "$total" 0.001 || return 1
  done
  note "spent: \$$total at accelerated prices"
}
check "cost by person, job, node and fleet each add up to the ledger" adds_up

# The gap the events say: the pod's preemption to its job resumed.
gap_seconds() {
  jq -r '[.[] | select(.node == "pod")] as $e |
    ([$e[] | select(.kind == "preempted")][0].time) as $p |
    ([$e[] | select(.kind == "job-resumed")][0].time) as $r |
    [$p, $r] | map(sub("\\.[0-9]+Z$"; "Z") | fromdate) | .[1] - .[0]' "$tmp/events.json"
}
# hours_of NAME KEY PART: of the line KEY of report NAME, PART's hours.
hours_of() { jq -r --arg k "$2" --arg part "$3" \
  '.by as $by | .lines[] | select(.[$by] == $k) | .hours[$part]' "$tmp/$1.json"; }
# measured_share NAME KEY PART: PART's hours over the hours the agents measured (paid,
# less lost to preemption and unmeasured).
measured_share() { jq -r --arg k "$2" --arg part "$3" '.by as $by | .lines[] |
  select(.[$by] == $k) | .hours[$part] / (.node_hours - .hours.preempted - .hours.unmeasured)' \
  "$tmp/$1.json"; }
percent() { awk -v b="$1" 'BEGIN { printf "%.0f", 100 * b }'; }
is_zero() { awk -v a="$1" 'BEGIN { exit !(a == 0) }'; }
at_least() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a >= b) }'; }
goodput_by_job() {
  cost gp-job --by job --goodput || return 1
  local train="train ($pod_job)" loader="loader ($feed_job)" gap lost busy
  gap=$(gap_seconds) || return 1
  lost=$(hours_of gp-job "$train" preempted)
  note "pod: preempted for ${gap}s by the events, ${lost} h in the goodput"
  # Less than the gap by the seconds nothing was billed (the old node gone, the new one
  # not yet asked for): a pass or two of serve's, more on a loaded machine.
  awk -v h="$lost" -v g="$gap" 'BEGIN { s = h * 3600; exit !(s > 0 && s <= g + 2 && s >= g - (g / 2 > 5 ? g / 2 : 5)) }' ||
    { echo "the train job lost $lost h to preemption; the events say ${gap}s"; jq . "$tmp/gp-job.json"; return 1; }
  # Busy: of the time the agents measured, the stand-in's duty cycle.
  busy=$(measured_share gp-job "$train" busy)
  note "train: busy $(percent "$busy") % of its measured time (the stand-in: $kDuty %)"
  near "$busy" "0.$kDuty" 0.05 || { jq . "$tmp/gp-job.json"; return 1; }
  local starved
  starved=$(measured_share gp-job "$loader" input_bound)
  note "loader: input-bound $(percent "$starved") % of its measured time"
  at_least "$starved" 0.6 || { jq . "$tmp/gp-job.json"; return 1; }
  jq -e .measured "$tmp/gp-job.json" >/dev/null || { echo "no usage measured"; return 1; }
  at_least "$(measured_share gp-job "" idle)" 0.95 || { jq . "$tmp/gp-job.json"; return 1; }
}
check "goodput by job: the preemption, the duty cycle and the input-bound time are each job's" goodput_by_job

goodput_by_node_and_person() {
  cost gp-node --by node --goodput || return 1
  # idle was measured (its agent answered), and found idle.
  at_least "$(hours_of gp-node lab/idle idle)" 0.01 &&
    at_least "$(measured_share gp-node lab/idle idle)" 0.95 || { jq . "$tmp/gp-node.json"; return 1; }
  is_zero "$(hours_of gp-node feed/feed preempted)" || { jq . "$tmp/gp-node.json"; return 1; }
  cost gp-person --by person --goodput || return 1
  at_least "$(hours_of gp-person ada preempted)" 0.001 &&
    at_least "$(hours_of gp-person ada idle)" 0.01 &&
    is_zero "$(hours_of gp-person bo preempted)" &&
    at_least "$(measured_share gp-person bo input_bound)" 0.6 ||
    { jq . "$tmp/gp-person.json"; return 1; }
  grep -q "of the spend was" <<<"$(jq -r .verdict "$tmp/gp-node.json")" || return 1
  tf cost --since "$t0" --by node --goodput >"$tmp/gp-node.txt" || return 1
  grep -q "^NODE  *SPENT  *CHIP-HOURS  *BUSY  *PREEMPTED  *IDLE  *INPUT-BOUND  *OTHER  *UNMEASURED" \
    "$tmp/gp-node.txt" ||
    { cat "$tmp/gp-node.txt"; return 1; }
  note "verdict by node: $(jq -r .verdict "$tmp/gp-node.json")"
  sed 's/^/#   /' "$tmp/gp-node.txt" >&3
}
check "goodput by node and person: idle is idle's and ada's, input-bound bo's; a verdict" goodput_by_node_and_person

all_gone() {
  local p
  stop_serve
  for p in $(job_watchers "$state"); do kill "$p" 2>/dev/null; done
  holder_stops 60 || return 1
  down_all && stop_clean "$state/"
}
check "down and emulator stop leave nothing of this run" all_gone

echo "1..$n"
((failed == 0))
