#!/usr/bin/env bash
# End to end: the fleet commands (up, status, down, import) as a user drives them,
# against `tpufleet emulator` with real worker hosts. Covers issue 4's "done means":
#   1. a spot v4-32 whose first zone is stocked out comes up in the second; ssh to a
#      worker by its SSH name with pinned host keys; setup ran once on every worker; a
#      second up changes nothing (no new API operation, changed=false everywhere); an
#      edited setup runs once more on every worker, and up --dry-run says so;
#   2. the next up of another spec of that type remembers the stockout;
#   3. up killed with SIGKILL at several points, then up again: exactly the spec's nodes
#      exist, and status --refresh agrees with the cloud; and up killed while its create
#      in the stocked-out zone is pending, then up at once: the node comes up in the next;
#   4. a storm of 429s and 503s slows up but does not fail it; a quota fault stops it
#      with the API's message and creates nothing; a bad type fails before any API call;
#   5. a queued node comes up through its queued resource, and down removes both;
#   6. import adopts a node made by hand and keeps its own ssh-keys; a node with a
#      fleet's label and no record is reported by status --refresh and up, untouched;
#   7. a preempted spot node shows as PREEMPTED and up makes it again, with setup;
#   7b. up of 16 single-host nodes with setup starts no ssh process (issue 11);
#   8. down --all leaves no node, queued resource or SSH name; status says so;
#   and emulator stop leaves no process, namespace, sshd or link of this run.
# Prints "ok N - ..." or "not ok N - ..." per check and exits 1 if any failed.
# Usage: fleet_e2e_test.sh path/to/tpufleet. Exit 77 (skipped) when not root or when a
# tool it needs (jq, curl, ssh, ssh-keygen) is missing.
set -uo pipefail
source "$(dirname "$0")/e2e_lib.sh"
bin=$(realpath "$1")
e2e_require jq curl ssh ssh-keygen timeout ip pgrep
e2e_home fleet
export TPUFLEET_CATALOG=$tmp/catalog.yaml
sshcfg=$state/ssh/config
bg_pids=()

cleanup() {
  local p
  for p in "${bg_pids[@]}"; do end_ours "$p" KILL; done
  e2e_end
}
trap cleanup EXIT
trap 'exit 143' TERM INT HUP  # so that a ctest timeout still cleans up

source "$(dirname "$0")/fleet_e2e_lib.sh"

# v4 is offered only in us-central2-b in the built-in catalog; the override adds a
# second zone. TPUFLEET_CATALOG reaches both tpufleet and the emulator it starts.
zb=us-central2-b
zc=us-central2-c
cat >"$TPUFLEET_CATALOG" <<EOF
families:
  v4:
    zones: [$zb, $zc]
EOF

# ---------------------------------------------------------------------------------
note "the emulator, with the catalog override"
check_emulator_starts
offers_v4_in_zc() {
  local code
  code=$(ecurl -s -o "$tmp/at.json" -w '%{http_code}' "$ep$(zone_api $zc)/acceleratorTypes/v4-32")
  [[ $code == 200 ]] || { echo "HTTP $code: $(cat "$tmp/at.json")"; return 1; }
}
check "the emulator offers v4-32 in $zc (the catalog override reaches it)" offers_v4_in_zc

# ---------------------------------------------------------------------------------
note "1. a spot v4-32 whose first zone is stocked out"
cat >"$tmp/pod.yaml" <<EOF
fleet: e2e
provider: emulator
nodes:
  - name: pod
    type: v4-32
    zones: [$zb, $zc]
    capacity: spot
    setup: |
      hostname >>~/setup-runs
EOF
check "validate accepts the pod spec" tf validate "$tmp/pod.yaml"
check "inject stockout in $zb for v4" tf emulator inject stockout --zone $zb --family v4
up_pod() { tf up "$tmp/pod.yaml" --timeout 2m >"$tmp/up1.txt" 2>&1 || { cat "$tmp/up1.txt"; return 1; }; }
check "up brings the pod up (exit 0)" up_pod
remember_hosts
pod_in_zc_status() {
  status_json || return 1
  [[ $(field pod .zone) == "$zc" && $(field pod .state) == READY &&
     $(field pod '.workers | length') == 4 ]] || { cat "$tmp/status.json"; return 1; }
}
check "status --json: pod is READY in the second zone $zc with 4 workers" pod_in_zc_status
pod_in_zc_cloud() {
  local got
  got=$(cloud_nodes $zb $zc)
  [[ $got == "$zc pod READY" ]] || { echo "emulator has: $got"; return 1; }
}
check "the emulator has pod in $zc only, READY" pod_in_zc_cloud

strict_config() {
  local hosts strict
  hosts=$(grep -c '^Host ' "$sshcfg")
  strict=$(grep -c '^ *StrictHostKeyChecking yes$' "$sshcfg")
  [[ $hosts -ge 5 && $strict -eq $hosts ]] || { echo "hosts $hosts, strict $strict"; cat "$sshcfg"; return 1; }
  ! grep -qiE 'StrictHostKeyChecking +(no|accept-new|ask)|UserKnownHostsFile +/dev/null' "$sshcfg" ||
    { cat "$sshcfg"; return 1; }
  grep -q '^Host pod-w3$' "$sshcfg" || { cat "$sshcfg"; return 1; }
}
check "the SSH config names pod and pod-w0..w3, each with StrictHostKeyChecking yes" strict_config

pinned_keys() {
  local kh node i addr key
  kh=$(awk '/^Host pod$/{f=1} f && /UserKnownHostsFile/{print $2; exit}' "$sshcfg")
  [[ -f $kh ]] || { echo "no known_hosts file '$kh' in the config"; return 1; }
  node=$(api "$(zone_api $zc)/nodes/pod")
  ecurl -s --max-time 20 -X POST "$ep$(zone_api $zc)/nodes/pod:getGuestAttributes" \
    -H 'Content-Type: application/json' -d '{"workerIds":[""]}' >"$tmp/ga.json"
  : >"$tmp/kh.want"
  for i in 0 1 2 3; do
    addr=$(jq -r ".networkEndpoints[$i].ipAddress" <<<"$node")
    key=$(jq -r ".guestAttributes[$i].queryValue.items[] | select(.key == \"ssh-ed25519\") | .value" "$tmp/ga.json")
    [[ -n $addr && $addr != null && -n $key ]] || { echo "worker $i: address '$addr' key '$key'"; return 1; }
    echo "$addr ssh-ed25519 $key" >>"$tmp/kh.want"
    # and under its names, which its Host blocks look it up by (HostKeyAlias)
    echo "pod-w$i ssh-ed25519 $key" >>"$tmp/kh.want"
    ((i == 0)) && echo "pod ssh-ed25519 $key" >>"$tmp/kh.want"
  done
  grep -v '^#' "$kh" | grep -v '^$' | sort >"$tmp/kh.have"
  sort -o "$tmp/kh.want" "$tmp/kh.want"
  diff "$tmp/kh.want" "$tmp/kh.have"
}
check "known_hosts holds exactly the host keys of pod's guest attributes, by address and by name" pinned_keys

ssh_w3() {
  local out want
  out=$(on pod-w3 hostname) || return 1
  want=$(field pod '.workers[3].hostname')
  [[ -n $out && $out == "$want" ]] || { echo "pod-w3 says '$out', status says '$want'"; return 1; }
}
check "ssh -F STATE/ssh/config -o BatchMode=yes pod-w3 hostname works (worker 3)" ssh_w3

check "setup ran exactly once on each of the 4 workers" setup_once pod 4

cloud_ops $zb $zc >"$tmp/ops.before"
cloud_nodes $zb $zc >"$tmp/nodes.before"
up_again_json() {
  tf up "$tmp/pod.yaml" --json >"$tmp/up2.json" 2>"$tmp/up2.err" ||
    { cat "$tmp/up2.json" "$tmp/up2.err"; return 1; }
  jq -e '(.nodes | length) == 1 and all(.nodes[]; .ok == true and .changed == false)' \
    "$tmp/up2.json" >/dev/null || { cat "$tmp/up2.json"; return 1; }
}
check "a second up exits 0 and --json says changed=false for every node" up_again_json
no_new_ops() {
  cloud_ops $zb $zc >"$tmp/ops.after"
  cloud_nodes $zb $zc >"$tmp/nodes.after"
  [[ -s $tmp/ops.before ]] || { echo "no operations listed at all"; return 1; }
  diff "$tmp/ops.before" "$tmp/ops.after" && diff "$tmp/nodes.before" "$tmp/nodes.after"
}
check "the second up started no operation in $zb or $zc" no_new_ops
check "setup did not run again" setup_once pod 4

# Issue 11, fix 4: an edited setup was not applied ("nothing changed").
cat >>"$tmp/pod.yaml" <<EOF
      hostname >>~/setup-edited
EOF
edited_dry_run() {
  tf up "$tmp/pod.yaml" --dry-run >"$tmp/dry-edited.txt" 2>&1 || { cat "$tmp/dry-edited.txt"; return 1; }
  grep -q 'setup changed: rerun on 4 workers' "$tmp/dry-edited.txt" || { cat "$tmp/dry-edited.txt"; return 1; }
}
check "after an edit of setup, up --dry-run says: setup changed: rerun on 4 workers" edited_dry_run
edited_up() {
  tf up "$tmp/pod.yaml" --json >"$tmp/up-edited.json" 2>"$tmp/up-edited.err" ||
    { cat "$tmp/up-edited.json" "$tmp/up-edited.err"; return 1; }
  jq -e 'all(.nodes[]; .ok == true and .changed == true)' "$tmp/up-edited.json" >/dev/null ||
    { cat "$tmp/up-edited.json"; return 1; }
  cloud_nodes $zb $zc | diff "$tmp/nodes.before" - || { echo "the node was remade"; return 1; }
  local i out
  for i in 0 1 2 3; do
    out=$(on pod-w$i 'cat ~/setup-edited') || return 1
    [[ $(wc -l <<<"$out") -eq 1 ]] || { echo "pod-w$i: setup-edited: $out"; return 1; }
  done
}
check "up runs the edited setup once on each of the 4 workers and keeps the node" edited_up

# ---------------------------------------------------------------------------------
note "2. the stockout is remembered for the next spec of that type"
cat >"$tmp/other.yaml" <<EOF
fleet: other
provider: emulator
nodes:
  - name: other
    type: v4-32
    zones: [$zb, $zc]
EOF
remembered() {
  tf up "$tmp/other.yaml" --dry-run --json >"$tmp/dry.json" || { cat "$tmp/dry.json"; return 1; }
  jq -e --arg b $zb --arg c $zc '.nodes[0].action == "create" and .nodes[0].zones == [$c, $b]' \
    "$tmp/dry.json" >/dev/null || { cat "$tmp/dry.json"; return 1; }
}
check "up --dry-run --json of another v4-32 spec lists $zc first" remembered
dry_run_changes_nothing() {
  cloud_ops $zb $zc | diff "$tmp/ops.before" - && cloud_nodes $zb $zc | diff "$tmp/nodes.before" -
}
check "the dry run started no operation" dry_run_changes_nothing

# ---------------------------------------------------------------------------------
note "3. kill -9 of up at several points, then up again"
kz=($zb $zc us-west4-a us-central1-a)
cat >"$tmp/kills.yaml" <<EOF
fleet: kills
provider: emulator
nodes:
  - name: k-pod
    type: v4-32
    zones: [$zb, $zc]
    capacity: spot
    setup: hostname >>~/setup-runs
  - name: k-one
    type: v4-8
    count: 2
    zones: [$zb, $zc]
    setup: hostname >>~/setup-runs
  - name: k-lite
    type: v5litepod-4
    zones: [us-west4-a, us-central1-a]
    setup: hostname >>~/setup-runs
EOF
# Each up starts where the killed one left off, so the later ones have less to do; the
# last kill lands in the login and setup phase of nodes that already exist.
for t in 0.2 0.7 1.5 0.4; do
  "$bin" up "$tmp/kills.yaml" --timeout 2m >"$tmp/kill-$t.txt" 2>&1 &
  pid=$!
  bg_pids+=("$pid")
  sleep "$t"
  killed=no
  { kill -9 "$pid" && killed=yes; wait "$pid"; } 2>/dev/null  # and no "Killed" line from bash
  if [[ $killed == yes ]]; then
    note "killed up after ${t}s; its last words: $(tail -1 "$tmp/kill-$t.txt" | cut -c1-100)"
  else
    note "up had already ended after ${t}s: $(tail -1 "$tmp/kill-$t.txt" | cut -c1-100)"
  fi
  bg_pids=()
  note "the emulator then had: $(cloud_nodes "${kz[@]}" | grep ' k-' | tr '\n' ',')"
done
up_after_kills() {
  tf up "$tmp/kills.yaml" --timeout 2m >"$tmp/kills-up.txt" 2>&1 || { cat "$tmp/kills-up.txt"; return 1; }
}
check "up after the kills exits 0" up_after_kills
remember_hosts
exactly_the_spec() {
  local got
  cloud_nodes "${kz[@]}" | awk '$2 ~ /^k-/' >"$tmp/kills.cloud"
  got=$(awk '{print $2}' "$tmp/kills.cloud" | sort | tr '\n' ' ')
  [[ $got == "k-lite k-one-0 k-one-1 k-pod " ]] || { echo "emulator has:"; cat "$tmp/kills.cloud"; return 1; }
  ! grep -v ' READY$' "$tmp/kills.cloud" || return 1
}
check "the emulator has exactly k-pod, k-one-0, k-one-1, k-lite, once each, all READY" exactly_the_spec
status_agrees() {
  status_json --refresh || return 1
  jq -r '.nodes[] | select(.fleet == "kills") | "\(.zone) \(.node) \(.state)"' "$tmp/status.json" |
    sort >"$tmp/kills.status"
  diff "$tmp/kills.cloud" "$tmp/kills.status"
}
check "status --refresh --json agrees with the emulator (names, zones, READY)" status_agrees
kills_ssh() {
  local node
  for node in k-pod-w3 k-one-0 k-one-1 k-lite; do
    on "$node" true || { echo "ssh $node failed"; return 1; }
  done
}
check "every node of the killed fleet accepts ssh by its SSH name" kills_ssh

# The kill that matters most: while the create in the stocked-out zone is pending. The
# next up finds the node CREATING there; the create then fails and the node goes away,
# and up must go on to the next zone, not wait for a node that no longer exists. (The
# slow fault stretches the doomed create to 5 s so that the next up surely sees it.)
cat >"$tmp/late.yaml" <<EOF
fleet: late
provider: emulator
nodes:
  - name: late
    type: v4-16
    zones: [$zb, $zc]
    setup: hostname >>~/setup-runs
EOF
slow_id=$(tf emulator inject slow --factor 10 --for 1m --json | jq -r .id)
"$bin" up "$tmp/late.yaml" >"$tmp/late-1.txt" 2>&1 &
pid=$!
bg_pids+=("$pid")
late_pending() { cloud_nodes $zb | grep -qx "$zb late CREATING"; }
if wait_for 10 late_pending; then
  note "late is CREATING in the stocked-out $zb; kill -9 up"
else
  note "late never showed CREATING in $zb: $(cloud_nodes $zb $zc | tr '\n' ',')"
fi
{ kill -9 "$pid"; wait "$pid"; } 2>/dev/null
bg_pids=()
tf emulator inject clear "$slow_id" >/dev/null
up_after_pending_kill() {
  local start=$SECONDS got
  tf up "$tmp/late.yaml" --timeout 30s >"$tmp/late-2.txt" 2>&1 || { cat "$tmp/late-2.txt"; return 1; }
  note "up took $((SECONDS - start))s"
  got=$(cloud_nodes $zb $zc | awk '$2 == "late"')
  [[ $got == "$zc late READY" ]] || { echo "emulator has: $got"; return 1; }
}
check "up right after that kill brings late up in $zc (exit 0)" up_after_pending_kill
remember_hosts

# ---------------------------------------------------------------------------------
note "4. a storm of 429s and 503s; a quota fault; a bad type"
check "inject clear (ends the stockout)" tf emulator inject clear
cat >"$tmp/storm.yaml" <<EOF
fleet: storm
provider: emulator
nodes:
  - name: s-one
    type: v4-8
    count: 2
    zones: [$zb]
    setup: hostname >>~/setup-runs
EOF
check "inject storm --rate 0.4 --codes 429,503" \
  tf emulator inject storm --rate 0.4 --codes 429,503 --seed 7 --for 3m
up_in_storm() {
  local start=$SECONDS
  tf up "$tmp/storm.yaml" --timeout 2m >"$tmp/storm-up.txt" 2>&1 || { cat "$tmp/storm-up.txt"; return 1; }
  note "up took $((SECONDS - start))s in the storm"
}
check "up in the storm exits 0" up_in_storm
storm_was_on() {
  local i code bad=0
  for i in $(seq 1 20); do
    code=$(ecurl -s -o /dev/null -w '%{http_code}' "$ep$(zone_api $zb)/nodes")
    [[ $code == 429 || $code == 503 ]] && bad=$((bad + 1))
  done
  note "$bad of 20 calls failed"
  ((bad > 0))
}
check "the storm was on all along (calls still fail with 429 or 503)" storm_was_on
check "inject clear ends the storm" tf emulator inject clear
remember_hosts
storm_ready() {
  local got
  got=$(cloud_nodes $zb | awk '$2 ~ /^s-/' | tr '\n' ',')
  [[ $got == "$zb s-one-0 READY,$zb s-one-1 READY," ]] || { echo "emulator has: $got"; return 1; }
}
check "both storm nodes are READY in the emulator" storm_ready
check "setup ran once on each storm node" eval 'setup_once s-one-0 1 && setup_once s-one-1 1'

cat >"$tmp/quota.yaml" <<EOF
fleet: quota
provider: emulator
nodes:
  - name: q-one
    type: v4-8
    zones: [$zb, $zc]
EOF
check "inject quota --region us-central2 --family v4" \
  tf emulator inject quota --region us-central2 --family v4
quota_message() {
  # What the API itself says to a create in the region (429; it creates nothing).
  ecurl -s --max-time 20 -X POST "$ep$(zone_api $zb)/nodes?nodeId=probe" -H 'Content-Type: application/json' \
    -d '{"acceleratorType":"v4-8","runtimeVersion":"tpu-ubuntu2204-base"}' >"$tmp/quota.json"
  qmsg=$(jq -r .error.message "$tmp/quota.json")
  [[ $qmsg == *Quota* ]] || { cat "$tmp/quota.json"; return 1; }
}
check "the API refuses a create in us-central2 with a quota message" quota_message
qmsg=${qmsg:-Quota}
up_quota() {
  local rc
  tf up "$tmp/quota.yaml" --timeout 2m >"$tmp/quota.out" 2>"$tmp/quota.err"
  rc=$?
  [[ $rc == 1 ]] || { echo "exit $rc"; cat "$tmp/quota.out" "$tmp/quota.err"; return 1; }
  # The message up quotes is the API's, up to the region.
  grep -qF "${qmsg%% in region*}" "$tmp/quota.err" ||
    { echo "stderr lacks: $qmsg"; cat "$tmp/quota.err"; return 1; }
}
check "up with the quota fault exits 1 with the API's quota message on stderr" up_quota
no_quota_node() {
  local got
  got=$(cloud_nodes $zb $zc | awk '$2 == "q-one" || $2 == "probe"')
  [[ -z $got ]] || { echo "emulator has: $got"; return 1; }
}
check "no node was created under the quota fault" no_quota_node
check "inject clear ends the quota fault" tf emulator inject clear

cat >"$tmp/bad.yaml" <<EOF
fleet: bad
provider: emulator
nodes:
  - name: b-one
    type: v4-33
    zones: [$zb, $zc]
EOF
badline=$(grep -n 'type: v4-33' "$tmp/bad.yaml" | cut -d: -f1)
cloud_ops $zb $zc >"$tmp/ops.before"
cloud_nodes $zb $zc >"$tmp/nodes.before"
bad_type() {
  local cmd rc
  for cmd in validate up; do
    tf "$cmd" "$tmp/bad.yaml" >"$tmp/bad.out" 2>"$tmp/bad.err"
    rc=$?
    [[ $rc == 1 ]] || { echo "$cmd: exit $rc"; cat "$tmp/bad.out" "$tmp/bad.err"; return 1; }
    grep -qF "bad.yaml:$badline:" "$tmp/bad.err" && grep -qF 'v4-33' "$tmp/bad.err" ||
      { echo "$cmd: stderr does not name bad.yaml:$badline:"; cat "$tmp/bad.err"; return 1; }
  done
}
check "validate and up of a v4-33 spec exit 1 naming bad.yaml:$badline" bad_type
bad_made_no_call() {
  cloud_ops $zb $zc | diff "$tmp/ops.before" - && cloud_nodes $zb $zc | diff "$tmp/nodes.before" -
}
check "the bad spec made no API call that changes anything" bad_made_no_call

# ---------------------------------------------------------------------------------
note "5. a queued node"
zq=us-east5-a
cat >"$tmp/queued.yaml" <<EOF
fleet: queued
provider: emulator
nodes:
  - name: qd
    type: v5litepod-4
    zones: [$zq]
    capacity: spot
    queued: {valid_until: 1h}
    setup: hostname >>~/setup-runs
EOF
up_queued() {
  tf up "$tmp/queued.yaml" --timeout 2m >"$tmp/queued-up.txt" 2>&1 || { cat "$tmp/queued-up.txt"; return 1; }
}
check "up of a queued node exits 0" up_queued
remember_hosts
queued_active() {
  local qrs node
  qrs=$(cloud_queued $zq)
  [[ $qrs == "$zq qd ACTIVE" ]] || { echo "queued resources: $qrs"; return 1; }
  node=$(api "$(zone_api $zq)/nodes/qd")
  jq -e '.state == "READY" and (.queuedResource | endswith("/queuedResources/qd"))' <<<"$node" \
    >/dev/null || { echo "$node"; return 1; }
}
check "the emulator's queued resource qd is ACTIVE and its node READY" queued_active
check "ssh qd works and setup ran once" setup_once qd 1
down_queued() {
  local got
  tf down qd --yes >"$tmp/down-qd.txt" 2>&1 || { cat "$tmp/down-qd.txt"; return 1; }
  got=$(cloud_nodes $zq; cloud_queued $zq)
  [[ -z $got ]] || { echo "emulator still has: $got"; return 1; }
  ! grep -q '^Host qd' "$sshcfg" || { echo "qd still in the SSH config"; return 1; }
}
check "down qd removes the node, its queued resource and its SSH names" down_queued

# Sections 6 and 6b: import, and a node with a fleet's label but no record.
source "$(dirname "$0")/fleet_e2e_import.sh"

# ---------------------------------------------------------------------------------
note "7. preemption of the spot pod"
status_json pod
old_hosts=$(field pod '.workers[].hostname' | tr '\n' ' ')
preempted_in_api() {
  tf emulator inject preempt pod --notice 1s >/dev/null || return 1
  wait_for 30 eval '[[ $(api "$(zone_api $zc)/nodes/pod" | jq -r .state) == PREEMPTED ]]' ||
    { api "$(zone_api $zc)/nodes/pod"; return 1; }
}
check "inject preempt pod: the API says PREEMPTED" preempted_in_api
preempted_in_status() {
  status_json --refresh || return 1
  [[ $(field pod .state) == PREEMPTED ]] || { cat "$tmp/status.json"; return 1; }
  tf status --refresh pod >"$tmp/status.txt" 2>&1
  grep -q PREEMPTED "$tmp/status.txt" || { cat "$tmp/status.txt"; return 1; }
}
check "status --refresh shows pod PREEMPTED" preempted_in_status
recreate() {
  tf up "$tmp/pod.yaml" --json --timeout 2m >"$tmp/up3.json" 2>"$tmp/up3.err" ||
    { cat "$tmp/up3.json" "$tmp/up3.err"; return 1; }
  jq -e '.nodes[0].ok and .nodes[0].changed' "$tmp/up3.json" >/dev/null || { cat "$tmp/up3.json"; return 1; }
  [[ $(api "$(zone_api $zc)/nodes/pod" | jq -r .state) == READY ]] ||
    { api "$(zone_api $zc)/nodes/pod"; return 1; }
}
check "up makes pod again: exit 0, changed, READY in the API" recreate
remember_hosts
new_workers() {
  local new
  status_json pod || return 1
  new=$(field pod '.workers[].hostname' | tr '\n' ' ')
  [[ $(field pod .state) == READY && $(field pod '[.workers[].setup_done] | all') == true ]] ||
    { cat "$tmp/status.json"; return 1; }
  [[ -n $new && $new != "$old_hosts" ]] || { echo "workers before: $old_hosts; now: $new"; return 1; }
}
check "pod has new workers, READY, setup done in status" new_workers
check "setup ran once on each new worker" setup_once pod 4

# ---------------------------------------------------------------------------------
note "7b. up of 16 single-host nodes starts no ssh process (issue 11)"
cat >"$tmp/sixteen.yaml" <<EOF
fleet: sixteen
provider: emulator
nodes:
  - name: s16
    type: v5litepod-4
    count: 16
    zones: [us-west4-a]
    setup: |
      hostname >>~/setup-runs
EOF
# An ssh first in PATH that records being called and fails: up must not need it.
mkdir -p "$tmp/fake-ssh"
printf '#!/bin/sh\necho "ssh $*" >>"%s"\nexit 255\n' "$tmp/ssh-calls" >"$tmp/fake-ssh/ssh"
chmod +x "$tmp/fake-ssh/ssh"
up_without_ssh() {
  : >"$tmp/ssh-calls"
  PATH="$tmp/fake-ssh:$PATH" tf up "$tmp/sixteen.yaml" --timeout 2m >"$tmp/sixteen.txt" 2>&1 ||
    { cat "$tmp/sixteen.txt" "$tmp/ssh-calls"; return 1; }
  [[ ! -s $tmp/ssh-calls ]] || { echo "up ran ssh:"; cat "$tmp/ssh-calls"; return 1; }
}
check "up of 16 single-host nodes with setup exits 0 with a failing ssh first in PATH, never calling it" up_without_ssh
remember_hosts
setup_on_16() {
  local i
  for ((i = 0; i < 16; i++)); do setup_once "s16-$i" 1 || return 1; done
}
check "setup ran once on each of the 16 nodes" setup_on_16

# ---------------------------------------------------------------------------------
note "8. down --all"
all_zones=($zb $zc us-west4-a us-central1-a $zq $zi)
down_all() {
  tf down --all --yes >"$tmp/down.txt" 2>&1 || { cat "$tmp/down.txt"; return 1; }
}
check "down --all --yes exits 0" down_all
cloud_empty() {
  local got
  got=$(cloud_nodes "${all_zones[@]}"; cloud_queued "${all_zones[@]}")
  [[ -z $got ]] || { echo "emulator still has: $got"; return 1; }
}
check "the emulator has no node and no queued resource in any zone used" cloud_empty
no_ssh_names() {
  [[ -f $sshcfg ]] || { echo "no $sshcfg"; return 1; }
  ! grep -E '^ *(Host|Match) ' "$sshcfg"
}
check "the SSH config has no Host entries" no_ssh_names
status_empty() {
  tf status >"$tmp/status.txt" 2>&1 || { cat "$tmp/status.txt"; return 1; }
  grep -q '^No nodes' "$tmp/status.txt" || { cat "$tmp/status.txt"; return 1; }
  status_json && jq -e '.nodes == []' "$tmp/status.json" >/dev/null
}
check "status says there are no nodes" status_empty

# ---------------------------------------------------------------------------------
note "the end: nothing of this run is left"
check "holder stop ends the connection holder (status asked the agents for verdicts through it)" holder_stops
check "emulator stop leaves no process, namespace, sshd, link or state dir of this run" stop_clean
note "$(wc -l <"$tmp/netns") worker namespaces and $(wc -l <"$tmp/sshd") sshd were checked"

echo "# $n checks, $failed failed"
((failed == 0))
