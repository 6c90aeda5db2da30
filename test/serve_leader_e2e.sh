#!/usr/bin/env bash
# End to end: two `tpufleet serve` on one PostgreSQL store (issue 16), as a lab runs them
# on two machines (here: two state dirs with the same fleet key), against `tpufleet
# emulator` with real worker hosts.
#   a. one leads (its log says so, and `status` names its pid); the other follows and
#      serves the read API (GET /v1/status, /v1/jobs, /v1/events) from the store;
#   b. a spot node is preempted; while the leader recreates it (the emulator's operations
#      slowed, so that the create is in flight), the leader is killed with SIGKILL;
#   c. the follower takes the lead within seconds (its log), resumes from the store, and
#      the node is READY again, made exactly once: the emulator has two create operations
#      for it in all (up's and the recreate's), and one node of that name;
#   and the serves, the test server and the emulator leave nothing behind.
# The PostgreSQL server is a throwaway one, as the store tests': initdb in a temp dir,
# run as the `postgres` user, on a unix socket in that dir only.
# Prints "ok N - ..." or "not ok N - ..." per check and exits 1 if any failed.
# Usage: serve_leader_e2e.sh path/to/tpufleet. Exit 77 (skipped) when not root, when a
# tool it needs is missing (Debian's PostgreSQL server binaries among them), or when no
# tpufleet-agent was built next to tpufleet.
set -uo pipefail
here=$(dirname "$0")
source "$here/e2e_lib.sh"
bin=$(realpath "$1")
e2e_require jq curl ssh ssh-keygen timeout ip pgrep setpriv
e2e_require_agent "$bin"
pgbin=$(find /usr/lib/postgresql/*/bin -maxdepth 0 2>/dev/null | sort -V | tail -1)
if [[ -z $pgbin || ! -x $pgbin/initdb || ! -x $pgbin/pg_ctl || ! -x $pgbin/postgres ]] ||
  ! id postgres >/dev/null 2>&1; then
  echo "SKIP: PostgreSQL's server binaries (/usr/lib/postgresql/*/bin) or its postgres user are missing"
  exit 77
fi
e2e_home leader

# How long the follower may take to lead once the leader is gone: its poll (2 s,
# store/postgres_leader.h) and a pass.
readonly takeover_within=15
# pod_state: pod's state as `status --json` has it (from the store).
pod_state() {
  tf status --json 2>/dev/null | jq -r '.nodes[] | select(.node == "pod") | .state'
}
pod_ready() { [[ $(pod_state) == READY ]]; }
state2=$tmp/state2
pgdir=""
pg_pid=""
serve_pid=""
serve2_pid=""

cleanup() {
  stop_serve
  [[ -n $serve2_pid ]] && { serve_pid=$serve2_pid; stop_serve; }
  TPUFLEET_STATE_DIR=$state2 timeout 20 "$bin" holder stop >/dev/null 2>&1
  if [[ -n $pg_pid ]]; then
    kill -QUIT "$pg_pid" 2>/dev/null
    wait "$pg_pid" 2>/dev/null
  fi
  [[ -n $pgdir ]] && rm -rf "$pgdir"
  e2e_end
}
trap cleanup EXIT
trap 'exit 143' TERM INT HUP  # so that a ctest timeout still cleans up

# ---- The store: a throwaway PostgreSQL server, database "fleet".
# as_pg PROGRAM ARGS...: runs Debian's PROGRAM as the postgres user.
as_pg() {
  local program=$1
  shift
  setpriv --reuid=postgres --regid=postgres --clear-groups -- "$pgbin/$program" "$@"
}
pg_starts() {
  pgdir=$(mktemp -d /tmp/tpufleet-leader-pg.XXXXXX) && chown postgres: "$pgdir" || return 1
  as_pg initdb -D "$pgdir/data" -U postgres --auth=trust -E UTF8 \
    --locale=C --no-sync >"$pgdir/initdb.log" 2>&1 || { cat "$pgdir/initdb.log"; return 1; }
  # Not through as_pg: a function in the background is a subshell, and $! its pid.
  setpriv --reuid=postgres --regid=postgres --clear-groups -- "$pgbin/postgres" \
    -D "$pgdir/data" -k "$pgdir" -c listen_addresses= -c fsync=off >"$tmp/pg.log" 2>&1 &
  pg_pid=$!
  wait_for 30 as_pg pg_isready -q -h "$pgdir" ||
    { cat "$tmp/pg.log"; return 1; }
  as_pg createdb -h "$pgdir" fleet
}
check "a throwaway PostgreSQL server runs on a unix socket in a temp dir" pg_starts
# Every tpufleet of this run (up, status, both serves) reads and writes the one store.
export TPUFLEET_STORE="postgresql:///fleet?host=$pgdir&user=postgres"

track_hosts_begin
check_emulator_starts
cat >"$tmp/lab.yaml" <<EOF
fleet: lab
provider: emulator
nodes:
  - name: pod
    type: v4-8
    capacity: spot
    zones: [$zone]
    setup: echo set up
EOF
up_ok() {
  tf up "$tmp/lab.yaml" --timeout 3m >"$tmp/up.txt" 2>&1 || { cat "$tmp/up.txt"; return 1; }
  pod_ready || { tf status; return 1; }
}
check "up (its state in PostgreSQL) brings pod up READY" up_ok
remember_hosts
# The second machine: the same fleet key and SSH files, its own state dir.
cp -a "$state" "$state2" && find "$state2" \( -type s -o -name '*.lock' \) -delete

# ---- a. One leads, the other follows.
"$bin" serve "$tmp/lab.yaml" --store "$TPUFLEET_STORE" --listen 127.0.0.1:0 --pass 2 >"$tmp/serve1.out" 2>"$tmp/serve1.log" &
serve_pid=$!
leads() {
  wait_for 30 grep -q "serving the API" "$tmp/serve1.log" &&
    wait_for 30 eval 'tf status 2>&1 | grep -q "^serve: running (pid ${serve_pid}[,)]"' ||
    { cat "$tmp/serve1.log"; tf status; return 1; }
  ! grep -q following "$tmp/serve1.log" || { cat "$tmp/serve1.log"; return 1; }
}
check "the first serve leads: status names its pid" leads
TPUFLEET_STATE_DIR=$state2 "$bin" serve "$tmp/lab.yaml" --store "$TPUFLEET_STORE" --listen 127.0.0.1:0 --pass 2 \
  >"$tmp/serve2.out" 2>"$tmp/serve2.log" &
serve2_pid=$!
follows() {
  wait_for 30 grep -q "following: another serve leads this store (pid $serve_pid " "$tmp/serve2.log" ||
    { cat "$tmp/serve2.log"; return 1; }
}
check "the second serve follows, naming the leader" follows
serves_reads() {
  local port
  port=$(sed -n 's|.*serving the API on https://127.0.0.1:\([0-9]*\).*|\1|p' "$tmp/serve2.log" | head -1)
  # The token in a header file (printf is the shell's own: never in a program's argv);
  # the API over TLS, its certificate the one the follower made.
  (umask 077 && printf 'Authorization: Bearer %s\n' "$(cat "$state2/serve/token")" >"$tmp/auth2")
  serve_api() { curl -sf --cacert "$state2/serve/tls.crt" -H @"$tmp/auth2" "https://127.0.0.1:$port/v1/$1"; }
  serve_api status >"$tmp/api.json" &&
    jq -e --argjson p "$serve_pid" '.serve.pid == $p and ([.nodes[] | select(.node == "pod")] | length == 1)' \
      "$tmp/api.json" >/dev/null || { cat "$tmp/api.json" "$tmp/serve2.log"; return 1; }
  serve_api events | jq -e 'length > 0' >/dev/null && serve_api jobs >/dev/null
}
check "the follower's API answers status, events and jobs from the store (the leader's pid, pod)" serves_reads

# ---- b. Preempted; the leader killed while it recreates.
creates_of_pod() {
  api "v2/projects/$project/locations/$zone/operations?pageSize=1000" >"$tmp/ops.json" || return 1
  jq '[(.operations // [])[] | select(.metadata.verb == "create" and
        (.metadata.target | endswith("/nodes/pod")))] | length' "$tmp/ops.json"
}
check "emulator inject slow (the recreate stays in flight for a while)" \
  tf emulator inject slow --factor 8 --for 5m
check "emulator inject preempt pod" tf emulator inject preempt pod --notice 1s
in_flight() {
  tf events --json >"$tmp/ev.json" 2>/dev/null &&
    jq -e '[(if type == "array" then . else .events end)[]
            | select(.node == "pod" and .kind == "create-requested")] | length >= 2' \
      "$tmp/ev.json" >/dev/null
}
killed_mid_recreate() {
  wait_for 120 in_flight || { cat "$tmp/serve1.log"; return 1; }
  kill -KILL "$serve_pid"
  note "killed the leader with $(creates_of_pod) create operation(s) of pod on record"
  wait "$serve_pid" 2>/dev/null
  serve_pid=""
  ! pod_ready || { echo "pod was READY again before the kill"; tf status; return 1; }
}
check "the leader is killed (SIGKILL) after it sent the recreate, before pod is READY" killed_mid_recreate

# ---- c. The follower takes over and finishes the recreate, once.
takes_over() {
  wait_for "$takeover_within" grep -q "leading now" "$tmp/serve2.log" || { cat "$tmp/serve2.log"; return 1; }
}
check "the follower leads within $takeover_within s" takes_over
ready_again() {
  wait_for 300 pod_ready ||
    { tf status; tail -c 3000 "$tmp/serve2.log"; return 1; }
  wait_for 30 eval 'tf status 2>&1 | grep -q "^serve: running (pid ${serve2_pid}[,)]"' || { tf status; return 1; }
}
check "pod is READY again under the new leader, which status names" ready_again
once() {
  local c
  c=$(creates_of_pod) || return 1
  [[ $c == 2 ]] || { echo "create operations for pod: $c (want up's and one recreate)"; jq -c '.operations[]? | [.name, .metadata.verb, .metadata.target]' "$tmp/ops.json"; return 1; }
  api "v2/projects/$project/locations/$zone/nodes" >"$tmp/nodes.json" &&
    jq -e '[(.nodes // [])[] | select(.name | endswith("/nodes/pod"))] | length == 1' "$tmp/nodes.json" >/dev/null ||
    { cat "$tmp/nodes.json"; return 1; }
}
check "the recreate happened exactly once (two create operations for pod in all, one node)" once

ends_clean() {
  local s2=$serve2_pid
  serve_pid=$serve2_pid
  stop_serve || { echo "serve exited $?"; tail -20 "$tmp/serve2.log"; return 1; }
  serve2_pid=""
  ! kill -0 "$s2" 2>/dev/null
}
check "SIGTERM ends the leading serve cleanly" ends_clean
check "down deletes pod" tf down --all --yes
check "holder stop (second state dir)" env TPUFLEET_STATE_DIR="$state2" timeout 20 "$bin" holder stop
check "holder stop" holder_stops
check "emulator stop leaves no process, namespace, sshd or link of this run" stop_clean

echo "1..$n"
((failed == 0))
