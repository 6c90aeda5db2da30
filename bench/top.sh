#!/usr/bin/env bash
# `tpufleet top` and the agent's sampling (issue 13), on the local emulator:
#
# 1. agent: what the node agent costs while it samples its worker once a second, on one
#    v4-8 worker (4 chips) that `up` installed the agent on: CPU (utime + stime over the
#    window, % of one core) and VmRSS (at the start and end of the window and its
#    largest, one reading a second) of serve (its sampler thread samples), the job's
#    keeper and supervise, for SECONDS each,
#      a. idle: no job (every second, nothing answers on port 8431);
#      b. a job running the stand-in (`tpu-standin --duty-cycle 60 --step-ms 1000` on
#         its 4 chips: serves libtpu's runtime metrics on 8431);
#    then VmRSS with the history full (see history_fill below).
# 2. side: the same sample, side by side on that worker while the stand-in runs, taken
#    the way Google's tpu-info takes it (bench/tpu_info_sample.py: /usr/bin/python3 with
#    Debian's python3-grpcio and python3-protobuf, message classes generated from
#    src/tpu_metrics/proto by `protoc --python_out` at bench time, local channel
#    credentials, the six metrics on 8431) and by `tpufleet-agent sample --json` (a
#    full sample: chips, their holders, host, jobs). Both run inside the worker's
#    namespaces (nsenter). One sample with the process start (hyperfine: wall and CPU
#    user + sys), and the steady cost of a sample in a loop: Python back to back
#    (LOOP samples) and once a second for SECONDS (CPU %, peak RSS), against serve's
#    sampler at 1 Hz (part 1 b). Both must read 60 % on every chip.
# 3. top: `tpufleet top pN --once` and `--once --json` on one v4 pod of N workers (a
#    v4-(8N); every worker runs the stand-in), for each N of SIZES: wall, CLI CPU (the
#    command and its children, rusage, plus what the connection holder spent meanwhile),
#    medians of RUNS runs after one warm-up, with the holder up (warm) and stopped
#    before each run (cold, `--json`); each answer is checked (N workers, none in
#    error, 60 % on every chip). Then the live view: `top pN --refresh 1` on a
#    pseudo-terminal for LIVE seconds, its CPU (and the holder's) per second: one
#    refresh round a second. The pod is deleted (`down`) before the next size, so the
#    agents of one size do not load the next.
# Markdown tables and the commands go to stdout; the exit status is 1 when a check
# failed. Needs root (the emulator's workers are network namespaces); without it, it
# skips. Only loopback and the workers' 198.18.0.0/15 addresses are used.
#
# Usage: bench/top.sh path/to/tpufleet [SIZES] [RUNS] [SECONDS]
#   SIZES    pod sizes in workers, default "16 64 256"
#   RUNS     timed runs per top cell, default 5
#   SECONDS  length of each agent window, default 120
# Environment: TOP_PARTS (default "agent side top") runs only the parts named;
#   LOOP=500 back-to-back Python samples; LIVE=30 seconds of the live view.
set -euo pipefail

# shellcheck source=bench/agent_lib.sh
source "$(dirname "$0")/agent_lib.sh"
bench_start top "$1"
root=$(cd "$(dirname "$0")/.." && pwd)
read -r -a sizes <<<"${2:-16 64 256}"
runs=${3:-5}
seconds=${4:-120}
parts=" ${TOP_PARTS:-agent side top} "
loop=${LOOP:-500}
live=${LIVE:-30}
cleanup() {
  bench_end
  bench_inotify_restore
}
trap cleanup EXIT
trap 'exit 130' INT TERM
part() { [[ $parts == *" $1 "* ]]; }
results=$tmp/results.jsonl
: >"$results"
checks=()
check() {  # check DESCRIPTION COMMAND...: records what COMMAND found, or that it failed
  local desc=$1
  shift
  if "$@" >"$tmp/check.out" 2>&1; then checks+=("$desc: $(tail -1 "$tmp/check.out")")
  else checks+=("FAILED $desc: $(tail -3 "$tmp/check.out" | tr '\n' ' ')"); fi
}

bench_inotify_raise 256

cat >"$tmp/measure.py" <<'PY'
# measure.py COMMAND ...: the measurements; JSON out.
#   pids NETNS_PID REGEX          the pids in NETNS_PID's network namespace whose command
#                                 line matches REGEX
#   watch SECONDS LABEL=PID...    CPU % and VmRSS of each PID over SECONDS
#   run OUT IN -- ARGV...         one timed run of ARGV (stdin from IN, "": none; its
#                                 stdout to OUT): wall, CPU (rusage), the holder's CPU
#                                 meanwhile, exit status
#   live SECONDS -- ARGV...       ARGV on a pseudo-terminal (60x200), its CPU and the
#                                 holder's per second over SECONDS, after 5 s; then "q"
import fcntl, json, os, pty, re, select, signal, struct, sys, termios, time
hz = os.sysconf("SC_CLK_TCK")
state = os.environ["TPUFLEET_STATE_DIR"]

def cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""

def ticks(pid, children=False):
    """utime + stime (and those of waited-for children), and the start time."""
    with open(f"/proc/{pid}/stat") as f:
        st = f.read()
    v = st[st.rindex(")") + 2:].split()
    return int(v[11]) + int(v[12]) + (int(v[13]) + int(v[14]) if children else 0), int(v[19])

def kib(pid, key, file="status"):
    with open(f"/proc/{pid}/{file}") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0

def holder_s():
    """CPU seconds so far of this state dir's connection holder(s)."""
    t = 0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        if f"{state}/holder.sock" in cmdline(pid):
            try:
                t += ticks(pid)[0]
            except OSError:
                pass
    return t / hz

def pids(netns_pid, regex):
    ns, r = os.readlink(f"/proc/{netns_pid}/ns/net"), re.compile(regex)
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if os.readlink(f"/proc/{pid}/ns/net") == ns and r.search(cmdline(pid)):
                print(pid)
        except OSError:
            pass

def watch(seconds, procs):
    procs = [p.split("=", 1) for p in procs]
    first = {pid: ticks(pid) for _, pid in procs}
    rss = {pid: [kib(pid, "VmRSS")] for _, pid in procs}
    t0, load0 = time.monotonic(), os.getloadavg()[0]
    while time.monotonic() < t0 + seconds:
        time.sleep(min(1.0, max(0.0, t0 + seconds - time.monotonic())))
        for _, pid in procs:
            rss[pid].append(kib(pid, "VmRSS"))
    wall = time.monotonic() - t0
    out = {"wall": wall, "load": [load0, os.getloadavg()[0]], "procs": []}
    with open("/proc/uptime") as f:
        uptime = float(f.read().split()[0])
    for label, pid in procs:
        t, start = ticks(pid)
        if start != first[pid][1]:
            sys.exit(f"{label} (pid {pid}) was replaced during the window")
        out["procs"].append({"label": label, "cpu_pct": 100.0 * (t - first[pid][0]) / hz / wall,
                             "rss_start_kib": rss[pid][0], "rss_end_kib": rss[pid][-1],
                             "rss_max_kib": max(rss[pid]), "hwm_kib": kib(pid, "VmHWM"),
                             "anon_kib": kib(pid, "RssAnon"), "file_kib": kib(pid, "RssFile"),
                             "pss_kib": kib(pid, "Pss", "smaps_rollup"),
                             "age_end_s": uptime - start / hz})
    print(json.dumps(out))

def timed(argv, stdin):
    """One run: wall, CPU of argv and its waited-for children (rusage), stdout, stderr."""
    r, w = os.pipe()
    re_, we = os.pipe()
    m0 = time.monotonic()
    pid = os.fork()
    if pid == 0:
        os.dup2(w, 1); os.dup2(we, 2)
        os.close(r); os.close(re_)
        fd = os.open(stdin or "/dev/null", os.O_RDONLY); os.dup2(fd, 0)
        os.execvp(argv[0], argv)
    os.close(w); os.close(we)
    got, open_fds = {r: [], re_: []}, {r, re_}
    while open_fds:
        for fd in select.select(list(open_fds), [], [])[0]:
            chunk = os.read(fd, 65536)
            if chunk:
                got[fd].append(chunk)
            else:
                open_fds.discard(fd)
                os.close(fd)
    _, status, ru = os.wait4(pid, 0)
    return (time.monotonic() - m0, ru.ru_utime + ru.ru_stime, os.waitstatus_to_exitcode(status),
            b"".join(got[r]), b"".join(got[re_]))

def live(seconds, argv):
    pid, fd = pty.fork()
    if pid == 0:
        os.execvp(argv[0], argv)
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 60, 200, 0, 0))
    out = 0
    def drain(until):
        nonlocal out
        while time.monotonic() < until:
            if select.select([fd], [], [], 0.1)[0]:
                try:
                    out += len(os.read(fd, 65536))
                except OSError:
                    return False
        return True
    drain(time.monotonic() + 5)  # the first rounds, the connections
    c0, h0, m0 = ticks(pid, children=True)[0], holder_s(), time.monotonic()
    ok = drain(m0 + seconds)
    wall = time.monotonic() - m0
    c1, h1 = (ticks(pid, children=True)[0], holder_s()) if ok else (c0, h0)
    os.write(fd, b"q")
    quit_ok, end = False, time.monotonic() + 5
    while not quit_ok and time.monotonic() < end:
        quit_ok = os.waitpid(pid, os.WNOHANG)[0] == pid
        drain(time.monotonic() + 0.2)
    if not quit_ok:
        os.kill(pid, signal.SIGTERM)
        os.waitpid(pid, 0)
    print(json.dumps({"ok": ok, "quit_on_q": quit_ok, "wall": wall, "bytes": out,
                      "cpu_per_s": (c1 - c0) / hz / wall, "holder_per_s": (h1 - h0) / wall}))

cmd = sys.argv[1]
if cmd == "pids":
    pids(sys.argv[2], sys.argv[3])
elif cmd == "watch":
    watch(float(sys.argv[2]), sys.argv[3:])
elif cmd == "live":
    live(float(sys.argv[2]), sys.argv[4:])
elif cmd == "run":
    out_file, stdin, argv = sys.argv[2], sys.argv[3], sys.argv[5:]
    h0 = holder_s()
    wall, cpu, rc, out, err = timed(argv, stdin)
    with open(out_file, "wb") as f:
        f.write(out)
    print(json.dumps({"wall": wall, "cpu": cpu, "holder": holder_s() - h0, "rc": rc,
                      "load": os.getloadavg()[0],
                      "err": err.decode(errors="replace")[-2000:]}))
PY
measure() { python3 "$tmp/measure.py" "$@"; }

cat >"$tmp/check.py" <<'PY'
# check.py WHAT [N]: checks the JSON on stdin; prints what it found; exit 1 when wrong.
#   sample   tpufleet-agent sample --json: every chip at 60 ± 3 %, held by a process
#   op       the metrics op's answer: the same, held by a job
#   tpuinfo  tpu_info_sample.py: every chip at 60 ± 3 %
#   top N    top --once --json: N workers with chips, none in error, every chip at 60 ± 3 %
import json, sys
what, doc = sys.argv[1], json.load(sys.stdin)

def duties(chips):
    return [c.get("duty_cycle_percent") for c in chips]

def near(values):
    return bool(values) and all(v is not None and abs(v - 60) <= 3 for v in values)

if what in ("sample", "op"):
    chips = doc["sample"]["chips"]
    by = "job" if what == "op" else "pid"
    held = [c for c in chips if any(h.get(by) for h in c.get("holders", []))]
    print(f"{len(chips)} chips, duty {duties(chips)}, {len(held)} held by a {'job' if by == 'job' else 'process'}")
    sys.exit(0 if near(duties(chips)) and len(held) == len(chips) else 1)
if what == "tpuinfo":
    d = [c.get("duty_cycle_percent") for c in doc["chips"].values()]
    print(f"{len(d)} chips, duty {d}")
    sys.exit(0 if near(d) else 1)
# top: every object with "chips" is a worker's sample; "error" marks one that failed.
samples, errors = [], []
def walk(x):
    if isinstance(x, dict):
        if "chips" in x and isinstance(x["chips"], list):
            samples.append(x)
        if isinstance(x.get("error"), str) and x["error"]:
            errors.append(x["error"])
        for v in x.values():
            walk(v)
    elif isinstance(x, list):
        for v in x:
            walk(v)
walk(doc)
n = int(sys.argv[2])
d = [v for s in samples for v in duties(s["chips"])]
off = [v for v in d if v is not None and abs(v - 60) > 3]
print(f"{len(samples)} workers' samples, {len(d)} chips, {len(errors)} errors; "
      f"{d.count(None)} chips without a duty cycle, {len(off)} off 60 ± 3 % {sorted(off)[:8]}")
sys.exit(0 if len(samples) == n and not errors and len(d) == 4 * n and near(d) else 1)
PY
judge() { python3 "$tmp/check.py" "$@"; }

say "starting the emulator"
"$bin" emulator start >/dev/null
# up_node NAME TYPE: the fleet is that one node, brought up by a real `up`.
up_node() {
  printf 'fleet: topbench\nprovider: emulator\nnodes:\n  - name: %s\n    type: %s\n    zones: [us-central2-b]\n' \
    "$1" "$2" >"$tmp/fleet.yaml"
  local from=$SECONDS
  timeout 1800 "$bin" up "$tmp/fleet.yaml" --timeout 25m >"$tmp/up.log" 2>&1 ||
    { tail -20 "$tmp/up.log" >&2; exit 1; }
  say "up of $1 ($2) took $((SECONDS - from)) s"
}
STANDIN='tpu-standin --duty-cycle 60 --step-ms 1000'
# start_standin NODE: the stand-in as a job on every worker of NODE; prints its id.
start_standin() {
  # shellcheck disable=SC2086  # STANDIN is words
  "$bin" run --detach "$1" --name standin -- $STANDIN 2>"$tmp/run.err" | head -1 ||
    { cat "$tmp/run.err" >&2; return 1; }
}
# record JSON KEY=VALUE...: one line of results, JSON's fields and these (numbers,
# true/false and strings).
record() {
  python3 - "$@" >>"$results" <<'PY'
import json, re, sys
d = json.loads(sys.argv[1])
for kv in sys.argv[2:]:
    k, v = kv.split("=", 1)
    d[k] = (int(v) if re.fullmatch(r"-?\d+", v) else {"true": True, "false": False}.get(v, v))
print(json.dumps(d))
PY
}

# side: part 2, on the worker `ag` while the stand-in runs there.
side() {
  local w=/tmp/tpufleet-top-bench py
  mkdir -p "$tmp/side/stubs"
  protoc --python_out="$tmp/side/stubs" -I "$root/src/tpu_metrics/proto" "$root"/src/tpu_metrics/proto/*.proto
  cp "$root/bench/tpu_info_sample.py" "$tmp/measure.py" "$tmp/check.py" "$tmp/side/"
  echo '{"v":1,"op":"metrics"}' >"$tmp/side/metrics.json"
  tar -C "$tmp/side" -cf - . | in_worker sh -c "rm -rf $w && mkdir $w && tar -C $w -xf -"
  py="/usr/bin/python3 $w/tpu_info_sample.py --stubs $w/stubs"
  # shellcheck disable=SC2086  # py is words
  tpuinfo_sample() { in_worker $py | judge tpuinfo; }
  check "tpu_info_sample.py" tpuinfo_sample
  say "side by side: one sample each, process start included (hyperfine)"
  in_worker hyperfine -N --style none --warmup 3 --runs 30 --export-json "$w/h.json" \
    "$py" "/usr/local/bin/tpufleet-agent sample --json" "/usr/bin/python3 -c pass" \
    "/usr/bin/python3 -c 'import grpc'" >/dev/null
  record "$(in_worker cat "$w/h.json")" kind=hyperfine
  say "side by side: the agent's metrics op (tpufleet-agent call), 1 + 30 runs"
  local i row ok
  for i in $(seq 0 30); do
    row=$(in_worker /usr/bin/python3 "$w/measure.py" run "$w/op.json" "$w/metrics.json" -- \
      /usr/local/bin/tpufleet-agent call)
    ok=true
    in_worker sh -c "/usr/bin/python3 $w/check.py op <$w/op.json" >"$tmp/op.check" 2>&1 || ok=false
    record "$row" kind=op i="$i" ok="$ok" check="$(tail -1 "$tmp/op.check")"
  done
  say "side by side: $loop Python samples back to back, then one a second for ${seconds}s"
  # shellcheck disable=SC2086
  record "$(in_worker $py --count "$loop")" kind=loop interval=0
  # shellcheck disable=SC2086
  record "$(in_worker $py --count "$seconds" --interval 1)" kind=loop interval=1
}

# top_pod N: part 3 on a pod of N workers, deleted at the end.
top_pod() {
  local n=$1 node=p$1 job v i ok verdict args
  up_node "$node" "v4-$((8 * n))"
  job=$(start_standin "$node")
  sleep 15  # every worker's sampler has seen the stand-in for a while
  "$bin" exec "$node" -- true >/dev/null  # the holder up
  for v in once json cold; do
    args=(top "$node" --once)
    [[ $v == once ]] || args+=(--json)
    say "top $node: ${args[*]:2} ($v), 1 + $runs runs"
    for i in $(seq 0 "$runs"); do
      if [[ $v == cold ]]; then timeout 20 "$bin" holder stop >/dev/null 2>&1 || true; fi
      row=$(measure run "$tmp/top.out" "" -- "$bin" "${args[@]}")
      ok=true
      verdict=$(python3 -c 'import json, sys; sys.exit(json.loads(sys.argv[1])["rc"])' "$row" 2>&1) || ok=false
      if [[ $ok == true && $v != once ]]; then verdict=$(judge top "$n" <"$tmp/top.out" 2>&1) || ok=false; fi
      [[ $ok == true ]] || say "top $node ($v) run $i: FAILED: $verdict"
      record "$row" kind=top n="$n" variant="$v" i="$i" ok="$ok" check="$verdict"
    done
  done
  say "the live view of $node for ${live}s"
  record "$(measure live "$live" -- "$bin" top "$node" --refresh 1)" kind=live n="$n"
  "$bin" cancel "$job" --grace 2s >/dev/null
  timeout 900 "$bin" down --all --yes >/dev/null
}

# ---- 1 and 2: one worker.
if part agent || part side; then
  up_node ag v4-8
  init=$(pgrep -f "^tpufleet-emulator-worker --disk=$TPUFLEET_EMULATOR_DIR/" | head -1)
  [[ -n $init ]] || { say "no worker of this emulator is running"; exit 1; }
  one() {  # one REGEX: the one process on the worker whose command line matches
    local p
    p=$(measure pids "$init" "$1")
    [[ $(wc -w <<<"$p") == 1 ]] || { say "want one process matching $1 on the worker, found: ${p:-none}"; return 1; }
    echo "$p"
  }
  serve=$(one '^(/usr/local/bin/)?tpufleet-agent serve( |$)')
  supervise=$(one '^(/usr/local/bin/)?tpufleet-agent supervise( |$)') || supervise=""
  in_worker() { nsenter -t "$serve" -a --wd=/ -- "$@"; }
  window() {  # window PHASE LABEL=PID...
    local phase=$1
    shift
    say "measuring '$phase' for ${seconds}s"
    record "$(measure watch "$seconds" "$@")" kind=agent phase="$phase"
  }
  if part agent; then
    sleep 5
    window "a. idle: no job" serve="$serve" ${supervise:+supervise="$supervise"}
  fi
  job=$(start_standin ag)
  sleep 5
  keeper=$(one "^(/usr/local/bin/)?tpufleet-agent keep $job( |\$)")
  standin=$(one '^(/usr/local/bin/)?tpu-standin ') || standin=""
  agent_sample() { in_worker /usr/local/bin/tpufleet-agent sample --json | judge sample; }
  check "tpufleet-agent sample --json" agent_sample
  if part agent; then
    window "b. the stand-in's job (4 chips at 60 %)" serve="$serve" keeper="$keeper" \
      ${supervise:+supervise="$supervise"} ${standin:+stand-in="$standin"}
  fi
  if part side; then side; fi
  "$bin" cancel "$job" --grace 2s >/dev/null
  timeout 300 "$bin" down --all --yes >/dev/null
fi

# ---- 3. top on pods of 16, 64, 256 workers.
if part top; then
  for n in "${sizes[@]}"; do top_pod "$n"; done
fi

# ---- Report.
status=0
python3 - "$results" "$(nproc)" "$seconds" "$runs" "$loop" "$live" "${checks[@]}" <<'PY' || status=$?
import json, statistics, sys
path, cores, seconds, runs, loop, live = sys.argv[1:7]
checks = sys.argv[7:]
rows = [json.loads(l) for l in open(path)]
of = lambda kind: [r for r in rows if r["kind"] == kind]
failed = any(c.startswith("FAILED") for c in checks) or any(not r["ok"] for r in of("top"))
mib = lambda k: f"{k / 1024:.1f} MiB"
ms = lambda s: f"{s * 1e3:.2f}" if s < 0.1 else f"{s * 1e3:.1f}"

serve_1hz = None
if of("agent"):
    print(f"#### The agent while it samples once a second ({cores} cores; one v4-8 worker, "
          f"{seconds} s a window)")
    print()
    print("| phase | process | CPU % of a core | VmRSS start → end (largest) | at the end: anon + file; PSS | load avg |")
    print("|---|---|---|---|---|---|")
    for d in of("agent"):
        for p in d["procs"]:
            print(f"| {d['phase']} | {p['label']} | {p['cpu_pct']:.3f} | {mib(p['rss_start_kib'])} → "
                  f"{mib(p['rss_end_kib'])} ({mib(p['rss_max_kib'])}) | {mib(p['anon_kib'])} + "
                  f"{mib(p['file_kib'])}; {mib(p['pss_kib'])} | "
                  f"{d['load'][0]:.1f}→{d['load'][1]:.1f} |")
            if p["label"] == "serve" and d["phase"].startswith("b."):
                serve_1hz = p
        agent = [p for p in d["procs"] if p["label"] in ("serve", "keeper", "supervise")]
        print(f"| {d['phase']} | **agent total** (serve, keeper, supervise) | "
              f"**{sum(p['cpu_pct'] for p in agent):.3f}** | "
              f"{mib(sum(p['rss_max_kib'] for p in agent))} (largest) | PSS **{mib(sum(p['pss_kib'] for p in agent))}** | |")
    print()
serve = [(d["phase"], p) for d in of("agent") for p in d["procs"] if p["label"] == "serve"]
if serve:
    first, last = serve[0][1], serve[-1][1]
    print(f"serve's VmRSS: {mib(first['rss_start_kib'])} {first['age_end_s'] - float(seconds):.0f} s "
          f"after it started, {mib(last['rss_end_kib'])} after {last['age_end_s']:.0f} s.")
    print()

if of("hyperfine"):
    hy = of("hyperfine")[0]["results"]
    loops = {r["interval"]: r for r in of("loop")}
    print(f"#### One sample, side by side on the worker: tpu-info's way and the agent's "
          f"({cores} cores; the stand-in's 4 chips)")
    print()
    print("| way | one sample, process start included: wall mean ± σ (ms) | CPU user+sys (ms) | "
          f"back to back ({loop} samples): wall / CPU per sample (ms) | one a second for {seconds} s: "
          "CPU % of a core | CPU per sample (ms) | RSS, largest |")
    print("|---|---|---|---|---|---|---|")
    op = [r for r in of("op") if r["i"] > 0]
    failed = failed or any(not r["ok"] for r in of("op"))
    at_1hz = lambda r: f"{r['cpu_pct']:.3f} | {ms(r['sample_cpu_s'])} | {mib(r['rss_max_kib'])}"
    one = lambda r: f"{ms(r['mean'])} ± {ms(r['stddev'])} | {ms(r['user'] + r['system'])}"
    b, s = loops.get(0), loops.get(1)
    print(f"| tpu-info's way: `bench/tpu_info_sample.py` (Python, grpcio; the six metrics) | {one(hy[0])} | "
          + (f"{ms(b['wall_s'] / b['samples'])} / {ms(b['sample_cpu_s'])}" if b else "—") + " | "
          + (at_1hz(s) if s else "— | — | —") + " |")
    print(f"| `tpufleet-agent sample --json` (a full sample; two, 1 s apart, for the rates) | {one(hy[1])} | "
          "— | — | — | — |")
    if op:
        op_wall = statistics.median(r["wall"] for r in op)
        op_cpu = statistics.mean(r["cpu"] for r in op)
        bad = sum(1 for r in of("op") if not r["ok"])
        serve = (f"{serve_1hz['cpu_pct']:.3f} (serve, 1 b) | {ms(serve_1hz['cpu_pct'] / 100)} | "
                 f"{mib(serve_1hz['rss_max_kib'])} (serve)") if serve_1hz else "— | — | —"
        print(f"| the agent's metrics op: `tpufleet-agent call` (serve's latest sample; median of {len(op)}, "
              f"serve's share not counted){f' **FAILED {bad}**' if bad else ''} | {ms(op_wall)} | {ms(op_cpu)} | — | "
              f"{serve} |")
    print(f"| `/usr/bin/python3 -c pass` (the floor) | {one(hy[2])} | — | — | — | — |")
    print(f"| `/usr/bin/python3 -c 'import grpc'` | {one(hy[3])} | — | — | — | — |")
    print()
    cpu = lambda r: r["user"] + r["system"]
    print(f"- One sample from a cold start, Python ÷ `sample --json`: **{cpu(hy[0]) / cpu(hy[1]):.1f}× CPU** "
          f"({ms(cpu(hy[0]))} against {ms(cpu(hy[1]))} ms)" + (
          f"; Python ÷ the metrics op: **{hy[0]['mean'] / op_wall:.1f}× wall**, **{cpu(hy[0]) / op_cpu:.1f}× CPU**."
          if op else "."))
    if s and serve_1hz and serve_1hz["cpu_pct"] > 0:
        print(f"- Once a second: Python ÷ serve = **{s['cpu_pct'] / serve_1hz['cpu_pct']:.1f}× CPU**, "
              f"{s['rss_max_kib'] / serve_1hz['rss_max_kib']:.1f}× RSS.")
    print()

if of("top"):
    print(f"#### `tpufleet top` on one v4 pod, every worker running the stand-in ({cores} cores; "
          f"medians of {runs} runs after one warm-up)")
    print()
    print("| workers | command | wall (s) | CLI CPU (s) | of which the holder (s) | load avg |")
    print("|---|---|---|---|---|---|")
    label = {"once": "`top pN --once`", "json": "`top pN --once --json`",
             "cold": "`top pN --once --json`, holder stopped before"}
    for n in sorted({r["n"] for r in of("top")}):
        for v in ("once", "json", "cold"):
            t = [r for r in of("top") if r["n"] == n and r["variant"] == v and r["i"] > 0]
            if not t:
                continue
            bad = sum(1 for r in t if not r["ok"])
            med = lambda k: statistics.median(r[k] for r in t)
            print(f"| {n} | {label[v].replace('pN', f'p{n}')}{f' **FAILED {bad}/{len(t)}**' if bad else ''} | "
                  f"{med('wall'):.3f} | {med('cpu') + med('holder'):.3f} | {med('holder'):.3f} | "
                  f"{med('load'):.1f} |")
        for l in (r for r in of("live") if r["n"] == n):
            print(f"| {n} | live view, `top p{n} --refresh 1`, per second of view"
                  f"{'' if l['ok'] else ' **FAILED**'} | — | {l['cpu_per_s'] + l['holder_per_s']:.3f} | "
                  f"{l['holder_per_s']:.3f} | |")
    print()
for n in sorted({r["n"] for r in of("top")}):
    t = [r for r in of("top") if r["n"] == n and r["variant"] == "json" and r["i"] > 0]
    if t:
        checks.append(f"top p{n} --once --json: {t[0]['check']}")
for l in of("live"):
    checks.append(f"live view of p{l['n']}: {l['bytes'] / l['wall'] / 1024:.1f} KiB drawn a second, "
                  + ("quit on q" if l["quit_on_q"] else "FAILED: did not quit on q"))
    failed = failed or not l["ok"] or not l["quit_on_q"]
print("Checks: " + "; ".join(checks))
sys.exit(1 if failed else 0)
PY
cat <<EOF

Commands (as root): \`bench/top.sh build/src/app/tpufleet "${sizes[*]}" $runs $seconds\`
(TOP_PARTS="agent side top" chooses parts). The job on every worker:
\`tpufleet run --detach NODE --name standin -- $STANDIN\`. On the worker (nsenter into
its namespaces; W=/tmp/tpufleet-top-bench holds the script and the stubs of
\`protoc --python_out=W/stubs -I src/tpu_metrics/proto src/tpu_metrics/proto/*.proto\`):
\`\`\`
hyperfine -N --warmup 3 --runs 30 "/usr/bin/python3 W/tpu_info_sample.py --stubs W/stubs" "tpufleet-agent sample --json"
/usr/bin/python3 W/tpu_info_sample.py --stubs W/stubs --count $loop
/usr/bin/python3 W/tpu_info_sample.py --stubs W/stubs --count $seconds --interval 1
\`\`\`
and here \`tpufleet top pN --once [--json]\`, \`tpufleet top pN --refresh 1\`.
EOF
exit $status
