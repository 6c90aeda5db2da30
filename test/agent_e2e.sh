#!/usr/bin/env bash
# End to end: the node agent as `up` installs it and `doctor` checks it, against
# `tpufleet emulator` with real worker hosts (issue 12), on a v4-8 (one worker):
#   a. up installs the agent (binary, systemd unit, its boot link) and starts it: it
#      answers on the worker with the SHA-256 of the agent next to tpufleet; a second up
#      installs nothing;
#   b. doctor passes on the healthy node (exit 0, --json ok);
#   c. after `emulator inject maintenance` (a reboot on a new address) the agent answers
#      again and doctor passes;
#   d. with the agent stopped on the worker (killed through exec while its lock is held,
#      so that nothing starts it again), doctor names the worker and the problem and
#      exits 1; once the lock is let go, up starts it again and doctor passes;
#   e. a chip taken away (emulator inject device): doctor names the worker and the
#      chip, exits 1, and passes once it is back;
#   and down, holder stop and emulator stop leave no process, namespace, sshd or link of
#   this run.
# Prints "ok N - ..." or "not ok N - ..." per check and exits 1 if any failed.
# Usage: agent_e2e.sh path/to/tpufleet. Exit 77 (skipped) when not root, when a tool it
# needs is missing, or when no tpufleet-agent was built next to tpufleet.
set -uo pipefail
source "$(dirname "$0")/e2e_lib.sh"
bin=$(realpath "$1")
agent=$(dirname "$bin")/tpufleet-agent
e2e_require jq curl ssh ssh-keygen nsenter timeout ip pgrep sha256sum
e2e_require_agent "$bin"
e2e_home agent
trap e2e_end EXIT
trap 'exit 143' TERM INT HUP  # so that a ctest timeout still cleans up
sha=$(sha256sum <"$agent" | cut -c1-64)

# The agent's hello on the worker, asked there as any user would (through exec).
hello() {
  tf exec ag -- bash -c 'echo "{\"v\":1,\"op\":\"hello\"}" | /usr/local/bin/tpufleet-agent call'
}
agent_answers() {
  local out
  out=$(hello 2>&1) || { echo "$out"; return 1; }
  grep -q "\"binary_sha256\":\"$sha\"" <<<"$out" || { echo "$out"; echo "(want $sha)"; return 1; }
}
doctor_passes() {
  tf_run doctor doctor ag
  rc_is doctor 0 && grep -q '^ag/w0: ok (agent, agent_version, clock' "$tmp/doctor.out" &&
    grep -q '1 of 1 workers healthy' "$tmp/doctor.out" || { shows doctor; return 1; }
  tf_run doctorj doctor ag --json
  rc_is doctorj 0 && [[ $(jq -r '.ok' "$tmp/doctorj.out") == true ]] || { shows doctorj; return 1; }
}
up_fleet() {
  tf up "$tmp/fleet.yaml" --timeout 3m >"$tmp/up.txt" 2>&1 || { cat "$tmp/up.txt"; return 1; }
}

track_hosts_begin

# ---------------------------------------------------------------------------------
note "a. up installs the agent"
check_emulator_starts
cat >"$tmp/fleet.yaml" <<EOF
fleet: ag
provider: emulator
nodes:
  - name: ag
    type: v4-8
    zones: [$zone]
EOF
installs() {
  up_fleet || return 1
  grep -q 'ag: agent .*installing on 1 worker' "$tmp/up.txt" || { cat "$tmp/up.txt"; return 1; }
}
check "up says it installs the agent on the worker, and brings the node up" installs
remember_hosts
check "the agent answers on the worker with the SHA-256 of the agent next to tpufleet" \
  agent_answers
unit_in_place() {
  tf exec ag -- bash -c 'grep -x "ExecStart=/usr/local/bin/tpufleet-agent serve" \
    /etc/systemd/system/tpufleet-agent.service && grep -x Restart=always \
    /etc/systemd/system/tpufleet-agent.service && \
    test -L /etc/systemd/system/multi-user.target.wants/tpufleet-agent.service && \
    test "$(stat -c %a /usr/local/bin/tpufleet-agent)" = 755'
}
check "the unit (ExecStart, Restart=always), its boot link and the 0755 binary" unit_in_place
second_up() {
  up_fleet || return 1
  ! grep -q 'installing' "$tmp/up.txt" && grep -q 'nothing changed' "$tmp/up.txt" ||
    { cat "$tmp/up.txt"; return 1; }
}
check "a second up installs nothing and changes nothing" second_up

# ---------------------------------------------------------------------------------
note "b. doctor on the healthy node"
check "doctor passes (exit 0; --json says ok)" doctor_passes

# ---------------------------------------------------------------------------------
note "c. maintenance: the worker reboots on a new address"
api_address() {
  api "v2/projects/$project/locations/$zone/nodes/ag" |
    jq -r 'select(.health == "HEALTHY") | .networkEndpoints[0].ipAddress'
}
old=$(api_address)
maintenance() {
  tf emulator inject maintenance ag --notice 1s >/dev/null || return 1
  wait_for 120 eval '[[ -n $(api_address) && $(api_address) != "$old" ]]' ||
    { echo "still at $old"; return 1; }
}
check "inject maintenance ag: the API lists a new address" maintenance
check "the agent answers again after the reboot" wait_for 60 agent_answers
check "doctor passes after the maintenance" doctor_passes

# ---------------------------------------------------------------------------------
note "d. a stopped agent"
# The worker's service manager (its init, like systemd) starts a killed serve again at
# once; an agent stays down when it cannot start: a process of the test holds serve's
# lock (/run/tpufleet-agent/lock, flock) while serve and any supervise of this worker
# (those in the network namespace of the shell exec runs there) are killed.
stop_agent() {
  tf exec ag -- sudo -n bash -c 'setsid flock /run/tpufleet-agent/lock sleep 600 \
      </dev/null >/dev/null 2>&1 & echo $! >/tmp/agent-e2e-lock.pgid
    me=$(readlink /proc/self/ns/net)
    for p in $(pgrep -f "tpufleet-agent (supervise|serve)"); do
      [ "$(readlink /proc/$p/ns/net)" = "$me" ] && kill -KILL $p; done; true' >/dev/null
  wait_for 20 eval '! agent_answers >/dev/null 2>&1' || { echo "it still answers"; return 1; }
  sleep 2
  ! agent_answers >/dev/null 2>&1 || { echo "it was started again"; return 1; }
}
check "the agent is killed on the worker and cannot start again" stop_agent
doctor_reports_it() {
  tf_run stopped doctor ag
  rc_is stopped 1 && grep -q '^ag/w0: FAIL agent: .*not running' "$tmp/stopped.out" &&
    grep -q 'tpufleet up' "$tmp/stopped.out" || { shows stopped; return 1; }
}
check "doctor names the worker and the stopped agent, with what to do (exit 1)" \
  doctor_reports_it
release_lock() {
  tf exec ag -- sudo -n bash -c 'kill -KILL -- -$(cat /tmp/agent-e2e-lock.pgid)' >/dev/null
}
check "the lock is let go" release_lock
restarted() {
  up_fleet || return 1
  agent_answers
}
check "up (or the worker's init) starts it again, and it answers" restarted
check "doctor passes again" doctor_passes

note "e. a chip taken away"
device_gone() {
  tf emulator inject device ag --worker 0 --device 1 >/dev/null || return 1
  tf_run nodev doctor ag
  rc_is nodev 1 && grep -q '^ag/w0: FAIL accelerators: ' "$tmp/nodev.out" ||
    { shows nodev; return 1; }
  tf emulator inject clear >/dev/null
}
check "doctor names the worker and its missing chip (exit 1)" device_gone
check "doctor passes once the chip is back" doctor_passes

# ---------------------------------------------------------------------------------
down_all() { tf down --all --yes >"$tmp/down.txt" 2>&1 || { cat "$tmp/down.txt"; return 1; }; }
check "down --all" down_all
check "holder stop ends the connection holder (exec and doctor started it)" holder_stops
check "emulator stop leaves no process, namespace, sshd or link of this run" stop_clean
echo "1..$n"
((failed == 0))
