#!/usr/bin/env bash
# Chaos soak of `tpufleet serve` (issue 14; ctest e2e.serve_soak, label soak), against
# `tpufleet emulator` with real worker hosts and the node agent on each: four nodes
# (spot and on-demand, single-host and pods; the spot pod through a queued resource),
# each running a stand-in job started
# with `run --restart on-preemption` that must finish its checkpointed steps (the
# checkpoints in the emulator's shared /gcs). Against them, a seeded stream of at least
# SOAK_FAULTS (100) faults, several at once: preemptions, stockouts, maintenance (new
# addresses), API error storms, a worker cut off, and `kill -9` of serve followed by a
# restart. At the end:
#   1. every job finished all its steps (jobs lost: 0);
#   2. no node exists twice (the emulator's API, every candidate zone);
#   3. no husk (a node not READY) and no queued resource but the spot pod's ACTIVE one;
#   4. the spend ledger (the store's stretches) matches the time each node spent in each
#      state, sampled from the emulator every 0.25 s, within the bound
#      test/serve_soak_report.py states;
# and prints the faults survived, jobs lost, the median and 95th-percentile
# time-to-recover and serve's own part of it (detected -> create-requested), from
# `tpufleet events --json`; then down and emulator stop leave nothing of this run.
#
# The seed is printed first; SOAK_SEED=N reruns the same stream of faults (which fault,
# on which node, at which gap; what the nodes are doing when it lands is up to timing).
# Usage: serve_soak.sh path/to/tpufleet. Env: SOAK_SEED, SOAK_FAULTS (100), SOAK_STEPS
# (400 steps of 0.25 s per job), SOAK_KEEP=DIR (serve's log, the faults, the samples and
# the events are copied there at the end). Exit 77 (skipped) when not root, when a tool is
# missing, or when no tpufleet-agent was built next to tpufleet.
set -uo pipefail
source "$(dirname "$0")/e2e_lib.sh"
# shellcheck source=scripts/job_watchers.sh
source "$(dirname "$0")/../scripts/job_watchers.sh"
bin=$(realpath "$1")
report=$(dirname "$(realpath "$0")")/serve_soak_report.py
e2e_require jq curl ssh ssh-keygen nsenter timeout ip pgrep python3 sqlite3
e2e_require_agent "$bin"
e2e_home soak

readonly kFaults=${SOAK_FAULTS:-100}
readonly kSteps=${SOAK_STEPS:-400}
# A step of the stand-in; with 400 steps a job is 100 s of work, about the length of
# the fault stream, so that faults land on running jobs throughout.
readonly kStepMs=250
readonly kCheckpointEvery=10
# serve's pass (--pass): the detection delay follows from it (the ledger's bound, from
# the passes as they came).
readonly kPass=1
# serve's API budget: the default (120 a minute) is for 5 s passes; at 1 s, the same
# budget per pass. Below it, passes list no zone for seconds after each recovery's burst
# of calls, and the ledger's stretches wait for the next list.
readonly kApiCalls=600
# The sampler's interval (seconds) of the emulator's node states: the ledger's truth.
readonly kSample=0.25
# Every this many faults (on average), serve is killed with SIGKILL and restarted.
readonly kKillEvery=12
# How long the jobs may take to finish once the stream ends, and the fleet to settle.
readonly kDrainSeconds=300
readonly kSettleSeconds=90
seed=${SOAK_SEED:-$((10#$(date +%N) % 100000))}
RANDOM=$seed
note "seed $seed (rerun: SOAK_SEED=$seed $0 $1)"

serve_pid=""
sampler_pid=""
cleanup() {
  local p
  end_ours "$serve_pid" KILL
  if [[ -n ${SOAK_KEEP:-} ]]; then  # what to look at after a failure
    mkdir -p "$SOAK_KEEP" && cp "$tmp"/{serve,faults,inject}.log "$tmp"/*.json* "$tmp"/*.txt \
      "$state/state.db" "$SOAK_KEEP"/ 2>/dev/null
  fi
  [[ -n $sampler_pid ]] && kill "$sampler_pid" 2>/dev/null
  for p in $(job_watchers "$state"); do kill "$p" 2>/dev/null; done
  timeout 120 "$bin" down --all --yes >/dev/null 2>&1
  e2e_end
}
trap cleanup EXIT
trap 'exit 143' TERM INT HUP  # so that a ctest timeout still cleans up

track_hosts_begin

# ---------------------------------------------------------------------------------
note "the emulator (short timings: 1 s notices), four nodes, an agent on every worker"
cat >"$tmp/emulator.yaml" <<YAML
seed: $seed
timings: {create: 1s, delete: 300ms, stockout_fail: 300ms, qr_wait: 300ms,
          preemption_notice: 1s, maintenance_notice: 1s, maintenance: 500ms}
YAML
emulator_starts() {
  tf emulator start --config "$tmp/emulator.yaml" >"$tmp/start.txt" || { cat "$tmp/start.txt"; return 1; }
  ep=$(jq -r .endpoint "$TPUFLEET_EMULATOR_DIR/daemon.json") && [[ $ep == http://127.0.0.1:* ]]
}
check "emulator start --config (short timings)" emulator_starts
ep=${ep:-http://127.0.0.1:1/}
readonly zones=(us-west4-a us-central1-a)
cat >"$tmp/fleet.yaml" <<YAML
fleet: soak
provider: emulator
nodes:
  - name: spot-one
    type: v5litepod-4
    capacity: spot
    zones: [${zones[0]}, ${zones[1]}]
    setup: echo set up >> /tmp/setups
  - name: spot-pod
    type: v5litepod-16
    capacity: spot
    queued: true
    zones: [${zones[0]}, ${zones[1]}]
    setup: echo set up >> /tmp/setups
  - name: od-one
    type: v5litepod-4
    zones: [${zones[1]}, ${zones[0]}]
    setup: echo set up >> /tmp/setups
  - name: od-pod
    type: v5litepod-16
    zones: [${zones[1]}, ${zones[0]}]
    setup: echo set up >> /tmp/setups
YAML
readonly nodes=(spot-one spot-pod od-one od-pod)
up_fleet() { up_spec "$tmp/fleet.yaml" 4m; }
check "up brings up the four nodes (2 single-host, 2 v5litepod-16 pods)" up_fleet
remember_hosts

# ---------------------------------------------------------------------------------
note "serve, the sampler of the emulator's states, and a restartable job per node"
port=$(free_port)
now() { date +%s.%N; }
start_serve() {
  "$bin" serve "$tmp/fleet.yaml" --pass "$kPass" --api-calls-per-minute "$kApiCalls" --listen "127.0.0.1:$port" >>"$tmp/serve.log" 2>&1 &
  serve_pid=$!
}
serve_runs() {
  local deadline=$((SECONDS + 30))
  until "$bin" status 2>/dev/null | grep -q "^serve: running (pid ${serve_pid}[,)]"; do
    kill -0 "$serve_pid" 2>/dev/null || { echo "serve exited:"; tail -20 "$tmp/serve.log"; return 1; }
    ((SECONDS < deadline)) || { "$bin" status; tail -20 "$tmp/serve.log"; return 1; }
    sleep 0.2
  done
}
start_serve
check "serve starts and status says it runs" serve_runs
# The ledger's window opens once serve has made a pass (status shows its last pass).
t0=$(now)

# Each sample has serve's last pass too (the heartbeat it writes at the end of every
# pass, microseconds): when serve could have seen a change, which bounds the ledger.
sample_states() {
  local pass
  while :; do
    pass=$(sqlite3 -readonly -cmd '.timeout 200' "$state/state.db" \
      'SELECT last_pass_at FROM serve' 2>/dev/null)
    api emulator/v1/status |
      jq -c --arg pass "$pass" '{now, pass: $pass, nodes: [.nodes[] | {name, state}],
        qrs: [.queuedResources[] | {name, state}]}' >>"$tmp/samples.jsonl" 2>/dev/null
    sleep "$kSample"
  done
}
sample_states &
sampler_pid=$!

# Each job writes its checkpoints to /gcs/JOB/wRANK (one directory per rank, as a
# sharded checkpoint would) and prints "restarts N" (TPUFLEET_RESTARTS) when it starts.
job_ids=()
start_jobs() {
  local node id
  for node in "${nodes[@]}"; do
    tf_run "run-$node" run "$node" --name "soak-$node" --detach --restart on-preemption \
      --max-restarts 100 -- bash -c \
      "exec tpu-standin --steps $kSteps --step-ms $kStepMs --checkpoint-dir /gcs/soak-$node/w\$TPUFLEET_RANK --checkpoint-every $kCheckpointEvery" ||
      return 1
    rc_is "run-$node" 0 || { shows "run-$node"; return 1; }
    id=$(head -1 "$tmp/run-$node.out")
    [[ -n $id ]] || { shows "run-$node"; return 1; }
    job_ids+=("$id")
  done
}
check "run --restart on-preemption starts a stand-in job on each node" start_jobs

# ---------------------------------------------------------------------------------
note "the fault stream: $kFaults faults, seed $seed"
# The emulator's view, refreshed before each fault: which nodes may take which fault.
status_json() { api emulator/v1/status >"$tmp/emu.json"; }
# ready_nodes KIND: the nodes of this fleet a KIND fault may hit now (READY and HEALTHY,
# nothing pending; preempt: spot only).
ready_nodes() {
  jq -r --arg kind "$1" '.nodes[] | select(.state == "READY" and (.health // "HEALTHY") == "HEALTHY"
      and (.preemptionPending // false | not) and ((.maintenance // "") == "")
      and ($kind != "preempt" or .spot)) | .name | split("/") | last' "$tmp/emu.json"
}
# pick WORD...: one of the words, drawn from the seeded RANDOM, into $picked (not through
# $(...): a subshell's RANDOM is not this shell's sequence). Fails when there is none.
pick() {
  local a=("$@")
  ((${#a[@]})) || return 1
  picked=${a[RANDOM % ${#a[@]}]}
}
pick_ready() {  # pick_ready KIND: pick among ready_nodes KIND
  local a
  mapfile -t a < <(ready_nodes "$1")
  pick "${a[@]}"
}
# tenths: a gap of 0 to 1.9 s from the seeded RANDOM, into $gap.
tenths() { gap=$((RANDOM % 20)); gap=$((gap / 10)).$((gap % 10)); }
kinds_done=()
inject() {  # inject KIND ARGS...: one fault; its line goes to faults.log
  if timeout 20 "$bin" emulator inject "$@" >>"$tmp/inject.log" 2>&1; then
    echo "$(now) $*" >>"$tmp/faults.log"
    kinds_done+=("$1")
    return 0
  fi
  return 1
}
kill_and_restart_serve() {
  kill -KILL "$serve_pid"
  wait "$serve_pid" 2>/dev/null
  tenths
  sleep "$gap"
  start_serve
  echo "$(now) kill-serve (down ${gap}s)" >>"$tmp/faults.log"
  kinds_done+=(kill-serve)
}
fault_stream() {
  local done_n=0 tries=0 roll kinds workers
  while ((done_n < kFaults && tries < kFaults * 5)); do
    tries=$((tries + 1))
    status_json
    roll=$((RANDOM % 100))
    if ((RANDOM % kKillEvery == 0)); then
      kill_and_restart_serve
      done_n=$((done_n + 1))
    elif ((roll < 30)) && pick_ready preempt; then
      inject preempt "$picked" --notice 1s && done_n=$((done_n + 1))
    elif ((roll < 45)) && pick_ready maintenance; then
      inject maintenance "$picked" --notice 1s && done_n=$((done_n + 1))
    elif ((roll < 60)) && pick_ready cutoff; then
      workers=$(jq -r --arg n "$picked" '.nodes[] | select(.name | endswith("/" + $n)) | .workers | length' "$tmp/emu.json")
      inject cutoff "$picked" --worker $((RANDOM % ${workers:-1})) --for 2s && done_n=$((done_n + 1))
    elif ((roll < 80)); then
      inject stockout --zone "${zones[RANDOM % 2]}" --family v5litepod --for 3s && done_n=$((done_n + 1))
    else
      inject storm --rate 0.3 --seed "$RANDOM" --for 2s && done_n=$((done_n + 1))
    fi
    ((tries % 10)) || remember_hosts  # recreated nodes are new namespaces
    # Several faults at once: a gap of 0 to 1.9 s, seeded like the rest.
    tenths
    sleep "$gap"
  done
  kinds=$(printf '%s\n' "${kinds_done[@]}" | sort | uniq -c | awk '{printf "%s %s, ", $2, $1}')
  note "faults injected: $done_n (${kinds%, })"
  ((done_n >= kFaults)) || { echo "only $done_n faults could be injected in $tries tries"; tail "$tmp/inject.log"; return 1; }
}
check "the emulator takes $kFaults seeded faults, several at once, and serve is killed and restarted" fault_stream

# ---------------------------------------------------------------------------------
note "the end: every job done, the fleet settled"
jobs_json() { "$bin" jobs --json >"$tmp/jobs.json" 2>"$tmp/jobs.err"; }
# Jobs not finished (state other than succeeded), as "ID STATE" lines.
unfinished() {
  jobs_json || { echo "jobs --json failed: $(head -c 300 "$tmp/jobs.err")"; return 0; }
  local id
  for id in "${job_ids[@]}"; do
    jq -r --arg id "$id" '[.jobs[] | select(.id == $id) | .state] | "\($id) \(.[0] // "missing")"' "$tmp/jobs.json"
  done | grep -v ' succeeded$'
}
jobs_finish() {
  local deadline=$((SECONDS + kDrainSeconds)) left
  ((${#job_ids[@]} == ${#nodes[@]})) || { echo "only ${#job_ids[@]} jobs were started"; return 1; }
  while left=$(unfinished) && [[ -n $left ]]; do
    # A job given up on will not finish: no use waiting. (One a reboot stopped shows
    # cancelled, lost or failed until serve's jobs round restarts it.)
    if grep -qE ' gave-up$' <<<"$left" || ((SECONDS >= deadline)); then
      echo "jobs not finished:"
      echo "$left"
      head -c 3000 "$tmp/jobs.json"
      return 1
    fi
    sleep 2
  done
}
check "every job finished (state succeeded), within ${kDrainSeconds}s of the stream's end" jobs_finish
jobs_lost=$((${#nodes[@]} - ${#job_ids[@]} + $(unfinished | wc -l)))
all_steps_checkpointed() {
  local node dir w workers
  for node in "${nodes[@]}"; do
    workers=$([[ $node == *-pod ]] && echo 4 || echo 1)
    for ((w = 0; w < workers; w++)); do
      dir=$TPUFLEET_EMULATOR_DIR/gcs/soak-$node/w$w
      [[ -e $dir/step_$kSteps ]] || { echo "$node rank $w: no step_$kSteps in $dir:"; find "$dir" | tail -3; return 1; }
    done
  done
}
check "each rank of each job wrote its last checkpoint (step $kSteps) to /gcs" all_steps_checkpointed
restarts_seen() {
  [[ -n ${job_ids[1]:-} ]] || { echo "spot-pod's job was not started"; return 1; }
  tf_run logs logs "${job_ids[1]}" || return 1
  grep -q "restarts [1-9]" "$tmp/logs.out" || { note "spot-pod's job shows no restart"; tail "$tmp/logs.out"; return 1; }
  grep -q "resumed from step" "$tmp/logs.out" || { tail "$tmp/logs.out"; return 1; }
}
check "the spot pod's job was restarted (restarts N) and resumed from a checkpoint" restarts_seen

# emulator_nodes: "ZONE NODE STATE" of every node the API lists in the candidate zones.
emulator_nodes() {
  local z
  for z in "${zones[@]}"; do
    api "v2/projects/$project/locations/$z/nodes" | jq -r --arg z "$z" '.nodes[]? | "\($z) \(.name | split("/") | last) \(.state)"'
  done
}
settled() {
  emulator_nodes >"$tmp/nodes.txt"
  [[ $(awk '$3 == "READY"' "$tmp/nodes.txt" | wc -l) == 4 && $(wc -l <"$tmp/nodes.txt") == 4 ]]
}
fleet_settles() { wait_for "$kSettleSeconds" settled || { cat "$tmp/nodes.txt"; return 1; }; }
check "the fleet settles: four nodes, all READY" fleet_settles
no_node_twice() {
  local dup
  dup=$(awk '{print $2}' "$tmp/nodes.txt" | sort | uniq -d)
  [[ -z $dup ]] || { echo "listed twice: $dup"; cat "$tmp/nodes.txt"; return 1; }
  [[ $(awk '{print $2}' "$tmp/nodes.txt" | sort | tr '\n' ' ') == "od-one od-pod spot-one spot-pod " ]] ||
    { cat "$tmp/nodes.txt"; return 1; }
}
check "no node exists twice (the API's list of both zones)" no_node_twice
no_husk_no_qr() {
  status_json
  local husks qrs
  husks=$(jq -r '.nodes[] | select(.state != "READY") | "\(.name) \(.state)"' "$tmp/emu.json")
  [[ -z $husks ]] || { echo "husks: $husks"; return 1; }
  qrs=$(jq -r '.queuedResources[] | select(.state != "ACTIVE" or (.nodes | length) == 0 or
        (.nodes[0] | split("/") | last) != "spot-pod") | "\(.name) \(.state)"' "$tmp/emu.json")
  [[ -z $qrs ]] || { echo "queued resources left: $qrs"; return 1; }
  [[ $(jq '.queuedResources | length' "$tmp/emu.json") -le 1 ]] || { jq .queuedResources "$tmp/emu.json"; return 1; }
}
check "no husk and no queued resource but the spot pod's live one" no_husk_no_qr

stop_serve() {
  kill -TERM "$serve_pid" || { echo "serve was not running"; return 1; }
  wait_for 20 eval '! kill -0 "$serve_pid" 2>/dev/null' || { echo "serve still runs after SIGTERM"; return 1; }
}
t1=$(now)
# The metrics and events while serve still runs.
token_file=$state/serve/token
curl -s --max-time 10 --cacert "$state/serve/tls.crt" \
  -H @<(printf 'Authorization: Bearer %s\n' "$(cat "$token_file" 2>/dev/null)") \
  "https://127.0.0.1:$port/metrics" >"$tmp/metrics.txt"
check "SIGTERM ends serve" stop_serve
sleep 0.5
kill "$sampler_pid" 2>/dev/null
wait "$sampler_pid" 2>/dev/null
sampler_pid=""
ledger_matches() {
  python3 "$report" ledger "$tmp/samples.jsonl" "$state/state.db" soak "$t0" "$t1" "$kPass" \
    "$kSample" >"$tmp/ledger.txt" 2>&1
  local rc=$?
  sed 's/^/#   /' "$tmp/ledger.txt" >&3
  return $rc
}
check "the ledger matches each node's time in each state (bound: when serve's passes came)" ledger_matches

figures() {
  tf events --json >"$tmp/events.json" 2>"$tmp/events.err" || { cat "$tmp/events.err"; return 1; }
  python3 "$report" figures "$tmp/events.json" >"$tmp/figures.txt" || { cat "$tmp/figures.txt"; return 1; }
}
check "events --json has the recoveries and their times" figures
note "---- soak figures (seed $seed, $(nproc) cores) ----"
kinds=$(awk '{print $2}' "$tmp/faults.log" | sort | uniq -c | awk '{printf "%s %s, ", $2, $1}')
note "faults survived: $(wc -l <"$tmp/faults.log") (${kinds%, })"
note "jobs lost: $jobs_lost of ${#nodes[@]}"
[[ -e $tmp/figures.txt ]] && while read -r line; do note "$line"; done <"$tmp/figures.txt"
note "serve's metrics: $(grep -E '^tpufleet_(preemptions|recoveries)_total' "$tmp/metrics.txt" | tr '\n' ' ')"

down_and_clean() {
  local p
  remember_hosts
  # The holder first, while its workers still answer. It holds connections to the
  # workers of every incarnation the faults made, many gone, so it gets a minute; one
  # that outlives it is noted (the soak's figures stay meaningful) and killed, so that
  # what follows checks the rest.
  # The jobs' watchers first: they would start a holder again.
  for p in $(job_watchers "$state"); do kill "$p" 2>/dev/null; done
  if ! holder_stops 60 >"$tmp/holder-why.txt"; then
    note "holder stop: the holder still runs after 60 s; killed: $(tr '\n' ' ' <"$tmp/holder-why.txt")"
    pkill -KILL -f "holder serve --socket $state/"
  fi
  tf down --all --yes >"$tmp/down.txt" 2>&1 || { cat "$tmp/down.txt"; return 1; }
  stop_clean "$state/"
}
check "down and emulator stop leave no process, namespace, sshd or link of this run" down_and_clean

echo "1..$n"
((failed == 0))
