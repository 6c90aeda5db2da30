#!/usr/bin/env bash
# The tpufleet demo: the questions a TPU user asks on day one, answered offline.
# Usage: scripts/demo.sh path/to/tpufleet
set -euo pipefail
bin=$(realpath "${1:-build/src/app/tpufleet}")
root=$(cd "$(dirname "$0")/.." && pwd)
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
export TPUFLEET_EMULATOR_DIR=$tmp/emulator
trap '"$bin" emulator stop >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT

step "Start the local Cloud TPU" tpufleet emulator start
tpufleet emulator start | tee "$tmp/start.txt"
api=$(grep -o 'http://127.0.0.1:[0-9]*/' "$tmp/start.txt" | head -1)v2/projects/demo/locations/us-central2-b

step "Create a v4-32 through the Cloud TPU API, as Google's clients do" \
  "curl -X POST $api/nodes?nodeId=pod -d {acceleratorType: v4-32, ssh-keys: ...}"
ssh-keygen -q -t ed25519 -N '' -C demo -f "$tmp/key"
curl -sf -X POST "$api/nodes?nodeId=pod" -H 'Content-Type: application/json' \
  -d "{\"acceleratorType\":\"v4-32\",\"runtimeVersion\":\"tpu-ubuntu2204-base\",\"schedulingConfig\":{\"spot\":true},\"metadata\":{\"ssh-keys\":\"demo:$(cut -d' ' -f1,2 "$tmp/key.pub") demo\"}}" >/dev/null
printf 'waiting for READY'
until curl -sf "$api/nodes/pod" | grep -q '"state": *"READY"'; do printf .; sleep 0.2; done
echo
tpufleet emulator status

step "Log in to each of its 4 workers, host keys pinned from guest attributes" \
  "ssh demo@WORKER 'hostname; curl 169.254.169.254/.../agent-worker-number'"
curl -sf -X POST "$api/nodes/pod:getGuestAttributes" -d '{"workerIds":[""]}' | tr -d ' \n' |
  grep -o '"key":"ssh-ed25519"[^}]*' | sed -E 's/.*"value":"([^"]*)".*/\1/' >"$tmp/hostkeys"
mapfile -t addrs < <(curl -sf "$api/nodes/pod" | grep -o '"ipAddress": *"[0-9.]*"' | cut -d'"' -f4)
paste -d' ' <(printf '%s\n' "${addrs[@]}") <(sed 's/^/ssh-ed25519 /' "$tmp/hostkeys") >"$tmp/known_hosts"
for a in "${addrs[@]}"; do
  ssh -i "$tmp/key" -o UserKnownHostsFile="$tmp/known_hosts" -o StrictHostKeyChecking=yes \
    -o BatchMode=yes -o LogLevel=ERROR "demo@$a" \
    'echo "$(hostname) is worker $(curl -s -H "Metadata-Flavor: Google" http://169.254.169.254/computeMetadata/v1/instance/attributes/agent-worker-number)"'
done

step "Spot preemption, injected" tpufleet emulator inject preempt pod --notice 1s
tpufleet emulator inject preempt pod --notice 1s
until curl -sf "$api/nodes/pod" | grep -q '"state": *"PREEMPTED"'; do sleep 0.2; done
tpufleet emulator status

step "Tear everything down" tpufleet emulator stop
tpufleet emulator stop
printf '\nDemo done. Try: %s help\n' "$bin"
