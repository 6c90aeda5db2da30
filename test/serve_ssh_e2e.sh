#!/usr/bin/env bash
# End to end, issue 16's "every command that works locally works through the server" for
# the commands that reach workers over SSH: an emulated fleet of `pod` (a v4-16: two
# workers) and `other` (a v4-8), `users add milo --nodes pod` (a member of pod alone),
# `tpufleet serve` over TLS, and milo's laptop (a HOME of his own, no fleet state, his
# key in an ssh-agent of his own, joined with his invite). From there, with
# --server URL:
#   1. `exec pod -- whoami` prints [pod/w0] milo and [pod/w1] milo; `exec other -- true`
#      is refused as a node that does not exist; a label selector in one line;
#   2. `ssh pod:1 -- hostname` prints worker 1's hostname and exits with the command's
#      status (`-- false`: 1);
#   3. `cp FILE pod:/tmp/` puts it on both workers, read back with exec; `cp
#      pod:/tmp/FILE DIR` brings both back into DIR/pod-wN/;
#   4. `forward pod PORT:LOCAL` reaches a web server milo runs on worker 0;
#   5. `attach JOB` (at a terminal of script(1)'s) types into milo's job on worker 0;
#   6. with serve's answer giving pod/w1 another key (the store edited while serve is
#      stopped), `exec pod -- true` is refused by ssh on w1 (host key), w0 still runs.
# No temporary ssh config is left behind. Everything (serve, the agent, the emulator, the
# temp dirs) is removed on exit, even on failure. Prints "ok N - ..." or "not ok N - ..."
# per check and exits 1 if any failed.
# Usage: serve_ssh_e2e.sh path/to/tpufleet. Exit 77 (skipped) when not root, when a tool
# it needs is missing, or when no tpufleet-agent was built next to tpufleet.
set -uo pipefail
here=$(dirname "$0")
source "$here/e2e_lib.sh"
bin=$(realpath "$1")
e2e_require jq curl ssh scp ssh-keygen ssh-agent ssh-add sqlite3 script timeout ip pgrep python3
e2e_require_agent "$bin"
e2e_home servessh

serve_pid=""
agent_pid=""
forward_pid=""
cleanup() {
  [[ -n $forward_pid ]] && end_ours "$forward_pid" TERM
  [[ -n $agent_pid ]] && kill "$agent_pid" 2>/dev/null
  stop_serve
  tf down --all --yes >/dev/null 2>&1
  e2e_end
}
trap cleanup EXIT
trap 'exit 143' TERM INT HUP  # so that a ctest timeout still cleans up

laptop=$tmp/laptop
mkdir -p "$laptop" "$tmp/laptop-tmp"
# on_laptop NAME ARGS…: `tpufleet --server $url ARGS…` as milo on his laptop (a HOME of
# his own, no state dir, his ssh-agent, a TMPDIR to look for leftovers in), kept as
# tf_run keeps it.
on_laptop() {
  local name=$1
  shift
  (cd "$tmp" && HOME=$laptop TPUFLEET_STATE_DIR=$laptop/no-state TMPDIR=$tmp/laptop-tmp \
    SSH_AUTH_SOCK=$agent_sock tf_run "$name" --server "$url" "$@")
}

track_hosts_begin
check_emulator_starts
cat >"$tmp/fleet.yaml" <<EOF
fleet: sshs
provider: emulator
nodes:
  - name: pod
    type: v4-16
    zones: [$zone]
  - name: other
    type: v4-8
    zones: [$zone]
EOF
ssh-keygen -q -t ed25519 -N '' -C milo@laptop -f "$tmp/milo"
up_and_add() {
  up_spec "$tmp/fleet.yaml" 4m
  tf_run add users add milo --key "$tmp/milo.pub" --nodes pod --spec "$tmp/fleet.yaml"
  rc_is add 0 || { shows add; return 1; }
}
check "up makes pod (two workers) and other; users add milo --nodes pod" up_and_add
remember_hosts

serving() { serve_tls "$tmp/fleet.yaml" serve.log --pass 2; }
check "serve starts over TLS" serving
url=${url:-https://127.0.0.1:1}

laptop_ready() {
  eval "$(ssh-agent -s -a "$tmp/agent.sock")" >/dev/null || return 1
  agent_pid=$SSH_AGENT_PID
  agent_sock=$tmp/agent.sock
  unset SSH_AUTH_SOCK SSH_AGENT_PID  # the operator's commands go on without it
  SSH_AUTH_SOCK=$agent_sock ssh-add -q "$tmp/milo" || return 1
  (cd "$tmp" && tf_run invite invite milo --server-url "$url") && rc_is invite 0 || { shows invite; return 1; }
  (cd "$tmp" && HOME=$laptop TPUFLEET_STATE_DIR=$laptop/no-state tf_run join join milo.tpufleet-invite)
  rc_is join 0 || { shows join; return 1; }
}
agent_sock=$tmp/agent.sock
check "milo's laptop: his key in his ssh-agent, joined with his invite" laptop_ready

# ---- 1. exec
execs() {
  on_laptop whoami exec pod -- whoami
  rc_is whoami 0 || { shows whoami; return 1; }
  [[ $(sort "$tmp/whoami.out") == $'[pod/w0] milo\n[pod/w1] milo' ]] || { shows whoami; return 1; }
  on_laptop grouped exec pod --group -- whoami
  rc_is grouped 0 && grep -qx "milo" "$tmp/grouped.out" || { shows grouped; return 1; }
}
check "exec pod -- whoami: milo on both workers, prefixed as the local exec prints" execs
refused() {
  on_laptop other exec other -- true
  rc_is other 1 && [[ $(wc -l <"$tmp/other.err") == 1 ]] &&
    grep -q "^tpufleet: error: no node 'other'" "$tmp/other.err" || { shows other; return 1; }
  on_laptop label exec team=a -- true
  rc_is label 2 && [[ $(wc -l <"$tmp/label.err") == 1 ]] &&
    grep -q "do not work through a team server" "$tmp/label.err" || { shows label; return 1; }
}
check "exec other: no node 'other' (not his); a label selector refused in one line" refused

# ---- 2. ssh
sshes() {
  local want
  want=$(tf exec pod:1 -- hostname 2>/dev/null | sed 's/^\[pod\/w1\] //')
  on_laptop host ssh pod:1 -- hostname
  rc_is host 0 && [[ -n $want && $(cat "$tmp/host.out") == "$want" ]] ||
    { echo "want $want"; shows host; return 1; }
  on_laptop false ssh pod -- false
  rc_is false 1 || { shows false; return 1; }
}
check "ssh pod:1 -- hostname: worker 1's; the command's exit status" sshes

# ---- 3. cp
copies() {
  echo "milo's data $RANDOM" >"$tmp/data.txt"
  on_laptop up cp data.txt pod:/tmp/
  rc_is up 0 && grep -q "to 2 of 2 workers" "$tmp/up.out" || { shows up; return 1; }
  on_laptop back exec pod -- cat /tmp/data.txt
  rc_is back 0 && [[ $(grep -c "] $(cat "$tmp/data.txt")\$" "$tmp/back.out") == 2 ]] ||
    { shows back; return 1; }
  on_laptop down cp pod:/tmp/data.txt fetched
  rc_is down 0 && cmp "$tmp/data.txt" "$tmp/fetched/pod-w0/data.txt" &&
    cmp "$tmp/data.txt" "$tmp/fetched/pod-w1/data.txt" || { shows down; ls -R "$tmp/fetched"; return 1; }
}
check "cp to pod:/tmp/ reaches both workers; cp back lands in DIR/pod-wN/" copies

# ---- 4. forward
forwards() {
  local port=18089 local_port
  local_port=$(free_port)
  # A server of milo's on worker 0, in a session of its own so that exec's end leaves it.
  on_laptop www exec pod:0 -- sh -c "mkdir -p /tmp/milo-www && echo hello-from-pod >/tmp/milo-www/index.html &&
    setsid sh -c 'echo \$\$ >/tmp/milo-www.pid; exec python3 -m http.server $port --bind 127.0.0.1 -d /tmp/milo-www' </dev/null >/dev/null 2>&1 &"
  rc_is www 0 || { shows www; return 1; }
  (cd "$tmp" && HOME=$laptop TPUFLEET_STATE_DIR=$laptop/no-state TMPDIR=$tmp/laptop-tmp \
    SSH_AUTH_SOCK=$agent_sock exec timeout 120 "$bin" --server "$url" forward pod "$port:$local_port" \
    >"$tmp/forward.out" 2>"$tmp/forward.err") &
  forward_pid=$!
  forwarding() { grep -q "^Forwarding http://127.0.0.1:$local_port/ -> pod/w0:$port" "$tmp/forward.out"; }
  wait_for 30 forwarding || { cat "$tmp/forward.out" "$tmp/forward.err"; return 1; }
  local page=""
  reached() { page=$(curl -s --max-time 5 "http://127.0.0.1:$local_port/") && [[ $page == hello-from-pod ]]; }
  wait_for 20 reached || { echo "got: $page"; cat "$tmp/forward.err"; return 1; }
  end_ours "$forward_pid" TERM
  wait "$forward_pid"
  local rc=$?
  forward_pid=""
  on_laptop stop exec pod:0 -- sh -c 'kill "$(cat /tmp/milo-www.pid)"'
  [[ $rc == 0 || $rc == 143 ]] || { echo "forward exited $rc"; cat "$tmp/forward.err"; return 1; }
}
check "forward pod PORT:LOCAL reaches milo's web server on worker 0" forwards

# ---- 5. attach
attaches() {
  # milo's job reads a line on worker 0's terminal; his attach (at a terminal of
  # script(1)'s) types it.
  on_laptop run run pod --detach --name milo-reads -- bash -c 'read -r x; echo "got-$x"; sleep 2'
  rc_is run 0 || { shows run; return 1; }
  local job
  job=$(cat "$tmp/run.out")
  (cd "$tmp" && { sleep 3; echo typed-here; sleep 5; } |
    HOME=$laptop TPUFLEET_STATE_DIR=$laptop/no-state TMPDIR=$tmp/laptop-tmp \
      SSH_AUTH_SOCK=$agent_sock timeout 60 script -qec "'$bin' --server '$url' attach $job" /dev/null \
      >"$tmp/attach.out" 2>&1)
  grep -q "got-typed-here" "$tmp/attach.out" || { cat -v "$tmp/attach.out"; return 1; }
  (cd "$tmp" && HOME=$laptop TPUFLEET_STATE_DIR=$laptop/no-state TMPDIR=$tmp/laptop-tmp \
    timeout 60 script -qec "'$bin' --server '$url' attach no-such-job" /dev/null </dev/null \
    >"$tmp/nojob.out" 2>&1)
  grep -q 'no job "no-such-job"' "$tmp/nojob.out" || { cat -v "$tmp/nojob.out"; return 1; }
}
check "attach JOB: milo's terminal reaches his job's on worker 0; an unknown job refused" attaches

# ---- 6. a host key that is not the server's answer
mismatch() {
  local key
  key=$(sqlite3 "$state/state.db" "SELECT host_key FROM workers WHERE node = 'other' AND idx = 0")
  [[ $key == ssh-* ]] || { echo "other's key: $key"; return 1; }
  stop_serve || { echo "serve exited $?:"; tail -5 "$tmp/serve.log"; return 1; }
  sqlite3 "$state/state.db" "UPDATE workers SET host_key = '$key' WHERE node = 'pod' AND idx = 1" ||
    return 1
  serving || { echo "serve did not start again:"; tail -5 "$tmp/serve.log"; return 1; }
  on_laptop wrong exec pod -- true
  rc_is wrong 1 && grep -q "^\[pod/w1\] Host key verification failed" "$tmp/wrong.err" &&
    grep -qx "tpufleet: 1 of 2 workers failed:" "$tmp/wrong.err" &&
    grep -q "^  pod/w1: host-key-mismatch" "$tmp/wrong.err" || { shows wrong; return 1; }
}
check "a worker whose key is not the one serve gave: ssh refuses it, the other worker runs" mismatch
killed() {
  # milo's exec of a long command, killed outright while ssh runs on worker 0: its ssh
  # config and known_hosts are in memory, so nothing of it stays in his TMPDIR.
  (cd "$tmp" && HOME=$laptop TPUFLEET_STATE_DIR=$laptop/no-state TMPDIR=$tmp/laptop-tmp \
    SSH_AUTH_SOCK=$agent_sock exec "$bin" --server "$url" exec pod:0 -- sleep 60 \
    >"$tmp/killed.out" 2>"$tmp/killed.err") &
  local pid=$! kids=""
  sshing() { kids=$(pgrep -P "$pid" -x ssh); [[ -n $kids ]]; }
  wait_for 30 sshing || { cat "$tmp/killed.err"; end_ours "$pid" KILL; return 1; }
  end_ours "$pid" KILL
  wait "$pid"
  # shellcheck disable=SC2086  # one pid a word
  kill $kids 2>/dev/null
  [[ -z $(ls -A "$tmp/laptop-tmp") ]] || { ls -la "$tmp/laptop-tmp"; return 1; }
}
check "an exec killed (SIGKILL) while ssh runs leaves nothing in TMPDIR" killed
no_leftovers() {
  [[ -z $(ls -A "$tmp/laptop-tmp") ]] || { ls -la "$tmp/laptop-tmp"; return 1; }
}
check "no temporary ssh config is left behind" no_leftovers

ends() {
  stop_serve || { echo "serve exited $?:"; tail -5 "$tmp/serve.log"; return 1; }
  tf down --all --yes >"$tmp/down.txt" 2>&1 || { cat "$tmp/down.txt"; return 1; }
}
check "serve stops, and down removes the nodes" ends

echo "1..$n"
[[ $failed -eq 0 ]]
