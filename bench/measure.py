#!/usr/bin/env python3
# One measured cell of bench/fanout.sh and bench/gcloud.sh.
# measure.py --runs R --warmup W [--prep SH] [--check SH] [--expect F --all F]
#            [--extra PAT]... --log P -- SH
# Runs SH with bash R+W times (prep before each, untimed) and prints the medians as JSON:
# wall s, client CPU s (SH and what it waited for, plus the processes --extra names),
# the machine's total CPU s, and the runs that failed their check (exit 0; with --expect,
# the hostnames F lists among those --all lists, each seen; with --check, SH exits 0).
import argparse, json, os, statistics, subprocess, sys, time
ap = argparse.ArgumentParser()
ap.add_argument("--runs", type=int, required=True)
ap.add_argument("--warmup", type=int, default=0)
ap.add_argument("--prep", default="")
ap.add_argument("--check", default="")
ap.add_argument("--expect")
ap.add_argument("--all")
ap.add_argument("--log", required=True)
ap.add_argument("--extra", action="append", default=[])
ap.add_argument("cmd")
a = ap.parse_args()
hz = os.sysconf("SC_CLK_TCK")

def busy():
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return v[0] + v[1] + v[2] + v[5] + v[6] + v[7]  # user nice system irq softirq steal

def helpers():
    """CPU s of the live processes whose command line has an --extra pattern: helpers
    the tool leaves running (tpufleet's holder, ssh ControlMasters), which rusage of
    waited children misses. Returns (seconds, how many)."""
    ticks = count = 0
    if not a.extra:
        return 0.0, 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            cmd = open(f"/proc/{pid}/cmdline", "rb").read().replace(b"\0", b" ").decode(errors="replace")
            if not any(p in cmd for p in a.extra):
                continue
            st = open(f"/proc/{pid}/stat").read()
            f = st[st.rindex(")") + 2:].split()
            ticks += int(f[11]) + int(f[12]) + int(f[13]) + int(f[14])  # utime stime cutime cstime
            count += 1
        except (OSError, ValueError, IndexError):
            pass
    return ticks / hz, count

def verify(out_path, rc):
    if rc != 0:
        return f"exit {rc}"
    if a.expect:
        want = set(open(a.expect).read().split())
        known = set(open(a.all).read().split())
        seen = {}
        for line in open(out_path, errors="replace").read().replace("\r", "\n").splitlines():
            t = line.split()
            if t and t[-1] in known:
                seen[t[-1]] = seen.get(t[-1], 0) + 1
        missing, extra = want - set(seen), set(seen) - want
        if missing or extra:
            return f"{len(missing)} hostnames missing, {len(extra)} unexpected"
    if a.check:
        r = subprocess.run(["bash", "-c", a.check], capture_output=True, text=True)
        if r.returncode != 0:
            return "check failed: " + (r.stdout + r.stderr).strip()[-300:]
    return ""

rows, fails = [], []
for i in range(a.warmup + a.runs):
    if a.prep:
        subprocess.run(["bash", "-c", a.prep], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    out, err = f"{a.log}.{i}.out", f"{a.log}.{i}.err"
    with open(out, "wb") as fo, open(err, "wb") as fe:
        h0 = helpers()[0]
        b0, t0 = busy(), time.monotonic()
        pid = os.posix_spawn("/bin/bash", ["bash", "-c", a.cmd], os.environ, file_actions=[
            (os.POSIX_SPAWN_OPEN, 0, "/dev/null", os.O_RDONLY, 0),
            (os.POSIX_SPAWN_DUP2, fo.fileno(), 1), (os.POSIX_SPAWN_DUP2, fe.fileno(), 2)])
        _, status, ru = os.wait4(pid, 0)
        t1, b1 = time.monotonic(), busy()
        h1, nh = helpers()
    if a.extra and nh == 0:
        sys.stderr.write(f"  note: run {i}: no helper process matched {a.extra}\n")
    why = verify(out, os.waitstatus_to_exitcode(status))
    if why:
        fails.append(f"run {i}: {why}")
        sys.stderr.write(f"  FAILED run {i}: {why}\n")
        for p in (out, err):
            tail = open(p, errors="replace").read().strip().splitlines()[-5:]
            sys.stderr.write("".join(f"    {l}\n" for l in tail))
    if i >= a.warmup:
        rows.append((t1 - t0, ru.ru_utime + ru.ru_stime + max(0.0, h1 - h0), (b1 - b0) / hz))
med = lambda k: statistics.median(r[k] for r in rows)
print(json.dumps({"wall": med(0), "client": med(1), "total": med(2), "runs": len(rows),
                  "fails": fails, "walls": [round(r[0], 3) for r in rows]}))
