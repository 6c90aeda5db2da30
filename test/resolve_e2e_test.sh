#!/usr/bin/env bash
# End to end, issue 11's new-user fix 2: a worker's name keeps working after its address
# changes. Against `tpufleet emulator` with real worker hosts: up five single-host nodes,
# start a forward to one of them, then put every node through maintenance (the emulator
# reboots its workers on new addresses). Without `status --refresh`:
#   1. plain `ssh NODE true` through ~/.ssh/config's Include reaches the worker (the Host
#      block's ProxyCommand finds its new address and records it);
#   2. `tpufleet ssh NODE -- true` does too;
#   3. `tpufleet exec NODE -- hostname` runs there (exec refreshes the node once);
#   4. `tpufleet cp FILE NODE:/tmp/` copies there;
#   5. the running `tpufleet forward` reconnects by itself (it says so) and serves what
#      listens on the worker after the reboot;
#   and ssh-proxy run by another user (nobody) on this state dir refuses it; and no
#   ssh-proxy or forward of this run is left at the end.
# Prints "ok N - ..." or "not ok N - ..." per check and exits 1 if any failed.
# Usage: resolve_e2e_test.sh path/to/tpufleet. Exit 77 (skipped) when not root or when a
# tool it needs is missing.
set -uo pipefail
source "$(dirname "$0")/e2e_lib.sh"
bin=$(realpath "$1")
e2e_require jq curl ssh ssh-keygen timeout python3 pgrep
e2e_home resolve
# ssh runs a ProxyCommand with $SHELL; the user's, as a person's ssh would.
export SHELL=/bin/bash
fw_pid=""

cleanup() {
  end_ours "$fw_pid" KILL
  e2e_end
}
trap cleanup EXIT
trap 'exit 143' TERM INT HUP

# The address tpufleet's state has for worker 0 of node $1 (no refresh).
known_address() {
  "$bin" status --json | jq -r --arg n "$1" '.nodes[] | select(.node == $n) | .workers[0].address'
}
# The address the emulator's API gives worker 0 of node $1, once its health is HEALTHY.
api_address() {
  api "v2/projects/$project/locations/$zone/nodes/$1" |
    jq -r 'select(.health == "HEALTHY") | .networkEndpoints[0].ipAddress'
}

# ---------------------------------------------------------------------------------
note "the emulator and five single-host nodes"
check_emulator_starts

cat >"$tmp/fleet.yaml" <<YAML
fleet: mv
provider: emulator
nodes:
  - name: mv
    type: v4-8
    count: 5
    zones: [$zone]
YAML
up_fleet() {
  tf up "$tmp/fleet.yaml" --timeout 3m >"$tmp/up.txt" 2>&1 || { cat "$tmp/up.txt"; return 1; }
}
check "up brings up mv-0 … mv-4 (exit 0)" up_fleet
config_proxies() {
  grep -q "ProxyCommand $bin ssh-proxy --state-dir $state -- mv-0 0" "$state/ssh/config" &&
    grep -q "HostKeyAlias mv-0-w0" "$state/ssh/config" &&
    grep -q "^mv-0-w0 ssh-ed25519 " "$state/ssh/known_hosts" ||
    { cat "$state/ssh/config" "$state/ssh/known_hosts"; return 1; }
}
check "the ssh config reaches workers through tpufleet ssh-proxy, keys pinned by name" \
  config_proxies
# Another user's ssh given this config (an Include of root's state) gets no connection:
# the proxy refuses a state dir that is not its user's, as every command does.
not_for_others() {
  runuser -u nobody -- "$bin" ssh-proxy --state-dir "$state" -- mv-0 0 </dev/null \
    >"$tmp/nobody.out" 2>"$tmp/nobody.err"
  local rc=$?
  [[ $rc == 1 && ! -s $tmp/nobody.out ]] && grep -q "state directory: $state" "$tmp/nobody.err" ||
    { echo "exit $rc"; cat "$tmp/nobody.out" "$tmp/nobody.err"; return 1; }
}
if id nobody >/dev/null 2>&1; then
  check "ssh-proxy run by nobody on root's state dir is refused, nothing on stdout" not_for_others
else
  note "skipped: no user nobody to run ssh-proxy as"
fi
include_works() {
  timeout 30 ssh -F "$HOME/.ssh/config" -o BatchMode=yes mv-0 true 2>"$tmp/ssh0.err" ||
    { cat "$tmp/ssh0.err" "$HOME/.ssh/config"; return 1; }
}
check "before any change: ssh -F ~/.ssh/config mv-0 true (the Include) works" include_works

# A forward to mv-3:8000, running through everything below.
forward_starts() {
  "$bin" forward mv-3 8000 --json >"$tmp/fw.out" 2>"$tmp/fw.err" &
  fw_pid=$!
  wait_for 60 grep -q '"url"' "$tmp/fw.out" || { cat "$tmp/fw.out" "$tmp/fw.err"; return 1; }
  fw_url=$(jq -r .url "$tmp/fw.out")
}
check "forward mv-3 8000 starts and prints its URL" forward_starts
fw_url=${fw_url:-http://127.0.0.1:1/}
# serve_on NODE WORD: a web server on the worker's loopback port 8000 serving WORD as
# /word.txt, detached so it outlives exec.
serve_on() {
  tf exec "$1" -- sh -c "mkdir -p www && echo $2 >www/word.txt && cd www &&
    setsid python3 -m http.server 8000 --bind 127.0.0.1 >/dev/null 2>&1 </dev/null &" \
    >"$tmp/serve.out" 2>&1 || { cat "$tmp/serve.out"; return 1; }
}
fetch_is() { [[ $(curl -s --max-time 5 "${fw_url}word.txt") == "$1" ]]; }
forward_serves() {
  serve_on mv-3 before || return 1
  wait_for 30 fetch_is before || { curl -sS --max-time 5 "${fw_url}word.txt"; cat "$tmp/fw.err"; return 1; }
}
check "the forward serves what listens on mv-3:8000" forward_serves

# ---------------------------------------------------------------------------------
note "maintenance on every node: each worker reboots on a new address"
for i in 0 1 2 3 4; do old[$i]=$(known_address "mv-$i"); done
maintenance() {
  local i
  for i in 0 1 2 3 4; do
    tf emulator inject maintenance "mv-$i" --notice 1s >/dev/null || return 1
  done
  for i in 0 1 2 3 4; do
    wait_for 120 eval '[[ -n $(api_address mv-'$i') && $(api_address mv-'$i') != "${old['$i']}" ]]' ||
      { echo "mv-$i: still at ${old[$i]}"; api "v2/projects/$project/locations/$zone/nodes/mv-$i"; return 1; }
  done
}
check "inject maintenance mv-0 … mv-4: the API lists new addresses" maintenance
state_is_stale() {
  local i
  for i in 0 1 2 3 4; do
    [[ $(known_address "mv-$i") == "${old[$i]}" ]] || { echo "mv-$i already refreshed"; return 1; }
  done
}
check "tpufleet's state still has the old addresses (no status --refresh)" state_is_stale

# ---------------------------------------------------------------------------------
note "1-4. ssh, tpufleet ssh, exec and cp, without status --refresh"
plain_ssh() {
  timeout 60 ssh -F "$HOME/.ssh/config" -o BatchMode=yes mv-0 true 2>"$tmp/ssh1.err" ||
    { cat "$tmp/ssh1.err"; return 1; }
  [[ $(known_address mv-0) == "$(api_address mv-0)" ]] ||
    { echo "state has $(known_address mv-0), the API $(api_address mv-0)"; return 1; }
}
check "ssh mv-0 true (through ~/.ssh/config) works, and the new address is recorded" plain_ssh
tf_ssh() {
  tf ssh mv-1 -- true </dev/null >"$tmp/ssh2.out" 2>&1 || { cat "$tmp/ssh2.out"; return 1; }
}
check "tpufleet ssh mv-1 -- true works" tf_ssh
tf_exec() {
  tf exec mv-2 -- hostname >"$tmp/exec.out" 2>"$tmp/exec.err" || { cat "$tmp/exec.out" "$tmp/exec.err"; return 1; }
  grep -q '^\[mv-2/w0\] ' "$tmp/exec.out" || { cat "$tmp/exec.out"; return 1; }
  [[ $(known_address mv-2) == "$(api_address mv-2)" ]] || { echo "mv-2 not recorded"; return 1; }
}
check "tpufleet exec mv-2 -- hostname works, and the new address is recorded" tf_exec
tf_cp() {
  echo "moved" >"$tmp/moved.txt"
  tf cp "$tmp/moved.txt" mv-4:/tmp/ >"$tmp/cp.out" 2>&1 || { cat "$tmp/cp.out"; return 1; }
  tf exec mv-4 -- cat /tmp/moved.txt >"$tmp/cat.out" 2>&1 || { cat "$tmp/cat.out"; return 1; }
  grep -qxF '[mv-4/w0] moved' "$tmp/cat.out" || { cat "$tmp/cat.out"; return 1; }
}
check "tpufleet cp FILE mv-4:/tmp/ works" tf_cp

# ---------------------------------------------------------------------------------
note "5. the running forward"
forward_reconnects() {
  wait_for 150 grep -q "the forward to mv-3/w0 is back" "$tmp/fw.err" ||
    { echo "forward said:"; cat "$tmp/fw.err"; return 1; }
  kill -0 "$fw_pid" || { echo "the forward exited"; cat "$tmp/fw.err"; return 1; }
  grep -q "the forward to mv-3/w0 dropped" "$tmp/fw.err" || { cat "$tmp/fw.err"; return 1; }
}
check "forward mv-3: says it dropped, reconnects by itself and keeps running" forward_reconnects
forward_serves_again() {
  serve_on mv-3 after || return 1
  wait_for 30 fetch_is after || { curl -sS --max-time 5 "${fw_url}word.txt"; cat "$tmp/fw.err"; return 1; }
}
check "the reconnected forward serves what listens on mv-3:8000 after the reboot" \
  forward_serves_again

# ---------------------------------------------------------------------------------
note "the end"
forward_stops() {
  kill -TERM "$fw_pid" && wait "$fw_pid"
  local rc=$?
  fw_pid=""
  [[ $rc == 0 ]] || { echo "forward exited $rc"; cat "$tmp/fw.err"; return 1; }
  wait_for 10 eval '! pgrep -f "$bin ssh-proxy --state-dir $state" >/dev/null' ||
    { pgrep -af "$bin ssh-proxy"; return 1; }
}
check "SIGTERM ends the forward (exit 0) and leaves no ssh-proxy" forward_stops
emulator_stops() { tf emulator stop >/dev/null; }
check "emulator stop" emulator_stops

echo "# $n checks, $failed failed"
((failed == 0))
