#!/usr/bin/env bash
# End to end: `tpufleet exec` as a user drives it, against `tpufleet emulator` with real
# worker hosts (namespaces with a real sshd). Covers issue 5's "done means" for exec:
#   a. exec on all workers of four v4-32 nodes (16 workers) prints each worker's hostname
#      once, prefixed with its worker, and exits 0;
#   b. target forms (NODE:1-2 OTHER:0) and --group (one block listing all 16);
#   c. a command with quotes, $, ;, newlines, backslashes and * runs exactly as typed;
#   d. --json parses and has 16 workers, all ok;
#   e. --timeout ends the command on every worker and leaves nothing running there;
#   f. --fail-fast: the first worker that fails stops the others (their commands die);
#   g. a worker whose sshd host key changed without a recreate is refused with a clear
#      message, and the command does not run there;
#   h. a worker whose kept-open connection stopped answering (its sshd sessions frozen)
#      is reached again on a fresh connection after --connect-timeout, not waited on;
#   i. a killed worker is reported unreachable (or timed out) without hanging, the other
#      15 answer, and exec exits 1;
#   k. issue 11 (exec_e2e_issue11.sh): the login under sudo; ssh-hosts nodes beside it;
#   j. (exec_e2e_big_output.sh) a worker printing 200 MB without a newline (issue 10):
#      every byte arrives, in 64 KiB pieces, and the CLI and the holder each stay under
#      64 MiB resident, through the holder and in process; --group and --json keep 1 MiB
#      of it and say so;
#   and down --all plus emulator stop leave no process, namespace, sshd or link of this run.
# exec runs its jobs in the connection holder (warm connections between commands), as
# users get it; the killed worker is also tried with TPUFLEET_HOLDER=off (cold, in
# process).
# Prints "ok N - ..." or "not ok N - ..." per check and exits 1 if any failed.
# Usage: exec_e2e_test.sh path/to/tpufleet. Exit 77 (skipped) when not root or when a
# tool it needs is missing.
set -uo pipefail
source "$(dirname "$0")/e2e_lib.sh"
bin=$(realpath "$1")
e2e_require jq curl ssh ssh-keygen ssh-keyscan nsenter timeout ip pgrep /usr/bin/time
e2e_home exec
# As sudo leaves it: USER=root, SUDO_USER the person, whose name is the login (issue 11).
unset SUDO_UID
export USER=root SUDO_USER=tpfe2e
bg_pids=()
frozen=()  # sshd processes check h stopped, to continue at the end whatever happens

cleanup() {
  local p
  for p in "${bg_pids[@]}"; do end_ours "$p" KILL; done
  [[ ${#frozen[@]} -gt 0 ]] && kill -CONT "${frozen[@]}" 2>/dev/null
  [[ -n ${SSH_AGENT_PID:-} ]] && kill "$SSH_AGENT_PID" 2>/dev/null  # check k's
  e2e_end
}
trap cleanup EXIT
trap 'exit 143' TERM INT HUP  # so that a ctest timeout still cleans up

# tf_exec NAME ARGS...: `tpufleet exec ARGS...` with stdout, stderr and the exit status in
# $tmp/NAME.{out,err,rc} and how long it took (whole seconds) in $tmp/NAME.secs.
tf_exec() {
  local name=$1 start=$SECONDS rc
  shift
  tf exec "$@" >"$tmp/$name.out" 2>"$tmp/$name.err"
  rc=$?
  echo "$rc" >"$tmp/$name.rc"
  echo $((SECONDS - start)) >"$tmp/$name.secs"
  return 0
}
# shows NAME: its exit status, time and output, for a failed check.
shows() {
  echo "exit $(cat "$tmp/$1.rc") after $(cat "$tmp/$1.secs")s; stdout:"
  head -c 1500 "$tmp/$1.out"
  echo "stderr:"
  head -c 1500 "$tmp/$1.err"
}
# How many processes on the machine (workers' included: their PID namespaces are
# children of the machine's) have a command line matching the extended regex $1.
count_procs() { pgrep -fc "$1" || true; }

# The pid (in the machine's namespace) of the init of worker $2 of node $1: PID 1 of
# that worker's namespaces; killing it takes the whole worker down.
init_of() {
  local id
  id=$(api "v2/projects/$project/locations/$zone/nodes/$1" | jq -r .id)
  [[ -n $id && $id != null ]] || return 1
  pgrep -f "^tpufleet-emulator-worker --disk=$TPUFLEET_EMULATOR_DIR/[^ ]*nodes/$id/w$2 "
}
# on_worker NODE INDEX COMMAND...: runs COMMAND as root in that worker's mount namespace
# (its own /etc, /tmp, …); the network and processes stay the machine's.
on_worker() {
  local node=$1 i=$2 pid
  shift 2
  pid=$(init_of "$node" "$i") || { echo "no init for $node:$i"; return 1; }
  nsenter -t "$pid" -m -- "$@"
}
# The address, hostname and pinned key tpufleet has for worker $2 of node $1.
worker_field() {
  jq -r --arg n "$1" --argjson i "$2" \
    ".nodes[] | select(.node == \$n) | .workers[] | select(.index == \$i) | .$3" "$tmp/status.json"
}

track_hosts_begin  # e2e_lib.sh: what this run's emulator makes, checked at its end

# ---------------------------------------------------------------------------------
note "the emulator and a fleet of four v4-32 nodes (16 workers)"
check_emulator_starts

cat >"$tmp/fleet.yaml" <<EOF
fleet: ex
provider: emulator
nodes:
  - name: ex
    type: v4-32
    count: 4
    zones: [$zone]
EOF
nodes=(ex-0 ex-1 ex-2 ex-3)
up_fleet() {
  local start=$SECONDS
  tf up "$tmp/fleet.yaml" --timeout 3m >"$tmp/up.txt" 2>&1 || { cat "$tmp/up.txt"; return 1; }
  note "up took $((SECONDS - start))s"
}
check "up brings up four v4-32 nodes (exit 0)" up_fleet
remember_hosts
# "[NODE/wI] HOSTNAME" for every worker, sorted: what `exec all -- hostname` must print.
status_ok() {
  tf status --json >"$tmp/status.json" 2>"$tmp/status.err" || { cat "$tmp/status.err"; return 1; }
  jq -r '.nodes[] | .node as $n | .workers[] | "[\($n)/w\(.index)] \(.hostname)"' \
    "$tmp/status.json" | sort >"$tmp/want.all"
  [[ $(wc -l <"$tmp/want.all") == 16 && $(sort -u -k2 "$tmp/want.all" | wc -l) == 16 ]] ||
    { echo "status lists:"; cat "$tmp/want.all"; return 1; }
  ! grep -q '] null$\|] $' "$tmp/want.all" || { cat "$tmp/want.all"; return 1; }
}
check "status --json lists 16 workers with 16 distinct hostnames" status_ok

# ---------------------------------------------------------------------------------
note "a. exec all -- hostname"
exec_all_hostname() {
  tf_exec all all -- hostname
  rc_is all 0 || { shows all; return 1; }
  [[ $(wc -l <"$tmp/all.out") == 16 ]] || { shows all; return 1; }
  sort "$tmp/all.out" | diff "$tmp/want.all" - || { shows all; return 1; }
  [[ ! -s $tmp/all.err ]] || { shows all; return 1; }
  note "exec all took $(cat "$tmp/all.secs")s"
}
check "exec all -- hostname: exit 0, 16 lines, each worker's [node/wN] hostname exactly once" \
  exec_all_hostname
ssh_agrees() {
  # The same workers through OpenSSH and tpufleet's SSH config, as a cross-check that
  # the hostnames came from the workers themselves.
  local i host
  for i in 0 3; do
    host=$(timeout 30 ssh -F "$state/ssh/config" -o BatchMode=yes -o ConnectTimeout=5 \
      -o LogLevel=ERROR "ex-2-w$i" hostname) || return 1
    grep -qxF "[ex-2/w$i] $host" "$tmp/all.out" || { echo "ex-2-w$i says $host"; return 1; }
  done
}
check "ssh -F STATE/ssh/config ex-2-w0/w3 hostname agrees with exec" ssh_agrees

# ---------------------------------------------------------------------------------
note "b. target forms and --group"
exec_some() {
  tf_exec some ex-1:1-2 ex-3:0 -- hostname
  rc_is some 0 || { shows some; return 1; }
  grep -E '^\[(ex-1/w[12]|ex-3/w0)\] ' "$tmp/want.all" >"$tmp/want.some"
  sort "$tmp/some.out" | diff "$tmp/want.some" - || { shows some; return 1; }
}
check "exec ex-1:1-2 ex-3:0 -- hostname: exactly those 3 workers" exec_some
exec_selector_node() {
  tf_exec node ex-2 -- hostname
  rc_is node 0 || { shows node; return 1; }
  grep '^\[ex-2/' "$tmp/want.all" >"$tmp/want.node"
  sort "$tmp/node.out" | diff "$tmp/want.node" - || { shows node; return 1; }
}
check "exec ex-2 -- hostname: its 4 workers" exec_selector_node
exec_group() {
  local title="ex-0/w[0-3], ex-1/w[0-3], ex-2/w[0-3], ex-3/w[0-3] (16)"
  tf_exec group all --group -- echo same
  rc_is group 0 || { shows group; return 1; }
  printf '%s\n%s\n%s\nsame\n' "${title//?/-}" "$title" "${title//?/-}" | diff - "$tmp/group.out" ||
    { shows group; return 1; }
}
check "exec all --group -- echo same: one block listing all 16 workers, (16)" exec_group
source "$(dirname "$0")/exec_e2e_issue11.sh"  # k. issue 11

# ---------------------------------------------------------------------------------
note "c. quoting"
exec_quoting() {
  local words=('a b' '$HOME' 'x;y' "it's" $'l1\nl2' '\\' '*' '`id`' '$(id)' '' '-n' '--')
  tf_exec quote ex-0:0 -- printf '%s|\n' "${words[@]}"
  rc_is quote 0 || { shows quote; return 1; }
  printf '%s|\n' "${words[@]}" | sed 's|^|[ex-0/w0] |' | diff - "$tmp/quote.out" ||
    { shows quote; return 1; }
}
check "exec -- printf '%s|\\n' with quotes, \$, ;, newlines, \\\\, * prints exactly the words" \
  exec_quoting
exec_shell_when_asked() {
  tf_exec shell ex-0:1 -- bash -c 'echo "$1" | tr a-z A-Z; exit 3' _ 'a;b'
  rc_is shell 1 || { shows shell; return 1; }
  [[ $(cat "$tmp/shell.out") == "[ex-0/w1] A;B" ]] || { shows shell; return 1; }
  grep -qxF "  ex-0/w1: exit 3" "$tmp/shell.err" || { shows shell; return 1; }
}
check "exec -- bash -c SCRIPT _ ARG: a shell when asked for; exit 3 is exit 1 and named" \
  exec_shell_when_asked

# ---------------------------------------------------------------------------------
note "d. --json"
exec_json() {
  tf_exec json all --json -- hostname
  rc_is json 0 || { shows json; return 1; }
  jq -e '(.workers | length) == 16 and all(.workers[]; .ok == true and .exit_code == 0)
         and .ok == true and .failed == 0' "$tmp/json.out" >/dev/null || { shows json; return 1; }
  jq -r '.workers[] | "[\(.worker)] \(.stdout | rtrimstr("\n"))"' "$tmp/json.out" | sort |
    diff "$tmp/want.all" - || { shows json; return 1; }
}
check "exec all --json -- hostname: 16 workers, ok true, stdout each worker's hostname" exec_json

source "$(dirname "$0")/exec_e2e_big_output.sh"  # j. 200 MB without a newline

# ---------------------------------------------------------------------------------
note "e. --timeout"
# A marker no other process has: the sleeps of this run only.
mark_t="119.$$1"
# Sets seen to how many sleep $mark_t run now; true once some do or exec $pid ended.
saw_sleeps() {
  seen=$(count_procs "^sleep $mark_t\$")
  [[ $seen -ge 1 ]] || ! kill -0 "$pid" 2>/dev/null
}
exec_timeout() {
  local pid seen
  tf_exec timeout all --timeout 2s -- sleep "$mark_t" &
  pid=$!
  bg_pids+=("$pid")
  # The sleeps really ran on the workers, and this machine sees them (so that the check
  # that none is left afterwards is not blind).
  seen=0
  wait_for 60 saw_sleeps
  wait "$pid"
  [[ $seen -ge 1 ]] || { echo "never saw a sleep $mark_t on the machine"; shows timeout; return 1; }
  note "$seen workers were running sleep $mark_t"
  rc_is timeout 1 || { shows timeout; return 1; }
  (($(cat "$tmp/timeout.secs") < 60)) || { shows timeout; return 1; }
  [[ $(grep -c ': timeout: still running after 2s$' "$tmp/timeout.err") == 16 ]] ||
    { shows timeout; return 1; }
  grep -qxF "tpufleet: 16 of 16 workers failed:" "$tmp/timeout.err" || { shows timeout; return 1; }
}
check "exec all --timeout 2s -- sleep: exit 1, every worker 'timeout' in the summary" exec_timeout
no_procs() { [[ $(count_procs "$1") == 0 ]]; }
no_sleep_left() {
  wait_for 10 no_procs "$1" || { echo "still running:"; pgrep -af "$1"; return 1; }
}
check "after --timeout no sleep $mark_t is left on any worker" no_sleep_left "^sleep $mark_t\$"

# ---------------------------------------------------------------------------------
note "e2. Ctrl-C (issue 11: exec's interrupt is an object its run owns, not a global)"
mark_c="419.$$3"
exec_ctrl_c() {
  local pid tf_exec_pid go
  tf_exec ctrlc all -- sleep "$mark_c" &
  pid=$!
  bg_pids+=("$pid")
  wait_for 90 eval '[[ $(count_procs "^sleep $mark_c\$") == 16 ]]' ||
    { echo "not all 16 workers were sleeping"; return 1; }
  tf_exec_pid=$(pgrep -f -x "$bin exec all -- sleep $mark_c") || { echo "no exec process"; return 1; }
  go=$SECONDS
  kill -INT "$tf_exec_pid"
  wait "$pid"
  note "exec ended $((SECONDS - go))s after SIGINT"
  rc_is ctrlc 130 || { shows ctrlc; return 1; }
  ((SECONDS - go < 15)) || { shows ctrlc; return 1; }
}
check "exec all -- sleep, then SIGINT: exit 130 at once" exec_ctrl_c
check "after SIGINT no sleep $mark_c is left on any worker" no_sleep_left "^sleep $mark_c\$"

# ---------------------------------------------------------------------------------
note "f. --fail-fast"
# ex-1/w1 fails (exit 7) once the test says so (a file on that worker); by then every
# other worker is in its sleep, which --fail-fast must end.
mark_f="299.$$2"
fail_host=$(worker_field ex-1 1 hostname)
exec_fail_fast() {
  local pid sleeping go
  on_worker ex-1 1 rm -f /tmp/exec-e2e-go || return 1
  tf_exec ff all --fail-fast -- bash -c \
    'if [ "$(hostname)" = "$1" ]; then while [ ! -e /tmp/exec-e2e-go ]; do sleep 0.1; done; exit 7; fi; sleep "$2"' \
    _ "$fail_host" "$mark_f" &
  pid=$!
  bg_pids+=("$pid")
  wait_for 90 eval '[[ $(count_procs "^sleep $mark_f\$") == 15 ]]'
  sleeping=$(count_procs "^sleep $mark_f\$")
  go=$SECONDS
  on_worker ex-1 1 touch /tmp/exec-e2e-go || return 1
  wait "$pid"
  note "15 sleeping: $sleeping; exec ended $((SECONDS - go))s after ex-1/w1 was told to fail"
  [[ $sleeping == 15 ]] || { echo "only $sleeping workers were sleeping"; shows ff; return 1; }
  rc_is ff 1 || { shows ff; return 1; }
  ((SECONDS - go < 30)) || { shows ff; return 1; }
  grep -qxF "  ex-1/w1: exit 7" "$tmp/ff.err" || { shows ff; return 1; }
  grep -qxF "  ex-0/w[0-3], ex-1/w[0,2-3], ex-2/w[0-3], ex-3/w[0-3]: stopped: ex-1/w1 failed (--fail-fast)" \
    "$tmp/ff.err" || { shows ff; return 1; }
  grep -qxF "tpufleet: 16 of 16 workers failed:" "$tmp/ff.err" || { shows ff; return 1; }
}
check "exec all --fail-fast: ex-1/w1's exit 7 stops the 15 others at once (exit 1, summary)" \
  exec_fail_fast
check "after --fail-fast no sleep $mark_f is left on any worker" no_sleep_left "^sleep $mark_f\$"

# ---------------------------------------------------------------------------------
note "g. a host key changed without a recreate (ex-3/w2)"
# On the worker itself: a new /etc/ssh host key, and sshd told to reload (SIGHUP re-execs
# it, reading its keys again). The old key is kept to put back afterwards.
hk_node=ex-3
hk_i=2
hk_addr=$(worker_field $hk_node $hk_i address)
# The key tpufleet pinned for it: its line in STATE/ssh/known_hosts.
hk_pinned=$(awk -v a="$hk_addr" '{
  n = split($1, h, ",")
  for (i = 1; i <= n; i++) if (h[i] == a) { print $2 " " $3; exit }
}' "$state/ssh/known_hosts")
scanned_key() { ssh-keyscan -T 5 -t ed25519 "$hk_addr" 2>/dev/null | cut -d' ' -f2,3; }
sshd_of() { pgrep -P "$(init_of $hk_node $hk_i)" -x sshd; }
change_host_key() {
  local sshd sessions
  [[ -n $hk_addr && $hk_pinned == ssh-ed25519\ * ]] || { echo "no address or pinned key"; return 1; }
  [[ $(scanned_key) == "$hk_pinned" ]] || { echo "the worker's key is not the pinned one"; return 1; }
  on_worker $hk_node $hk_i sh -c '
    set -e
    cp -p /etc/ssh/ssh_host_ed25519_key /etc/ssh/exec-e2e-old-key
    cp -p /etc/ssh/ssh_host_ed25519_key.pub /etc/ssh/exec-e2e-old-key.pub
    rm -f /etc/ssh/ssh_host_ed25519_key /etc/ssh/ssh_host_ed25519_key.pub
    ssh-keygen -q -t ed25519 -N "" -C changed -f /etc/ssh/ssh_host_ed25519_key' || return 1
  sshd=$(sshd_of) || { echo "no sshd on the worker"; return 1; }
  kill -HUP "$sshd"
  wait_for 20 eval '[[ -n $(scanned_key) && $(scanned_key) != "$hk_pinned" ]]' ||
    { echo "the worker still offers the old key"; return 1; }
  # Its sessions end too, as when a VM is reinstalled: the holder's warm connection to it
  # (made with the old key) must not carry the next command there.
  sessions=$(pgrep -P "$sshd" -d ' ')
  [[ -n $sessions ]] && note "ending the worker's SSH sessions: $sessions" && kill $sessions
  return 0
}
check "the sshd of $hk_node/w$hk_i now offers a new host key (ssh-keyscan)" change_host_key
exec_refused() {
  tf_exec hk $hk_node:$hk_i $hk_node:0 -- sh -c 'echo RAN; touch /tmp/exec-e2e-ran'
  rc_is hk 1 || { shows hk; return 1; }
  grep -qxF "[$hk_node/w0] RAN" "$tmp/hk.out" || { shows hk; return 1; }
  ! grep -qF "[$hk_node/w$hk_i]" "$tmp/hk.out" || { shows hk; return 1; }
  grep -F "  $hk_node/w$hk_i: host-key-mismatch: " "$tmp/hk.err" | grep -F 'host key' |
    grep -qF 'tpufleet up' || { shows hk; return 1; }
  grep -qxF "tpufleet: 1 of 2 workers failed:" "$tmp/hk.err" || { shows hk; return 1; }
  on_worker $hk_node $hk_i test ! -e /tmp/exec-e2e-ran || { echo "the command ran there"; return 1; }
  on_worker $hk_node 0 test -e /tmp/exec-e2e-ran || { echo "the marker check is blind"; return 1; }
}
check "exec to it: exit 1, host-key-mismatch naming the host key and \`tpufleet up\`, not run there" \
  exec_refused
restore_host_key() {
  on_worker $hk_node $hk_i sh -c '
    set -e
    mv /etc/ssh/exec-e2e-old-key /etc/ssh/ssh_host_ed25519_key
    mv /etc/ssh/exec-e2e-old-key.pub /etc/ssh/ssh_host_ed25519_key.pub' || return 1
  kill -HUP "$(sshd_of)" || return 1
  wait_for 20 eval '[[ $(scanned_key) == "$hk_pinned" ]]' || { echo "old key not back"; return 1; }
  tf_exec hk2 $hk_node:$hk_i -- hostname
  rc_is hk2 0 || { shows hk2; return 1; }
}
check "with the old key back, exec to $hk_node/w$hk_i works again" restore_host_key

# ---------------------------------------------------------------------------------
note "h. a kept-open connection that stops answering (ex-0/w1)"
# The holder keeps a connection to every worker since the first exec. Freezing the sshd
# processes behind it (SIGSTOP; the kernel still acknowledges what arrives) makes it
# silent without closing it, as a hung or cut-off worker would.
exec_past_frozen() {
  local listener p
  # --fail-fast and --timeout closed the holder's connections they cancelled: make one.
  tf exec ex-0:1 -- true >/dev/null 2>&1 || { echo "exec ex-0:1 -- true failed"; return 1; }
  listener=$(pgrep -P "$(init_of ex-0 1)" -x sshd) || { echo "no sshd on ex-0/w1"; return 1; }
  for p in $(pgrep -P "$listener"); do frozen+=("$p" $(pgrep -P "$p")); done
  [[ ${#frozen[@]} -gt 0 ]] || { echo "no SSH session on ex-0/w1 to freeze"; return 1; }
  note "freezing the sshd sessions of ex-0/w1: ${frozen[*]}"
  kill -STOP "${frozen[@]}"
  timeout 60 "$bin" exec ex-0:1 ex-0:2 --connect-timeout 3s -- hostname \
    >"$tmp/frozen.out" 2>"$tmp/frozen.err" &
  tf_pid=$!
  local start=$SECONDS rc
  wait "$tf_pid"
  rc=$?
  echo "$rc" >"$tmp/frozen.rc"
  echo $((SECONDS - start)) >"$tmp/frozen.secs"
  kill -CONT "${frozen[@]}"
  note "exec past the frozen connection took $((SECONDS - start))s"
  rc_is frozen 0 || { shows frozen; return 1; }
  grep -E '^\[ex-0/w[12]\] ' "$tmp/want.all" | diff - <(sort "$tmp/frozen.out") ||
    { shows frozen; return 1; }
  (($(cat "$tmp/frozen.secs") < 20)) || { shows frozen; return 1; }
}
check "exec ex-0:1 ex-0:2 --connect-timeout 3s with ex-0/w1's kept connection frozen: exit 0, both answer" \
  exec_past_frozen

# ---------------------------------------------------------------------------------
note "i. a killed worker (ex-2/w3)"
# No process is left in network namespace $1 (an inode as readlink shows it).
netns_empty() {
  local p
  for p in /proc/[0-9]*; do
    [[ $(readlink "$p/ns/net" 2>/dev/null) == "$1" ]] && return 1
  done
  return 0
}
kill_worker() {
  local pid ns
  pid=$(init_of ex-2 3) || { echo "no init for ex-2/w3"; return 1; }
  ns=$(readlink "/proc/$pid/ns/net") || return 1
  kill -9 "$pid"
  # Its processes die with it (the init stays a zombie until the emulator reaps it).
  wait_for 10 netns_empty "$ns" || { echo "processes left in the worker's namespace"; return 1; }
}
check "kill -9 the init of ex-2/w3 (the worker is gone)" kill_worker
# exec_with_dead_worker NAME [ENV...]: exec all with ex-2/w3 dead, in env ENV.
exec_with_dead_worker() {
  local name=$1 start=$SECONDS rc
  shift
  env "$@" timeout 60 "$bin" exec all --connect-timeout 5s -- hostname \
    >"$tmp/$name.out" 2>"$tmp/$name.err" &
  tf_pid=$!
  wait "$tf_pid"
  rc=$?
  echo "$rc" >"$tmp/$name.rc"
  echo $((SECONDS - start)) >"$tmp/$name.secs"
  note "exec all with a dead worker ($*) took $((SECONDS - start))s"
  [[ $rc != 124 ]] || { echo "exec still ran after 60 s"; shows "$name"; return 1; }
  rc_is "$name" 1 || { shows "$name"; return 1; }
  grep -vF '[ex-2/w3]' "$tmp/want.all" >"$tmp/want.dead"
  sort "$tmp/$name.out" | diff "$tmp/want.dead" - || { shows "$name"; return 1; }
  grep -qxF "tpufleet: 1 of 16 workers failed:" "$tmp/$name.err" || { shows "$name"; return 1; }
  grep -qE '^  ex-2/w3: (unreachable|timeout): ' "$tmp/$name.err" || { shows "$name"; return 1; }
}
check "exec all with ex-2/w3 dead (holder): ends, exit 1, 15 hostnames, ex-2/w3 unreachable or timeout" \
  exec_with_dead_worker dead
check "the same with TPUFLEET_HOLDER=off (in process)" \
  exec_with_dead_worker dead-cold TPUFLEET_HOLDER=off

# ---------------------------------------------------------------------------------
note "the end: down --all, emulator stop, nothing of this run is left"
down_all() {
  tf down --all --yes >"$tmp/down.txt" 2>&1 || { cat "$tmp/down.txt"; return 1; }
  tf status --json >"$tmp/status.json" && jq -e '.nodes == []' "$tmp/status.json" >/dev/null ||
    { cat "$tmp/status.json"; return 1; }
}
check "down --all --yes exits 0 and leaves no node" down_all
check "holder stop ends the connection holder exec started" holder_stops
check "emulator stop leaves no process, namespace, sshd, link or state dir of this run" stop_clean "sleep ($mark_t|$mark_f)"
note "$(wc -l <"$tmp/netns") worker namespaces and $(wc -l <"$tmp/sshd") sshd were checked"

echo "# $n checks, $failed failed"
((failed == 0))
