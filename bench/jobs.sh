#!/usr/bin/env bash
# Jobs against exec (issue 12): the time from `tpufleet run --detach NODE -- CMD` to every
# rank started, next to `tpufleet exec NODE -- CMD` of the same command on the same
# workers, in one run, on 4, 64 and 256 workers.
#
# A job runs on one node (`run` takes one node: its ranks are that node's workers), so the
# fleet has one v4 pod per size, all on the local emulator: N workers is a v4-(8N) (4
# chips a host): v4-32 (4 workers), v4-512 (64), v4-2048 (256). The agent is the one
# `up` installs on every worker.
# CMD is `bash -c 'echo "TAG ${TPUFLEET_RANK:-x} $(hostname) $(date +%s.%N)" >>
# /tmp/tpufleet-bench-jobs'`, TAG new for each run. The workers are namespaces of this
# machine and share its clock, so the latest timestamp minus the moment the command was
# started here is the time to every rank started (the first rank's is shown too). The
# bench reads the lines back (`tpufleet exec NODE -- grep TAG …`, untimed) and checks every
# run: exit 0, every worker wrote exactly one line, and for `run` ranks 0..N-1 each once
# and the job ended `succeeded` (`tpufleet jobs NODE --json`, polled, untimed).
# Each cell is the median over RUNS timed runs (after JOBS_WARMUP untimed ones), run and
# exec interleaved, with the connection holder up (warm: an `exec all` ran first), of:
#   all started: the latest rank's timestamp - the start of the command, s;
#   wall: until the command returned (`run --detach`: once every worker's agent answered
#     that the job started; exec: once every worker's command ended), s;
#   CLI CPU: the command and the children it waited for (rusage), plus what the
#     connection holder spent meanwhile, s;
#   CPU with what it left running: the same, plus what the command left running spent
#     until it ended: `run` leaves the job's gang watcher (`tpufleet jobs --watch ID`,
#     detached), which ends with the job. Each run is started in a cgroup of its own
#     (cgroup v1 cpuacct, or v2), which counts it; the bench waits until it is empty.
# and the ratios run / exec. Markdown tables and the exact commands go to stdout.
#
# Needs root (the emulator's workers are network namespaces); without it, it skips.
# Only loopback (the emulator's API) and the workers' 198.18.0.0/15 addresses are used.
# The 324-worker fleet took 129 s to come up on this 2-core machine, busy (load 35-45) with
# five other helpers (the emulator boots the hosts in seconds; `up` logs in and installs
# the agent on each); the whole bench with the defaults took 3 minutes more.
#
# Usage: bench/jobs.sh path/to/tpufleet [SIZES] [RUNS]
#   SIZES  worker counts, default "4 64 256" (each a multiple of 4 that v4 has a pod of)
#   RUNS   timed runs per cell, default 3
# Environment: JOBS_WARMUP=1 untimed runs of each before the timed ones.
set -euo pipefail

# shellcheck source=bench/agent_lib.sh
source "$(dirname "$0")/agent_lib.sh"
bench_start jobs "$1"
read -r -a sizes <<<"${2:-4 64 256}"
runs=${3:-3}
warmup=${JOBS_WARMUP:-1}
# Each run gets a cgroup of its own (cgroup v1's cpuacct, or v2), so that the CPU of what
# it leaves running (run's gang watcher) is counted after that has ended too.
cg=""
cleanup() {
  bench_end
  bench_inotify_restore
  if [[ -n $cg ]]; then
    find "$cg" -mindepth 1 -depth -type d -exec rmdir {} + 2>/dev/null
    rmdir "$cg"
  fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- The fleet: one pod of N workers per size.
{
  printf 'fleet: jobsbench\nprovider: emulator\nnodes:\n'
  for n in "${sizes[@]}"; do
    type=v4-$((n * 8))
    workers=$("$bin" catalog "$type" --json 2>/dev/null |
      python3 -c 'import json, sys; print(json.load(sys.stdin)["workers"])') ||
      { say "the catalog has no $type"; exit 1; }
    [[ $workers == "$n" ]] || { say "$type has $workers workers, not $n"; exit 1; }
    printf '  - name: p%d\n    type: %s\n    zones: [us-central2-b]\n' "$n" "$type"
  done
} >"$tmp/fleet.yaml"
total=0
for n in "${sizes[@]}"; do total=$((total + n)); done
bench_inotify_raise "$total"
say "starting the emulator, up of ${#sizes[@]} v4 pods ($total workers)"
"$bin" emulator start >/dev/null
# `up` again when it fails (it is idempotent), at most twice; what failed is reported.
: >"$tmp/up-failures"
up_start=$SECONDS
for attempt in 1 2 3; do
  from=$SECONDS
  rc=0
  timeout 1800 "$bin" up "$tmp/fleet.yaml" --timeout 25m >"$tmp/up.log" 2>&1 || rc=$?
  ((rc != 0)) || break
  {
    echo "- \`up\` attempt $attempt failed (exit $rc after $((SECONDS - from)) s):"
    grep -E '^tpufleet: |^  ' "$tmp/up.log" | sed 's/^/  > /'
    # The agent's own log on each worker up names, as the worker has it.
    grep -oE 'failed on worker [0-9]+ of [a-z0-9]+' "$tmp/up.log" | sort -u |
      while read -r _ _ _ w _ node; do
        echo "  \`tail -5 /var/log/tpufleet-agent.log\` on $node/w$w:"
        timeout 60 "$bin" exec "$node:$w" -- sudo -n tail -5 /var/log/tpufleet-agent.log 2>&1 |
          sed 's/^/  > /'
      done
  } >>"$tmp/up-failures"
  ((attempt < 3)) || { cat "$tmp/up-failures" "$tmp/up.log" >&2; exit 1; }
  say "up failed (exit $rc), trying again:"
  grep -E '^tpufleet: |^  ' "$tmp/up.log" >&2 || true
done
up_took=$((SECONDS - up_start))
say "up took $up_took s"
# The connection holder up for every worker, outside the runs' cgroups (warm, as after
# a first command).
"$bin" exec all -- true >"$tmp/warm.log" 2>&1 || { tail -20 "$tmp/warm.log" >&2; exit 1; }
for base in /sys/fs/cgroup/cpuacct /sys/fs/cgroup; do
  if [[ -f $base/cpuacct.usage || -f $base/cgroup.controllers ]] &&
    mkdir "$base/tpufleet-jobs-bench.$$" 2>/dev/null; then
    cg=$base/tpufleet-jobs-bench.$$
    break
  fi
done
[[ -n $cg ]] || say "no cgroup to count what the commands leave running: its column stays empty"

cat >"$tmp/bench.py" <<'PY'
# bench.py BIN TMP CGROUP RUNS WARMUP SIZE...: the runs; one JSON line per timed run to
# stdout. CGROUP: a cgroup directory to make each run's own cgroup in ("": none).
import json, os, re, statistics, subprocess, sys, time
bin_, tmp, cg, runs, warmup = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
sizes = [int(s) for s in sys.argv[6:]]
hz = os.sysconf("SC_CLK_TCK")
state = os.environ["TPUFLEET_STATE_DIR"]
CMD = ('echo "{tag} ${{TPUFLEET_RANK:-x}} $(hostname) $(date +%s.%N)" '
       '>> /tmp/tpufleet-bench-jobs')

def log(msg):
    sys.stderr.write(f"jobs bench: {msg}\n")

def cmdline(pid):
    try:
        return open(f"/proc/{pid}/cmdline", "rb").read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""

def cpu_ticks(pid):
    try:
        st = open(f"/proc/{pid}/stat").read()
        f = st[st.rindex(")") + 2:].split()
        return int(f[11]) + int(f[12])
    except (OSError, ValueError):
        return None

def holder_cpu():
    t = 0
    for pid in os.listdir("/proc"):
        if pid.isdigit() and f"{state}/holder.sock" in cmdline(pid):
            t += cpu_ticks(pid) or 0
    return t / hz

def cg_usage(cg):
    """CPU s of everything that ran in cgroup cg (v1 cpuacct or v2)."""
    if os.path.exists(f"{cg}/cpuacct.usage"):
        return int(open(f"{cg}/cpuacct.usage").read()) / 1e9
    for line in open(f"{cg}/cpu.stat"):
        if line.startswith("usage_usec "):
            return int(line.split()[1]) / 1e6
    return 0.0

def cg_procs(cg):
    return [p for p in open(f"{cg}/cgroup.procs").read().split()]

def spawn(argv, out, err, cg):
    """Runs argv in a new cgroup under cg (when there is one): wall, CPU of argv and the
    children it waited for (rusage), CPU of all it left running too (the cgroup, once only
    the holder is left in it, 120 s at most), and the exit status."""
    mine = ""
    if cg:
        mine = f"{cg}/{len(os.listdir(cg))}-{os.getpid()}-{time.monotonic_ns()}"
        os.mkdir(mine)
    join = (lambda: open(f"{mine}/cgroup.procs", "w").write(str(os.getpid()))) if mine else None
    with open(out, "wb") as fo, open(err, "wb") as fe:
        h0 = holder_cpu()
        t0 = time.time()
        m0 = time.monotonic()
        p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=fo, stderr=fe, preexec_fn=join)
        _, status, ru = os.wait4(p.pid, 0)
        wall = time.monotonic() - m0
        p.returncode = os.waitstatus_to_exitcode(status)
    cpu, total, left = ru.ru_utime + ru.ru_stime, None, []
    if mine:
        deadline = time.monotonic() + 120
        while True:
            left = [q for q in cg_procs(mine) if f"{state}/holder.sock" not in cmdline(q)]
            if not left or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        total = cg_usage(mine)
        holder_inside = len(cg_procs(mine)) > len(left)
        if not holder_inside:
            try:
                os.rmdir(mine)
            except OSError:
                pass
    h = 0.0 if mine and holder_inside else max(0.0, holder_cpu() - h0)
    return t0, wall, cpu + h, None if total is None else total + h, left, p.returncode

def tail(path):
    return "".join("    " + l + "\n" for l in open(path, errors="replace").read().strip().splitlines()[-5:])

def job_state(node, job):
    r = subprocess.run([bin_, "jobs", node, "--json"], capture_output=True, text=True)
    try:
        for j in json.loads(r.stdout)["jobs"]:
            if j["id"] == job:
                return j["state"]
    except (ValueError, KeyError):
        pass
    return "?"

def readback(node, tag):
    r = subprocess.run([bin_, "exec", node, "--", "grep", "-h", f"^{tag} ", "/tmp/tpufleet-bench-jobs"],
                       capture_output=True, text=True)
    rows = []
    for line in r.stdout.replace("\r", "\n").splitlines():
        m = re.search(rf"{re.escape(tag)} (\S+) (\S+) (\d+\.\d+)$", line.strip())
        if m:
            rows.append((m.group(1), m.group(2), float(m.group(3))))
    return rows

def one(kind, n, i):
    node, tag = f"p{n}", f"b{os.getpid()}-{kind}{n}-{i}"
    cmd = ["bash", "-c", CMD.format(tag=tag)]
    argv = ([bin_, "run", "--detach", node, "--name", tag, "--no-accelerator", "--"] if kind == "run"
            else [bin_, "exec", node, "--"]) + cmd
    base = f"{tmp}/logs/{tag}"
    t0, wall, cpu, total, left, rc = spawn(argv, base + ".out", base + ".err", cg)
    row = {"kind": kind, "n": n, "i": i, "wall": wall, "cpu": cpu, "fails": []}
    if total is not None:
        row["total"] = total
    if left:
        row["fails"].append(f"{len(left)} processes it started still ran after 120 s")
    if rc != 0:
        row["fails"].append(f"exit {rc}")
        log(f"FAILED {kind} N={n} run {i}: exit {rc}\n" + tail(base + ".out") + tail(base + ".err"))
    if kind == "run" and rc == 0:
        job = open(base + ".out").read().split()[0]
        deadline, st = time.monotonic() + 120, "?"
        while time.monotonic() < deadline:
            st = job_state(node, job)
            if st in ("succeeded", "failed", "cancelled", "lost"):
                break
            time.sleep(1)
        if st != "succeeded":
            row["fails"].append(f"job {job} is {st}, not succeeded")
    rows = readback(node, tag)
    hosts = [h for _, h, _ in rows]
    if len(rows) != n or len(set(hosts)) != n:
        row["fails"].append(f"{len(rows)} lines from {len(set(hosts))} workers, want {n} from {n}")
    if kind == "run":
        ranks = sorted(r for r, _, _ in rows)
        if ranks != sorted(str(r) for r in range(n)):
            row["fails"].append("ranks are not 0..N-1 each once")
    if rows:
        stamps = [ts for _, _, ts in rows]
        row["first"], row["all"] = min(stamps) - t0, max(stamps) - t0
    for f in row["fails"]:
        log(f"FAILED {kind} N={n} run {i}: {f}")
    return row

os.makedirs(f"{tmp}/logs", exist_ok=True)
for n in sizes:
    for i in range(warmup + runs):
        for kind in ("run", "exec"):
            log(f"{kind} N={n} {'warm-up' if i < warmup else 'run'} {i}")
            row = one(kind, n, i)
            if i >= warmup:
                print(json.dumps(row), flush=True)
PY

python3 "$tmp/bench.py" "$bin" "$tmp" "$cg" "$runs" "$warmup" "${sizes[@]}" >"$tmp/results.jsonl"

status=0
python3 - "$tmp/results.jsonl" "$(nproc)" "$runs" "$warmup" "$up_took" "$total" "$tmp/up-failures" <<'PY' || status=$?
import json, statistics, sys
path, cores, runs, warmup, up_took, total, up_failures = sys.argv[1:]
rows = [json.loads(l) for l in open(path)]
sizes = sorted({r["n"] for r in rows})
failed = any(r["fails"] for r in rows)

def med(kind, n, key):
    v = [r[key] for r in rows if r["kind"] == kind and r["n"] == n and key in r and not r["fails"]]
    return statistics.median(v) if v else None

def f(x):
    return "—" if x is None else (f"{x:.3f}" if x < 0.1 else f"{x:.2f}")

def fails(kind, n):
    k = sum(1 for r in rows if r["kind"] == kind and r["n"] == n and r["fails"])
    return f" **FAILED {k}/{runs}**" if k else ""

def ratio(a, b):
    return "—" if a is None or b is None or b == 0 else f"{a / b:.2f}×"

print(f"### Jobs: `run --detach` to every rank started, next to `exec` ({cores} cores; one v4 pod "
      f"per size on the emulator, {total} workers; medians of {runs} runs after {warmup} "
      f"warm-up, holder up; `up` of the fleet took {up_took} s)")
print()
if open(up_failures).read().strip():
    print("`up` of the fleet did not succeed at once (then it did):")
    print()
    print(open(up_failures).read().rstrip())
    print()
print("| workers | command | all ranks started (s) | first rank started (s) | wall (s) | CLI CPU (s) | CPU with what it left running (s) |")
print("|---|---|---|---|---|---|---|")
for n in sizes:
    for kind in ("run", "exec"):
        label = "`run --detach`" if kind == "run" else "`exec`"
        print(f"| {n} | {label}{fails(kind, n)} | {f(med(kind, n, 'all'))} | {f(med(kind, n, 'first'))} | "
              f"{f(med(kind, n, 'wall'))} | {f(med(kind, n, 'cpu'))} | {f(med(kind, n, 'total'))} |")
print()
print("| workers | run ÷ exec: all ranks started | wall | CLI CPU | CPU with what it left running |")
print("|---|---|---|---|---|")
for n in sizes:
    print(f"| {n} | " + " | ".join(ratio(med("run", n, k), med("exec", n, k))
                                    for k in ("all", "wall", "cpu", "total")) + " |")
print()
print("Every run, with its failures: " + "; ".join(
    f"{r['kind']} N={r['n']} #{r['i']}: all {f(r.get('all'))} s, wall {f(r['wall'])} s"
    + (f" FAILED ({', '.join(r['fails'])})" if r["fails"] else "") for r in rows))
sys.exit(1 if failed else 0)
PY
cat <<'EOF'

Commands (as root): `bench/jobs.sh build/src/app/tpufleet "4 64 256" 3`; each run, with
TAG new each time and pN the pod of N workers:
```
tpufleet run --detach pN --name TAG --no-accelerator -- bash -c 'echo "TAG ${TPUFLEET_RANK:-x} $(hostname) $(date +%s.%N)" >> /tmp/tpufleet-bench-jobs'
tpufleet exec pN -- bash -c 'echo "TAG ${TPUFLEET_RANK:-x} $(hostname) $(date +%s.%N)" >> /tmp/tpufleet-bench-jobs'
```
EOF
exit $status
