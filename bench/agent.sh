#!/usr/bin/env bash
# The node agent's budget (issue 12): under 20 MiB resident and under 1 % of a core, idle
# and while a job prints 100 lines a second.
#
# On the local emulator, a real `tpufleet up` of one single-host node (a v4-8: one worker)
# installs the agent as it does everywhere: /usr/local/bin/tpufleet-agent, run as the
# worker's service (`supervise`, which runs `serve`; the emulator's workers have no
# systemd). Then, for SECONDS each (after a few seconds to settle):
#   a. idle: a job that prints nothing (`sleep`) is running;
#   b. a job printing 100 lines a second (a bash loop that catches up on the clock, so the
#      rate holds whatever the scheduling), started by `tpufleet run --detach`;
#   c. the same job with one `tpufleet logs -f` following it from this machine.
# For each process of the agent on the worker — serve, the job's keeper (`tpufleet-agent
# keep ID`), supervise, and in c the `tpufleet-agent call` that carries the follower's
# stream — it reads /proc/PID/stat (utime + stime over the window, as % of one core) and
# /proc/PID/status (VmRSS sampled every second: its largest value; VmHWM at the end, the
# peak over the process's life). Every phase is checked: the processes are the same at
# the end as at the start (none restarted), the job ran throughout, and in b and c the
# job's rate, read from the line numbers it printed into its log on the worker, is
# 100 ± 5 lines a second; in c the follower received the lines of the window. A markdown
# table with the budget next to each number, and the commands, go to stdout; the exit
# status is 1 when a check failed (not when a budget is exceeded: that is a result).
#
# Needs root (the emulator's workers are network namespaces); without it, it skips.
# Only loopback (the emulator's API) and the workers' 198.18.0.0/15 addresses are used.
# Takes about 1 minute plus 3 x SECONDS.
#
# Usage: bench/agent.sh path/to/tpufleet [SECONDS]
#   SECONDS  length of each measured window, default 60
set -euo pipefail

# shellcheck source=bench/agent_lib.sh
source "$(dirname "$0")/agent_lib.sh"
bench_start agent "$1"
seconds=${2:-60}
follower=""
cleanup() {
  if [[ -n $follower ]]; then kill "$follower" 2>/dev/null; fi
  bench_end
}
trap cleanup EXIT
trap 'exit 130' INT TERM

cat >"$tmp/fleet.yaml" <<'YAML'
fleet: agentbench
provider: emulator
nodes:
  - name: ag
    type: v4-8
    zones: [us-central2-b]
YAML
say "starting the emulator, up of one v4-8 (one worker)"
"$bin" emulator start >/dev/null
"$bin" up "$tmp/fleet.yaml" --timeout 3m >"$tmp/up.log" 2>&1 || { cat "$tmp/up.log" >&2; exit 1; }
grep -q 'ag: agent .*installing on 1 worker' "$tmp/up.log" ||
  { say "up did not say it installed the agent:"; cat "$tmp/up.log" >&2; exit 1; }

# The worker's processes, seen from here: those in its network namespace.
init=$(pgrep -f "^tpufleet-emulator-worker --disk=$TPUFLEET_EMULATOR_DIR/" | head -1)
[[ -n $init ]] || { say "no worker of this emulator is running"; exit 1; }
netns=$(readlink "/proc/$init/ns/net")
# on_worker PATTERN: the pids (pgrep -f) on our worker.
on_worker() {
  local p
  for p in $(pgrep -f "$1"); do
    [[ $(readlink "/proc/$p/ns/net" 2>/dev/null) == "$netns" ]] && echo "$p"
  done
  return 0
}
agent_pid() {  # agent_pid ROLE [ARG]: the one tpufleet-agent ROLE on the worker
  local pids
  pids=$(on_worker "^(/usr/local/bin/)?tpufleet-agent $1${2:+ $2}( |\$)")
  [[ $(wc -w <<<"$pids") == 1 ]] || { say "want one tpufleet-agent $1 ${2:-}, found: ${pids:-none}"; return 1; }
  echo "$pids"
}
serve=$(agent_pid serve)
supervise=$(agent_pid supervise) || supervise=""

# The job's last line number in its log on the worker (the log is in the worker's mount
# namespace; worker 0's job runs on a terminal, so lines end in \r\n).
last_line() {
  nsenter -t "$serve" -m -- sh -c "tail -c 200 /var/lib/tpufleet-agent/jobs/$1/stdout.log" |
    tr -d '\r' | grep -o '^line [0-9]*' | tail -1 | cut -d' ' -f2
}

cat >"$tmp/measure.py" <<'PY'
# measure.py SECONDS LABEL=PID... : CPU and memory of each PID over SECONDS; JSON out.
import json, os, sys, time
seconds = float(sys.argv[1])
procs = [a.split("=", 1) for a in sys.argv[2:]]
hz = os.sysconf("SC_CLK_TCK")

def stat(pid):
    st = open(f"/proc/{pid}/stat").read()
    f = st[st.rindex(")") + 2:].split()
    return int(f[11]) + int(f[12]), int(f[19])  # utime + stime, starttime

def status(pid, key):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith(key + ":"):
            return int(line.split()[1])  # kB
    return 0

first = {pid: stat(pid) for _, pid in procs}
rss = {pid: 0 for _, pid in procs}
t0 = time.monotonic()
load0 = os.getloadavg()[0]
while True:
    for _, pid in procs:
        rss[pid] = max(rss[pid], status(pid, "VmRSS"))
    left = t0 + seconds - time.monotonic()
    if left <= 0:
        break
    time.sleep(min(1.0, left))
wall = time.monotonic() - t0
out = {"wall": wall, "load": [load0, os.getloadavg()[0]], "procs": []}
for label, pid in procs:
    ticks, start = stat(pid)
    if start != first[pid][1]:
        sys.exit(f"{label} (pid {pid}) was replaced during the window")
    out["procs"].append({"label": label, "pid": int(pid),
                         "cpu_pct": 100.0 * (ticks - first[pid][0]) / hz / wall,
                         "rss_kib": rss[pid], "rss_end_kib": status(pid, "VmRSS"),
                         "hwm_kib": status(pid, "VmHWM")})
print(json.dumps(out))
PY

results=$tmp/results.tsv
: >"$results"
# phase NAME LABEL=PID...: measures one window, records it.
phase() {
  local name=$1
  shift
  sleep 3  # let the job, the follower and the agent settle
  say "measuring '$name' for ${seconds}s"
  python3 "$tmp/measure.py" "$seconds" "$@" >"$tmp/phase.json" || { say "phase '$name' failed"; exit 1; }
  printf '%s\t%s\n' "$name" "$(cat "$tmp/phase.json")" >>"$results"
}
# start_job NAME COMMAND: `tpufleet run --detach` on the worker; prints the job's id.
start_job() {
  local out
  out=$("$bin" run --detach ag --name "$1" --no-accelerator -- bash -c "$2" 2>"$tmp/run.err") ||
    { cat "$tmp/run.err" >&2; return 1; }
  head -1 <<<"$out"
}
job_state() {
  "$bin" jobs --json | python3 -c 'import json,sys; print(next(j["state"] for j in json.load(sys.stdin)["jobs"] if j["id"] == sys.argv[1]))' "$1"
}
check_running() {
  local s
  s=$(job_state "$1")
  [[ $s == running ]] || { say "job $1 is $s, not running"; exit 1; }
}
checks=()

# ---- a. idle: a silent job.
SILENT='exec sleep 100000'
silent=$(start_job silent "$SILENT")
sleep 1
keeper=$(agent_pid keep "$silent")
phase "a. idle (a silent job running)" serve="$serve" keeper="$keeper" ${supervise:+supervise="$supervise"}
check_running "$silent"
"$bin" cancel "$silent" --grace 2s >/dev/null

# ---- b. a job printing 100 lines a second.
PRINTER='n=0; t0=${EPOCHREALTIME/./}; while :; do w=$(( (${EPOCHREALTIME/./} - t0) / 10000 )); while ((n < w)); do n=$((n + 1)); echo "line $n"; done; sleep 0.01; done'
printer=$(start_job printer "$PRINTER")
sleep 1
keeper=$(agent_pid keep "$printer")
rate() {  # rate NAME FROM TO: the job's lines per second between two last_line readings
  python3 -c 'import sys; n, a, b, s = sys.argv[1:]; r = (int(b) - int(a)) / float(s)
print(f"{r:.1f}"); sys.exit(0 if abs(r - 100) <= 5 else 1)' "$1" "$2" "$3" "$4"
}
from=$(last_line "$printer")
t0=$(date +%s.%N)
phase "b. a job printing 100 lines/s" serve="$serve" keeper="$keeper" ${supervise:+supervise="$supervise"}
to=$(last_line "$printer")
span=$(python3 -c "import time; print(time.time() - $t0)")
if r=$(rate b "$from" "$to" "$span"); then checks+=("b: the job printed $r lines/s (lines $from..$to)")
else checks+=("FAILED b: the job printed $r lines/s, not 100 ± 5 (lines $from..$to)"); fi
check_running "$printer"

# ---- c. the same, with one follower.
"$bin" logs -f "$printer" >"$tmp/follow.out" 2>"$tmp/follow.err" &
follower=$!
wait_call() {
  local _
  for _ in $(seq 1 100); do
    call=$(on_worker '^(/usr/local/bin/)?tpufleet-agent call( |$)') && [[ -n $call ]] && return 0
    sleep 0.1
  done
  say "no tpufleet-agent call on the worker for the follower"
  return 1
}
wait_call
[[ $(wc -w <<<"$call") == 1 ]] || { say "more than one call on the worker: $call"; exit 1; }
sleep 3
seen0=$(grep -c '| line ' "$tmp/follow.out" || true)
from=$(last_line "$printer")
t0=$(date +%s.%N)
phase "c. the same, with one logs -f follower" serve="$serve" keeper="$keeper" call="$call" \
  ${supervise:+supervise="$supervise"}
to=$(last_line "$printer")
span=$(python3 -c "import time; print(time.time() - $t0)")
sleep 1  # what the window printed reaches the follower
seen1=$(grep -c '| line ' "$tmp/follow.out" || true)
if r=$(rate c "$from" "$to" "$span"); then checks+=("c: the job printed $r lines/s (lines $from..$to)")
else checks+=("FAILED c: the job printed $r lines/s, not 100 ± 5 (lines $from..$to)"); fi
got=$((seen1 - seen0)) want=$((to - from))
if ((got >= want)); then checks+=("c: the follower received $got lines during the window (the job printed $want)")
else checks+=("FAILED c: the follower received $got lines during the window, the job printed $want"); fi
kill "$follower" 2>/dev/null
wait "$follower" 2>/dev/null || true
follower=""
check_running "$printer"
"$bin" cancel "$printer" --grace 2s >/dev/null

# ---- Report.
status=0
python3 - "$results" "$(nproc)" "$seconds" "$(uname -r)" "${checks[@]}" <<'PY' || status=$?
import json, sys
res, cores, seconds, kernel = sys.argv[1:5]
checks = sys.argv[5:]
print(f"### Node agent: memory and CPU ({cores} cores; one v4-8 worker on the emulator, "
      f"{seconds} s per window)")
print()
print("| phase | process | CPU % of a core (budget < 1 %) | VmRSS max (budget < 20 MiB) | VmHWM | load avg |")
print("|---|---|---|---|---|---|")
failed = any(c.startswith("FAILED") for c in checks)
for line in open(res):
    name, js = line.rstrip("\n").split("\t", 1)
    d = json.loads(js)
    tot_cpu = tot_rss = 0
    agent = [p for p in d["procs"] if p["label"] in ("serve", "keeper", "supervise")]
    for p in d["procs"]:
        print(f"| {name} | {p['label']} | {p['cpu_pct']:.3f} | {p['rss_kib'] / 1024:.1f} MiB | "
              f"{p['hwm_kib'] / 1024:.1f} MiB | {d['load'][0]:.1f}→{d['load'][1]:.1f} |")
    c = sum(p["cpu_pct"] for p in agent)
    r = sum(p["rss_kib"] for p in agent)
    print(f"| {name} | **agent total** (serve + keeper + supervise) | **{c:.3f}** "
          f"{'✓' if c < 1 else '✗'} | **{r / 1024:.1f} MiB** {'✓' if r < 20 * 1024 else '✗'} | | |")
print()
print("Checks: " + "; ".join(checks))
sys.exit(1 if failed else 0)
PY
cat <<EOF

Commands (as root): \`bench/agent.sh build/src/app/tpufleet $seconds\`; on the worker:
\`tpufleet run --detach ag --name silent --no-accelerator -- bash -c '$SILENT'\`, then
\`tpufleet run --detach ag --name printer --no-accelerator -- bash -c '$PRINTER'\`,
and for c \`tpufleet logs -f ID\` on this machine.
EOF
exit $status
