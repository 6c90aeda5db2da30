#!/usr/bin/env bash
# End to end, issue 16's collaborators running jobs through the team server: an emulated
# fleet of a v4-16 `pod` (2 workers) and a v4-8 `solo`; `users add milo --nodes pod`,
# `users add ada` (members) and `users add vic --role viewer`; `tpufleet serve` over TLS;
# each person's own token. Then, through `tpufleet --server URL`:
#   1. milo runs a job on pod with --detach: it returns at once with the job's id, the
#      job runs as milo on both workers (ps over ssh, as root through tpufleet's login)
#      and `jobs` says "milo via HOST" started it; `logs` shows its output; `logs -f`
#      streams it, and a client's SIGTERM (as Ctrl-C) ends it with 130, serve's audit
#      saying the command ended `exit 130`; top's live view is refused in one line, `top --once`
#      shows pod and not solo; `run solo` is "no node 'solo'", as a node that is nowhere;
#   2. ada cannot see it (`logs`, `cancel`: "no job", as a job that is nowhere); vic, the
#      viewer, can neither run nor cancel (one line saying why);
#   3. the operator (serve's token) sees its logs and both nodes in top, runs a job of its
#      own on solo (as tpufleet's login) and cancels it;
#   4. milo cancels his job: nothing of his runs on the workers and `jobs` shows it
#      cancelled;
#   5. milo's `logs -f` of a new job shows a line the job prints after logs -f started
#      (the job waits for a file the test then makes), and ends when the job ends;
#   6. `cost --by job`: each of milo's jobs has a share of pod's hours that no longer
#      grows, and their sum is milo's line by person and all he sees himself.
# Everything (serve, the fleet, the emulator, $tmp) is removed on exit, even on failure.
# Prints "ok N - ..." or "not ok N - ..." per check and exits 1 if any failed.
# Usage: serve_jobs_e2e.sh path/to/tpufleet. Exit 77 (skipped) when not root, when a tool
# it needs is missing, or when no tpufleet-agent was built next to tpufleet.
set -uo pipefail
here=$(dirname "$0")
source "$here/e2e_lib.sh"
bin=$(realpath "$1")
e2e_require jq curl ssh ssh-keygen timeout ip pgrep python3
e2e_require_agent "$bin"
e2e_home served

serve_e2e_traps

track_hosts_begin
check_emulator_starts
cat >"$tmp/fleet.yaml" <<EOF
fleet: served
provider: emulator
nodes:
  - name: pod
    type: v4-16
    zones: [$zone]
  - name: solo
    type: v4-8
    zones: [$zone]
EOF
up_fleet() { up_spec "$tmp/fleet.yaml"; }
check "up brings up pod (v4-16) and solo (v4-8)" up_fleet
remember_hosts

add_people() {
  local who
  for who in milo ada vic; do
    ssh-keygen -q -t ed25519 -N '' -C "$who@laptop" -f "$tmp/$who" || return 1
  done
  tf_run add-milo users add milo --key "$tmp/milo.pub" --nodes pod --spec "$tmp/fleet.yaml"
  tf_run add-ada users add ada --key "$tmp/ada.pub" --spec "$tmp/fleet.yaml"
  tf_run add-vic users add vic --key "$tmp/vic.pub" --role viewer --spec "$tmp/fleet.yaml"
  for who in milo ada vic; do
    rc_is "add-$who" 0 || { shows "add-$who"; return 1; }
  done
}
check "users add milo --nodes pod, ada, vic --role viewer" add_people

start_serve() { serve_tls "$tmp/fleet.yaml" serve.log; }
check "serve starts with TLS" start_serve
url=${url:-https://127.0.0.1:1}
tokens() { person_token milo && person_token ada && person_token vic; }
check "tpufleet invite gives milo, ada and vic each a token" tokens
# as WHO NAME ARGS…: `tpufleet --server $url ARGS…` with WHO's token (operator: serve's),
# kept as tf_run keeps it.
as() {
  local who=$1 name=$2 file
  shift 2
  file=$tmp/$who.token
  [[ $who == operator ]] && file=$state/serve/token
  TPUFLEET_TOKEN_FILE=$file tf_run "$name" --server "$url" "$@"
}
# on_pod COMMAND: COMMAND as root on each of pod's workers, through tpufleet's login.
on_pod() { tf exec pod -- sudo -n bash -c "$1"; }

# ---- 1. milo's job
job=""
milo_runs() {
  as milo run run pod --detach --name milo-job -- bash -c 'echo hello from $(id -un) on $TPUFLEET_RANK; sleep 600'
  rc_is run 0 && [[ $(wc -l <"$tmp/run.out") == 1 ]] || { shows run; return 1; }
  job=$(cat "$tmp/run.out")
  grep -q "follow it with: tpufleet logs -f $job" "$tmp/run.err" || { shows run; return 1; }
}
check "milo runs a job on pod through the server with --detach: its id, at once" milo_runs
runs_as_milo() {
  local out
  sleeping() { out=$(on_pod 'ps -o user= -C sleep' 2>&1) && [[ $(grep -c '^\[pod/w[01]\] milo$' <<<"$out") == 2 ]]; }
  wait_for 30 sleeping || { echo "$out"; return 1; }
  ! grep -q '^\[pod/w[01]\] \(root\|tpufleet\)$' <<<"$out" || { echo "$out"; return 1; }
}
check "the job runs as milo on both of pod's workers (ps -o user, as root)" runs_as_milo
started_by() {
  as operator jobs jobs --json
  rc_is jobs 0 || { shows jobs; return 1; }
  [[ $(jq -r --arg id "$job" '.jobs[] | select(.id == $id) | .started_by' "$tmp/jobs.out") == "milo via $(hostname)" ]] ||
    { shows jobs; return 1; }
}
check "jobs says milo via $(hostname) started it" started_by
milo_logs() {
  shown() {
    as milo logs logs "$job"
    # (worker 0's job has a terminal, for attach: its lines end in a CR)
    rc_is logs 0 && grep -q "^pod/w0 | hello from milo on 0" "$tmp/logs.out" &&
      grep -q "^pod/w1 | hello from milo on 1$" "$tmp/logs.out"
  }
  wait_for 30 shown || { shows logs; return 1; }
}
check "milo's logs show the job's output from both workers" milo_logs
# follow_bg NAME JOB: milo's `tpufleet --server $url logs -f JOB` in the background, kept
# as tf_run keeps it; its pid (timeout's, which passes a signal on) in follow_pid.
follow_bg() {
  TPUFLEET_TOKEN_FILE=$tmp/milo.token timeout 180 "$bin" --server "$url" logs -f "$2" \
    >"$tmp/$1.out" 2>"$tmp/$1.err" &
  follow_pid=$!
}
# follow_rc NAME: waits for the background logs -f and keeps its exit status.
follow_rc() { wait "$follow_pid"; echo $? >"$tmp/$1.rc"; }
follow_interrupted() {
  follow_bg stopped "$job"
  saw_hello() { grep -q "hello from milo" "$tmp/stopped.out"; }
  wait_for 60 saw_hello || { kill "$follow_pid"; follow_rc stopped; shows stopped; return 1; }
  kill -TERM "$follow_pid"
  follow_rc stopped
  rc_is stopped 130 && grep -q "interrupted: the connection to the team server is closed" "$tmp/stopped.err" ||
    { shows stopped; return 1; }
  audited() {
    as operator audit-f audit --json
    jq -e --arg a "logs -f $job" '[.[] | select(.person == "milo" and .action == $a and .outcome == "exit 130")] | length == 1' \
      "$tmp/audit-f.out" >/dev/null
  }
  wait_for 30 audited || { shows audit-f; return 1; }
}
check "a client's Ctrl-C (SIGTERM) ends its logs -f with 130, and serve's command with it (audited exit 130)" follow_interrupted
live_top_refused() {
  as milo live top
  rc_is live 2 && grep -q "top's live view does not go through a team server" "$tmp/live.err" ||
    { shows live; return 1; }
}
check "top's live view: one line, saying what works instead" live_top_refused
milo_top() {
  as milo top top --once
  grep -q '^pod ' "$tmp/top.out" && ! grep -q '^solo ' "$tmp/top.out" || { shows top; return 1; }
}
check "milo's top --once shows pod, not solo" milo_top
no_solo() {
  as milo solo run solo -- true
  as milo nowhere run nosuch -- true
  rc_is solo 1 && grep -q "^tpufleet: error: no node 'solo' in tpufleet's state" "$tmp/solo.err" ||
    { shows solo; return 1; }
  [[ $(sed 's/nosuch/solo/' "$tmp/nowhere.err") == "$(cat "$tmp/solo.err")" ]] || { shows nowhere; return 1; }
}
check "milo's run on solo: no node 'solo', as for a node that is nowhere" no_solo

# ---- 2. ada and vic
ada_sees_nothing() {
  local what
  for what in logs cancel; do
    as ada "ada-$what" "$what" "$job"
    rc_is "ada-$what" 1 && grep -q "no job" "$tmp/ada-$what.err" || { shows "ada-$what"; return 1; }
  done
  as ada ada-none logs jnosuchj
  [[ $(sed 's/jnosuchj/'"$job"'/' "$tmp/ada-none.err") == "$(cat "$tmp/ada-logs.err")" ]] ||
    { shows ada-none; shows ada-logs; return 1; }
}
check "ada's logs and cancel of milo's job: no job, as for one that is nowhere" ada_sees_nothing
viewer_refused() {
  as vic vic-run run pod -- true
  rc_is vic-run 1 && [[ $(wc -l <"$tmp/vic-run.err") == 1 ]] &&
    grep -q "vic is a viewer of fleet served: a viewer may not start jobs" "$tmp/vic-run.err" ||
    { shows vic-run; return 1; }
  as vic vic-cancel cancel "$job"
  rc_is vic-cancel 1 && [[ $(wc -l <"$tmp/vic-cancel.err") == 1 ]] &&
    grep -q "vic is a viewer: a viewer may not cancel jobs" "$tmp/vic-cancel.err" ||
    { shows vic-cancel; return 1; }
}
check "vic, a viewer, can neither run nor cancel: one line each" viewer_refused
still_running() {
  on_pod 'ps -o user= -C sleep' >"$tmp/ps.txt" 2>&1
  [[ $(grep -c '^\[pod/w[01]\] milo$' "$tmp/ps.txt") == 2 ]] || { cat "$tmp/ps.txt"; return 1; }
}
check "milo's job still runs on both workers" still_running

# ---- 3. the operator
operator_all() {
  as operator op-logs logs "$job"
  rc_is op-logs 0 && grep -q "hello from milo" "$tmp/op-logs.out" || { shows op-logs; return 1; }
  as operator op-top top --once
  grep -q '^pod ' "$tmp/op-top.out" && grep -q '^solo ' "$tmp/op-top.out" || { shows op-top; return 1; }
  as operator op-run run solo --detach --name op-job -- sleep 600
  rc_is op-run 0 || { shows op-run; return 1; }
  as operator op-cancel cancel op-job
  rc_is op-cancel 0 && grep -q "cancelled" "$tmp/op-cancel.out" || { shows op-cancel; return 1; }
}
check "the operator sees milo's logs and both nodes, runs a job on solo and cancels it" operator_all

# ---- 4. milo cancels
milo_cancels() {
  as milo cancel cancel "$job"
  rc_is cancel 0 || { shows cancel; return 1; }
  as milo after jobs --json
  [[ $(jq -r --arg id "$job" '.jobs[] | select(.id == $id) | .state' "$tmp/after.out") == cancelled ]] ||
    { shows after; return 1; }
  on_pod 'pgrep -u milo >/dev/null && echo still || echo none' >"$tmp/left.txt" 2>&1
  ! grep -q still "$tmp/left.txt" || { cat "$tmp/left.txt"; return 1; }
}
check "milo cancels his job: nothing of his runs, and jobs shows it cancelled" milo_cancels

# ---- 5. logs -f streams
gated=""
follows_live() {
  # The job prints `one`, waits for a file on its worker, then prints `two` and ends
  # (after milo's first job: a job waits for the TPU while another holds it).
  as milo gated run pod --detach --name gated -- bash -c \
    'echo one; while [ ! -e /tmp/tpufleet-e2e-release ]; do sleep 0.2; done; echo two'
  rc_is gated 0 || { shows gated; return 1; }
  gated=$(cat "$tmp/gated.out")
  follow_bg follow "$gated"
  saw_one() { grep -q "^pod/w0 | one" "$tmp/follow.out"; }
  wait_for 60 saw_one || { follow_rc follow; shows follow; return 1; }
  ! grep -q "| two" "$tmp/follow.out" || { shows follow; return 1; }
  on_pod 'touch /tmp/tpufleet-e2e-release' >/dev/null 2>&1 || return 1
  follow_rc follow
  rc_is follow 0 && grep -q "^pod/w0 | two" "$tmp/follow.out" && grep -q "^pod/w1 | two" "$tmp/follow.out" &&
    grep -q "tpufleet: job $gated succeeded in" "$tmp/follow.err" || { shows follow; return 1; }
}
check "logs -f through the server shows a line the job prints after it started, and ends when the job ends" follows_live

# ---- 6. where the money went: milo's jobs' shares of pod's hours are his
job_costs() {
  # Listing ends the runs of the jobs that ended; both of milo's have.
  as milo listed jobs
  rc_is listed 0 || { shows listed; return 1; }
  as operator op-by-job cost --by job --json
  as operator op-by-person cost --by person --json
  as milo milo-by-job cost --by job --json
  rc_is op-by-job 0 && rc_is op-by-person 0 && rc_is milo-by-job 0 ||
    { shows op-by-job; shows op-by-person; shows milo-by-job; return 1; }
  local jobs_sum person_usd own_sum
  # Each of milo's jobs has a line of its own that spent something and bills no more.
  jobs_sum=$(jq --arg a "$job" --arg b "$gated" '[.lines[] | select(.job | endswith("(" + $a + ")")
    or endswith("(" + $b + ")")) | select(.usd > 0 and .usd_per_hour == 0) | .usd] |
    if length == 2 then add else empty end' "$tmp/op-by-job.out")
  person_usd=$(jq '.lines[] | select(.person == "milo") | .usd' "$tmp/op-by-person.out")
  own_sum=$(jq 'if all(.lines[]; .job != "") then .usd else empty end' "$tmp/milo-by-job.out")
  echo "milo's jobs: $jobs_sum by job, $person_usd by person, $own_sum as he sees it"
  [[ -n $jobs_sum && -n $person_usd && -n $own_sum ]] ||
    { shows op-by-job; shows op-by-person; shows milo-by-job; return 1; }
  python3 -c 'import sys; a, b, c = map(float, sys.argv[1:]); sys.exit(not (abs(a - b) < 1e-6 and abs(a - c) < 1e-6))' \
    "$jobs_sum" "$person_usd" "$own_sum"
}
check "cost: milo's jobs each have a share of pod's hours, and by job, by person and as milo sees it they add up the same" job_costs

ends() {
  stop_serve || return 1
  tf down --all --yes >"$tmp/down.txt" 2>&1 || { cat "$tmp/down.txt"; return 1; }
}
check "serve stops on SIGTERM, and down removes the fleet" ends

echo "1..$n"
[[ $failed -eq 0 ]]
