#!/usr/bin/env bash
# End to end: `tpufleet emulator` as a user drives it. Starts the emulator, creates a
# v4-32 through the Cloud TPU API with a key in ssh-keys, logs in to each of its 4
# workers with strict host key checking (keys pinned from getGuestAttributes), checks
# each worker's metadata server, that workers do not share files but the bucket at /gcs,
# preempts the node (API state, metadata long-poll, workers stop answering), and stops
# the emulator,
# after which no namespace, veth, sshd or emulator process may be left.
# Usage: emulator_e2e_test.sh path/to/tpufleet. Exit 77 (skipped) when not root.
set -euo pipefail
bin=$(realpath "$1")
if [[ $(id -u) -ne 0 ]]; then
  echo "SKIP: the emulator's workers are network namespaces with a real sshd; run as root"
  exit 77
fi
tmp=$(mktemp -d)
export HOME=$tmp TPUFLEET_EMULATOR_DIR=$tmp/emulator
cleanup() {
  "$bin" emulator stop >/dev/null 2>&1 || true
  rm -rf "$tmp"
}
trap cleanup EXIT
source "$(dirname "$0")/e2e_lib.sh"  # for ecurl; this script's checks are its own
checks=0
check() { checks=$((checks + 1)); echo "check: $*"; }
fail() { echo "FAIL: $*" >&2; exit 1; }

# The emulator's links on this machine: those that appear while it runs are its own
# (another emulator, in another slot, may run beside this test).
emulator_links() { ip -o link show | { grep -o ' tpf[0-9a-z]*' || true; } | tr -d ' ' | sort -u; }
emulator_links >"$tmp/links.before"

check "emulator start prints the endpoint, the token file and the gcloud exports"
"$bin" emulator start >"$tmp/start.txt"
ep=$(grep -o 'http://127.0.0.1:[0-9]*/' "$tmp/start.txt" | head -1)
[[ -n $ep ]] || fail "no endpoint in: $(cat "$tmp/start.txt")"
api=${ep}v2/projects/e2e/locations/us-central2-b
tokfile=$TPUFLEET_EMULATOR_DIR/token
grep -qF "export CLOUDSDK_API_ENDPOINT_OVERRIDES_TPU=$ep CLOUDSDK_AUTH_ACCESS_TOKEN_FILE=$tokfile" \
  "$tmp/start.txt" || fail "no gcloud exports in: $(cat "$tmp/start.txt")"
check "the curl line start prints works as printed"
curl_line=$(sed -n 's/^  curl  *//p' "$tmp/start.txt")
[[ $curl_line == *"curl -K - "* ]] || fail "no curl line in: $(cat "$tmp/start.txt")"
bash -c "$curl_line -sf" | grep -q '"nodes"' || fail "the printed curl line does not answer: $curl_line"

check "the token is a fresh secret in a 0600 file of a 0700 state dir, never in status --json"
[[ $(stat -c %a "$tokfile") == 600 && $(stat -c %a "$TPUFLEET_EMULATOR_DIR") == 700 ]] ||
  fail "modes: $(stat -c '%a %n' "$tokfile" "$TPUFLEET_EMULATOR_DIR")"
tok=$(cat "$tokfile")
[[ $tok == tpufleet-emulator-?* ]] || fail "token file holds: $tok"
"$bin" emulator status --json >"$tmp/status.json"
grep -qF "\"token_file\": \"$tokfile\"" "$tmp/status.json" || fail "no token_file: $(cat "$tmp/status.json")"
! grep -qF "$tok" "$tmp/status.json" || fail "status --json shows the secret"

check "web pages are refused: a request with a foreign Host (DNS rebinding) or an Origin gets 403"
code=$(ecurl -s -o "$tmp/web.json" -w '%{http_code}' -H 'Host: rebind.example:80' "$api/nodes")
[[ $code == 403 ]] && grep -q '"status": *"PERMISSION_DENIED"' "$tmp/web.json" ||
  fail "foreign Host: HTTP $code $(cat "$tmp/web.json")"
code=$(ecurl -s -o "$tmp/web.json" -w '%{http_code}' -X POST "$api/nodes?nodeId=web" \
  -H 'Origin: http://evil.example' -H 'Content-Type: text/plain' \
  -d '{"acceleratorType":"v4-8","runtimeVersion":"tpu-ubuntu2204-base"}')
[[ $code == 403 ]] || fail "Origin: HTTP $code $(cat "$tmp/web.json")"
code=$(ecurl -s -o /dev/null -w '%{http_code}' "${ep/127.0.0.1/localhost}v2/projects/e2e/locations/us-central2-b/nodes")
[[ $code == 200 ]] || fail "localhost: HTTP $code"
ecurl -sf "$api/nodes/web" >/dev/null && fail "the refused create made a node"

check "create a v4-32 with alice's key in ssh-keys; it becomes READY"
ssh-keygen -q -t ed25519 -N '' -C alice -f "$tmp/key"
entry="alice:$(cut -d' ' -f1,2 "$tmp/key.pub") alice"
ecurl -sf -X POST "$api/nodes?nodeId=pod" -H 'Content-Type: application/json' \
  -d "{\"acceleratorType\":\"v4-32\",\"runtimeVersion\":\"tpu-ubuntu2204-base\",\"schedulingConfig\":{\"spot\":true},\"metadata\":{\"ssh-keys\":\"$entry\"}}" >/dev/null
for _ in $(seq 1 200); do
  ecurl -sf "$api/nodes/pod" >"$tmp/node.json"
  grep -q '"state": *"READY"' "$tmp/node.json" && break
  sleep 0.1
done
emulator_links | comm -23 - "$tmp/links.before" >"$tmp/links.ours"
grep -q '"state": *"READY"' "$tmp/node.json" || fail "node not READY: $(cat "$tmp/node.json")"
mapfile -t addrs < <(grep -o '"ipAddress": *"[0-9.]*"' "$tmp/node.json" | cut -d'"' -f4)
[[ ${#addrs[@]} -eq 4 ]] || fail "expected 4 network endpoints, got ${#addrs[@]}"

check "as nobody (issue 10): status, a node list and a patch of ssh-keys are refused with 401"
# What the review did: any local user could read every node and worker from the admin
# routes and give itself root on the workers through ssh-keys.
nobody_code() {
  runuser -u nobody -- curl -s -w '\n%{http_code}' "$@" >"$tmp/nobody.out"
  head -n -1 "$tmp/nobody.out" >"$tmp/nobody.json"
  tail -n 1 "$tmp/nobody.out"
}
runuser -u nobody -- cat "$tokfile" >/dev/null 2>&1 && fail "nobody can read the token file"
mallory="mallory:$(cut -d' ' -f1,2 "$tmp/key.pub") mallory"
for attempt in "GET ${ep}emulator/v1/status" "GET $api/nodes" "POST ${ep}emulator/v1/faults" \
  "PATCH $api/nodes/pod?updateMask=metadata"; do
  for bearer in "" "Bearer tpufleet-emulator" "Bearer ${tok%?}"; do
    code=$(nobody_code -X "${attempt%% *}" "${attempt#* }" -H "Authorization: $bearer" \
      -H 'Content-Type: application/json' -d "{\"metadata\":{\"ssh-keys\":\"$mallory\"},\"kind\":\"storm\",\"rate\":1}")
    [[ $code == 401 ]] && grep -q '"status": *"UNAUTHENTICATED"' "$tmp/nobody.json" ||
      fail "nobody: $attempt (${bearer:-no token}): HTTP $code $(cat "$tmp/nobody.json")"
    ! grep -q '198\.18\.\|ssh-ed25519' "$tmp/nobody.json" || fail "nobody got: $(cat "$tmp/nobody.json")"
  done
done
ecurl -sf "$api/nodes/pod" | grep -q mallory && fail "nobody's ssh-keys patch took effect"
[[ $(ecurl -s -o /dev/null -w '%{http_code}' "${ep}emulator/v1/status") == 200 ]] ||
  fail "the owner's token does not open the admin routes"

check "a body over 1 MiB gets 413 in Google's envelope, by Content-Length or chunked"
head -c $((1024 * 1024 + 1)) /dev/zero | tr '\0' 'x' >"$tmp/big.json"
for how in "Content-Type: application/json" "Transfer-Encoding: chunked"; do
  code=$(ecurl -s -o "$tmp/big.out" -w '%{http_code}' -X POST "$api/nodes?nodeId=big" \
    -H 'Content-Type: application/json' -H "$how" --data-binary @"$tmp/big.json")
  [[ $code == 413 ]] && grep -q '"code": *413' "$tmp/big.out" ||
    fail "big body ($how): HTTP $code $(head -c 300 "$tmp/big.out")"
done
ecurl -sf "$api/nodes/big" >/dev/null && fail "the oversized create made a node"

check "pin each worker's host key from getGuestAttributes"
ecurl -sf -X POST "$api/nodes/pod:getGuestAttributes" -H 'Content-Type: application/json' \
  -d '{"workerIds":[""]}' | tr -d ' \n' >"$tmp/ga.json"
mapfile -t hostkeys < <(grep -o '"key":"ssh-ed25519"[^}]*' "$tmp/ga.json" |
  sed -E 's/.*"value":"([^"]*)".*/\1/')
[[ ${#hostkeys[@]} -eq 4 ]] || fail "expected 4 host keys: $(cat "$tmp/ga.json")"
: >"$tmp/known_hosts"
for i in 0 1 2 3; do echo "${addrs[$i]} ssh-ed25519 ${hostkeys[$i]}" >>"$tmp/known_hosts"; done
on() {
  local w=$1
  shift
  ssh -i "$tmp/key" -o UserKnownHostsFile="$tmp/known_hosts" -o StrictHostKeyChecking=yes \
    -o BatchMode=yes -o ConnectTimeout=5 -o LogLevel=ERROR "alice@${addrs[$w]}" "$@"
}

check "ssh to every worker as alice; each metadata server gives its own worker number"
for i in 0 1 2 3; do
  out=$(on "$i" 'id -un; curl -s -H "Metadata-Flavor: Google" http://169.254.169.254/computeMetadata/v1/instance/attributes/agent-worker-number')
  [[ $out == "alice"$'\n'"$i" ]] || fail "worker $i said: $out"
done

check "a worker's metadata server refuses a web page's request (foreign Host)"
out=$(on 0 'curl -s -o /dev/null -w "%{http_code}" -H "Metadata-Flavor: Google" -H "Host: rebind.example" http://169.254.169.254/computeMetadata/v1/instance/id')
[[ $out == 403 ]] || fail "metadata with a foreign Host: HTTP $out"

check "a file written on worker 0 is not on worker 1 nor on this machine"
on 0 'echo hello >/tmp/e2e-marker && echo hi >~/marker'
on 0 'test -f /tmp/e2e-marker && test -f ~/marker' || fail "file missing on worker 0"
on 1 'test ! -e /tmp/e2e-marker && test ! -e ~/marker' || fail "worker 1 sees worker 0's files"
[[ ! -e /tmp/e2e-marker ]] || fail "this machine sees worker 0's /tmp"

check "the bucket at /gcs: what worker 0 writes there is on worker 3 and in the state dir's gcs"
on 0 'echo ckpt >/gcs/e2e-step && stat -c %a /gcs' | grep -qx 1777 || fail "/gcs is not mode 1777"
[[ $(on 3 'cat /gcs/e2e-step') == ckpt ]] || fail "worker 3 does not see worker 0's /gcs file"
[[ $(cat "$TPUFLEET_EMULATOR_DIR/gcs/e2e-step") == ckpt ]] || fail "the bucket is not STATE/gcs"

check "inject cutoff --worker 1: that worker stops answering until the fault is cleared"
"$bin" emulator inject cutoff pod --worker 1 >/dev/null
if on 1 true 2>/dev/null; then fail "worker 1 still answers while cut off"; fi
on 0 true || fail "worker 0 was cut off too"
"$bin" emulator inject clear >/dev/null
for _ in $(seq 1 50); do on 1 true 2>/dev/null && break; sleep 0.1; done
on 1 true || fail "worker 1 did not come back after clear"

check "preemption: the metadata long-poll turns TRUE, the API says PREEMPTED, workers stop answering"
on 2 'curl -s -H "Metadata-Flavor: Google" "http://169.254.169.254/computeMetadata/v1/instance/preempted?wait_for_change=true"' >"$tmp/preempted" &
poll=$!
# The poll must be waiting before the flag turns, or it waits for a later change and
# dies with the worker: on a loaded machine ssh alone can take longer than a fixed sleep.
for _ in $(seq 1 100); do
  on 2 'pgrep -f "wait_for_chang[e]"' >/dev/null 2>&1 && break
  sleep 0.1
done
sleep 0.3
"$bin" emulator inject preempt pod --notice 2s >/dev/null
wait "$poll" || true
[[ $(cat "$tmp/preempted") == TRUE ]] || fail "long-poll said: $(cat "$tmp/preempted")"
for _ in $(seq 1 100); do
  ecurl -sf "$api/nodes/pod" | grep -q '"state": *"PREEMPTED"' && break
  sleep 0.1
done
ecurl -sf "$api/nodes/pod" | grep -q '"state": *"PREEMPTED"' || fail "node not PREEMPTED"
if on 0 true 2>/dev/null; then fail "worker 0 still answers after preemption"; fi

check "inject stockout: a create returns an operation that fails with code 8 and the real message"
"$bin" emulator inject stockout --zone us-central2-b --family v4 --for 5m >/dev/null
op=$(ecurl -sf -X POST "$api/nodes?nodeId=late" -H 'Content-Type: application/json' \
  -d '{"acceleratorType":"v4-8","runtimeVersion":"tpu-ubuntu2204-base"}' | grep -o '"name": *"[^"]*"' | head -1 | cut -d'"' -f4)
for _ in $(seq 1 100); do
  ecurl -sf "${ep}v2/$op" >"$tmp/op.json"
  grep -q '"done": *true' "$tmp/op.json" && break
  sleep 0.1
done
grep -q '"code": *8' "$tmp/op.json" || fail "stockout operation: $(cat "$tmp/op.json")"
grep -q 'There is no more capacity in the zone \\"us-central2-b\\"' "$tmp/op.json" ||
  fail "stockout message: $(cat "$tmp/op.json")"

check "inject quota: a create gets HTTP 429 RESOURCE_EXHAUSTED at once"
"$bin" emulator inject clear >/dev/null
"$bin" emulator inject quota --region us-central2 --family v4 >/dev/null
code=$(ecurl -s -o "$tmp/quota.json" -w '%{http_code}' -X POST "$api/nodes?nodeId=q" \
  -H 'Content-Type: application/json' -d '{"acceleratorType":"v4-8","runtimeVersion":"tpu-ubuntu2204-base"}')
[[ $code == 429 ]] || fail "quota: HTTP $code $(cat "$tmp/quota.json")"
grep -q '"status": *"RESOURCE_EXHAUSTED"' "$tmp/quota.json" || fail "quota body: $(cat "$tmp/quota.json")"

check "inject storm --rate 1 --codes 503: every call fails with 503 until cleared"
"$bin" emulator inject clear >/dev/null
"$bin" emulator inject storm --rate 1 --codes 503 --for 1m >/dev/null
code=$(ecurl -s -o /dev/null -w '%{http_code}' "$api/nodes")
[[ $code == 503 ]] || fail "storm: HTTP $code"
"$bin" emulator inject clear >/dev/null
code=$(ecurl -s -o /dev/null -w '%{http_code}' "$api/nodes")
[[ $code == 200 ]] || fail "after clear: HTTP $code"

check "inject: a misspelled kind or an unknown node is refused with a suggestion"
set +e
"$bin" emulator inject stokout --zone x 2>"$tmp/err"; rc=$?
set -e
[[ $rc == 2 ]] && grep -q "did you mean stockout" "$tmp/err" || fail "bad kind: rc=$rc $(cat "$tmp/err")"
set +e
"$bin" emulator inject preempt pdo 2>"$tmp/err"; rc=$?
set -e
[[ $rc == 1 ]] && grep -q 'no node "pdo" (did you mean pod' "$tmp/err" || fail "bad node: rc=$rc $(cat "$tmp/err")"

check "start and stop never touch a directory that is not an emulator state dir"
mkdir -p "$tmp/precious" && echo keep >"$tmp/precious/file"
set +e
"$bin" emulator start --state-dir "$tmp/precious" 2>"$tmp/err"; rc=$?
set -e
[[ $rc == 1 ]] && grep -q "is not empty and is not an emulator state dir" "$tmp/err" ||
  fail "start on a full dir: rc=$rc $(cat "$tmp/err")"
"$bin" emulator stop --state-dir "$tmp/precious" >"$tmp/out"
grep -q "nothing was removed" "$tmp/out" || fail "stop on a foreign dir said: $(cat "$tmp/out")"
[[ $(cat "$tmp/precious/file") == keep ]] || fail "stop deleted a directory it did not make"

check "a state dir nobody made is refused, and nothing is adopted or written into it"
shared=$(mktemp -d)
chmod 1777 "$shared"
runuser -u nobody -- mkdir "$shared/emulator"
set +e
"$bin" emulator start --state-dir "$shared/emulator" 2>"$tmp/err"; rc=$?
"$bin" emulator stop --state-dir "$shared/emulator" 2>>"$tmp/err"; rc2=$?
set -e
left=$(ls -A "$shared/emulator")
rm -rf "$shared"
[[ $rc == 1 && $rc2 == 1 ]] && grep -q "belongs to nobody" "$tmp/err" ||
  fail "start/stop on nobody's dir: rc=$rc/$rc2 $(cat "$tmp/err")"
[[ -z $left ]] || fail "the emulator wrote into nobody's dir: $left"

check "emulator stop leaves no namespace, veth, sshd, worker process or state dir (bucket included)"
"$bin" emulator stop >/dev/null
[[ -z $(ip netns list) ]] || fail "namespaces left: $(ip netns list)"
[[ -s $tmp/links.ours ]] || fail "the emulator's links were never seen"
left=$(emulator_links | comm -12 - "$tmp/links.ours")
[[ -z $left ]] || fail "links left: $left"
! pgrep -f "$tmp" >/dev/null || fail "processes left: $(pgrep -af "$tmp")"
[[ ! -e $TPUFLEET_EMULATOR_DIR ]] || fail "state dir left"

# Issue 11 (a new user's fix 6): an emulator started with `sudo -E` for a user (here
# nobody), with --catalog. The daemon got no --catalog, and a stop by that user without
# sudo ended in an uncaught filesystem_error.
mine=$(mktemp -d)
chmod 0711 "$mine"
export TPUFLEET_EMULATOR_DIR=$mine/emulator
cat >"$tmp/catalog.yaml" <<'YAML'
families:
  v9e:
    generation: TPU v9e (a family only this test's catalog has)
    api_type: V9E
    suffix: chips
    chips_per_worker: 4
    max_single_host_chips: 4
    sizes: [4]
    topologies: {4: 2x2}
    hbm_gib_per_chip: 16
    hosts:
      - {chips_per_worker: 4, machine_type: ct9e-test-4t, vcpus: 24, ram_gib: 48}
    runtime_versions: [v2-alpha-tpuv9e]
    zones: [us-central2-b]
    prices:
      - {region: us-central2, on_demand: 1.00, spot: 0.50, source: test}
YAML
cleanup_mine() {
  "$bin" emulator stop >/dev/null 2>&1 || true
  rm -rf "$mine" "$tmp"
}
trap cleanup_mine EXIT
# As sudo -E sets them for root's commands: the state dir is nobody's.
export SUDO_UID=$(id -u nobody) SUDO_GID=$(id -g nobody)
"$bin" emulator start --catalog "$tmp/catalog.yaml" >"$tmp/start.txt"
ep=$(grep -o 'http://127.0.0.1:[0-9]*/' "$tmp/start.txt" | head -1)
api=${ep}v2/projects/e2e/locations/us-central2-b

check "emulator start --catalog FILE: the started emulator serves FILE's types"
code=$(ecurl -s -o "$tmp/v9e.json" -w '%{http_code}' -X POST "$api/nodes?nodeId=nine" \
  -H 'Content-Type: application/json' \
  -d '{"acceleratorType":"v9e-4","runtimeVersion":"v2-alpha-tpuv9e"}')
[[ $code == 200 ]] || fail "a create of the catalog's v9e-4: HTTP $code $(cat "$tmp/v9e.json")"
ecurl -sf "$api/nodes/nine" | grep -q '"acceleratorType": *"v9e-4"' ||
  fail "no v9e-4 node: $(ecurl -s "$api/nodes/nine")"

check "a stop by the user who ran sudo -E, without sudo, says to use sudo and exits 1"
set +e
runuser -u nobody -- env -u SUDO_UID -u SUDO_GID HOME=/nonexistent \
  TPUFLEET_EMULATOR_DIR="$TPUFLEET_EMULATOR_DIR" \
  timeout 30 "$bin" emulator stop >"$tmp/out" 2>"$tmp/err"; rc=$?
set -e
[[ $rc == 1 ]] && grep -q "sudo -E tpufleet emulator stop" "$tmp/err" ||
  fail "nobody's stop: rc=$rc $(cat "$tmp/out" "$tmp/err")"
! grep -q "filesystem_error\|terminate" "$tmp/err" || fail "nobody's stop aborted: $(cat "$tmp/err")"
"$bin" emulator status >/dev/null || fail "nobody's stop stopped root's emulator"
"$bin" emulator stop >/dev/null
[[ ! -e $TPUFLEET_EMULATOR_DIR ]] || fail "state dir left after the second stop"
echo "PASS: $checks checks"
