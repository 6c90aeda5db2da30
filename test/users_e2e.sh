#!/usr/bin/env bash
# End to end: collaborators (`tpufleet users`, issue 16's "done means" for them) against
# `tpufleet emulator` with real worker hosts, their real sshd and the node agent `up`
# installs, on a fleet of a spot v4-32 (4 workers) and a single-host v4-8:
#   a. `users add milo --key milo.pub`: milo logs in with his own key and name to every
#      worker of both nodes, and `sudo -n true` fails there;
#   b. `users set milo --sudo`: now it works on every worker;
#   c. the v4-32 is preempted (`emulator inject preempt`) and `up` recreates it: milo
#      still logs in to each of its new workers, with sudo;
#   d. milo leaves a `sleep` running on a worker; `users remove milo`: ssh as milo fails
#      on every worker, the sleep is gone, his home is still there; `users remove milo
#      --purge` removes the account and the home;
#   e. bad input (root, a name of the spec, a bad key, a worker range as --nodes): one
#      message each, nothing stored;
#   and down plus emulator stop leave no process, namespace, sshd or link of this run.
# Prints "ok N - ..." or "not ok N - ..." per check and exits 1 if any failed.
# Usage: users_e2e.sh path/to/tpufleet. Exit 77 (skipped) when not root, when a tool it
# needs is missing, or when no tpufleet-agent was built next to tpufleet.
set -uo pipefail
source "$(dirname "$0")/e2e_lib.sh"
bin=$(realpath "$1")
e2e_require jq curl ssh ssh-keygen nsenter timeout ip pgrep
e2e_require_agent "$bin"
e2e_home users
trap e2e_end EXIT
trap 'exit 143' TERM INT HUP  # so that a ctest timeout still cleans up

track_hosts_begin
workers=(pod pod-w1 pod-w2 pod-w3 solo)

# as_milo ALIAS COMMAND: runs COMMAND on worker ALIAS as milo with milo's own key, through
# tpufleet's SSH names (the pinned host keys) but not its key.
as_milo() {
  timeout 30 ssh -F "$state/ssh/config" -o IdentityFile="$tmp/milo" -o IdentitiesOnly=yes \
    -o BatchMode=yes -o ConnectTimeout=5 -o LogLevel=ERROR -l milo "$1" "$2"
}
# on_every_worker COMMAND EXPECTED: COMMAND as milo prints EXPECTED on every worker.
on_every_worker() {
  local w out
  for w in "${workers[@]}"; do
    out=$(as_milo "$w" "$1" 2>&1) || { echo "$w: ssh failed: $out"; return 1; }
    [[ $out == "$2" ]] || { echo "$w said: $out (wanted $2)"; return 1; }
  done
}
logs_in_everywhere() { on_every_worker 'id -un' milo; }
no_sudo_anywhere() { on_every_worker 'sudo -n true 2>/dev/null && echo sudo || echo none' none; }
sudo_everywhere() { on_every_worker 'sudo -n true 2>/dev/null && echo sudo || echo none' sudo; }
refused_everywhere() {
  local w
  for w in "${workers[@]}"; do
    if as_milo "$w" true >/dev/null 2>&1; then
      echo "milo still logs in to $w"
      return 1
    fi
  done
}
# root_on ALIAS COMMAND: COMMAND as root on the worker, through tpufleet's own login.
root_on() { tf exec "$1" -- sudo -n bash -c "$2"; }

# ---------------------------------------------------------------------------------
note "the emulator, a spot v4-32 and a v4-8, with the node agent on every worker"
check_emulator_starts
cat >"$tmp/fleet.yaml" <<YAML
fleet: uf
provider: emulator
nodes:
  - name: pod
    type: v4-32
    zones: [$zone]
    capacity: spot
  - name: solo
    type: v4-8
    zones: [$zone]
YAML
up_fleet() { up_spec "$tmp/fleet.yaml"; }
check "up brings up the v4-32 and the v4-8" up_fleet
remember_hosts
ssh-keygen -q -t ed25519 -N '' -C milo@laptop -f "$tmp/milo"

# ---------------------------------------------------------------------------------
note "a. users add milo"
tf_run add users add milo --key "$tmp/milo.pub" --spec "$tmp/fleet.yaml"
added() {
  if ! rc_is add 0 || ! grep -q "pod: done on 4 workers" "$tmp/add.out" ||
    ! grep -q "solo: done on 1 worker" "$tmp/add.out"; then
    shows add
    return 1
  fi
}
check "users add milo applies on both nodes (4 + 1 workers)" added
check "milo logs in with his own key and name to all 5 workers" logs_in_everywhere
check "sudo -n true fails for milo on every worker" no_sudo_anywhere
listed() {
  tf users list --json --spec "$tmp/fleet.yaml" >"$tmp/list.json" || return 1
  [[ $(jq -c '.users[] | select(.name == "milo") | [.source, .sudo, .role, .nodes]' "$tmp/list.json") == \
     '["added",false,"member",[]]' ]] || { cat "$tmp/list.json"; return 1; }
}
check "users list --json shows milo: added, no sudo, member, every node" listed

# ---------------------------------------------------------------------------------
note "b. promoted"
tf_run set users set milo --sudo --spec "$tmp/fleet.yaml"
set_ok() { rc_is set 0 || { shows set; return 1; }; }
check "users set milo --sudo exits 0" set_ok
check "sudo -n true works for milo on every worker" sudo_everywhere

# ---------------------------------------------------------------------------------
note "c. the v4-32 is preempted and recreated"
check "emulator inject preempt pod" tf emulator inject preempt pod
node_state() { api "/v2/projects/$project/locations/$zone/nodes/pod" | jq -r .state; }
preempted() { [[ $(node_state) == PREEMPTED ]]; }
check "the API says PREEMPTED" wait_for 60 preempted
check "up recreates pod" up_fleet
remember_hosts
ready_again() { [[ $(node_state) == READY ]] || { node_state; return 1; }; }
check "pod is READY again" ready_again
check "after the recreate milo logs in to every worker" logs_in_everywhere
check "... with sudo" sudo_everywhere

# ---------------------------------------------------------------------------------
note "d. users remove milo"
as_milo pod-w2 'nohup sleep 100000 >/dev/null 2>&1 &' >/dev/null 2>&1
sleeping() { root_on pod:2 'pgrep -u milo -x sleep' >/dev/null 2>&1; }
check "milo's sleep runs on pod/w2" sleeping
tf_run remove users remove milo --spec "$tmp/fleet.yaml"
removed() { rc_is remove 0 || { shows remove; return 1; }; }
check "users remove milo exits 0" removed
check "ssh as milo fails on every worker" refused_everywhere
sleep_gone() {
  local out
  out=$(root_on pod:2 'pgrep -u milo >/dev/null && echo still || echo none' 2>&1)
  [[ $out == *none* && $out != *still* ]] || { echo "$out"; return 1; }
}
check "milo's sleep (every process of his) is gone" sleep_gone
home_kept() { root_on pod:2 'test -d /home/milo' >/dev/null 2>&1; }
check "his home is still there" home_kept
no_longer_listed() {
  tf users list --json --spec "$tmp/fleet.yaml" >"$tmp/list.json" &&
    [[ $(jq '[.users[] | select(.name == "milo")] | length' "$tmp/list.json") == 0 ]]
}
check "users list no longer has him" no_longer_listed
tf_run purge users remove milo --purge --spec "$tmp/fleet.yaml"
purged() { rc_is purge 0 || { shows purge; return 1; }; }
check "users remove milo --purge exits 0" purged
home_gone() {
  local w
  for w in pod:0 pod:1 pod:2 pod:3 solo; do
    root_on "$w" '! test -e /home/milo && ! id milo' >/dev/null 2>&1 || { echo "$w"; return 1; }
  done
}
check "--purge removes his account and home on every worker" home_gone

# ---------------------------------------------------------------------------------
note "e. bad input changes nothing"
refused() {
  local want=$1
  shift
  tf_run bad users "$@" --spec "$tmp/fleet.yaml"
  if rc_is bad 0 || ! grep -q "$want" "$tmp/bad.err" || (($(wc -l <"$tmp/bad.err") != 1)); then
    shows bad
    return 1
  fi
}
echo "ssh-ed25519 not-a-key x" >"$tmp/bad.pub"
check "root is refused" refused "root" add root --key "$tmp/milo.pub"
check "a bad key is refused" refused "key" add ann --key "$tmp/bad.pub"
check "a worker range as --nodes is refused" refused "names workers" add ann --key "$tmp/milo.pub" --nodes pod:1
nothing_stored() {
  tf users list --json --spec "$tmp/fleet.yaml" >"$tmp/list.json" && [[ $(jq '.users | length' "$tmp/list.json") == 0 ]]
}
check "nothing was stored" nothing_stored

# ---------------------------------------------------------------------------------
note "the end: down, emulator stop, nothing left"
check "down --all --yes" tf down --all --yes
check "holder stop" holder_stops
check "emulator stop leaves no process, namespace, sshd or link of this run" stop_clean

echo "1..$n"
((failed == 0))
