#!/usr/bin/env python3
"""What test/serve_soak.sh checks and prints at its end, from the files it kept.

  serve_soak_report.py ledger SAMPLES STATE_DB FLEET T0 T1 PASS SAMPLE DOWNTIME
      The spend ledger (the store's spend table, store/sqlite_store.cc) against what the emulator said each
      node was, sampled every SAMPLE seconds into SAMPLES (JSON lines of
      {"now", "nodes": [{"name", "state"}]}), both clipped to the window [T0, T1]
      (unix seconds: serve's first start to its last stop). Per node and state, the
      ledger's seconds must be within the bound below of the sampled seconds. Prints a
      table; exits 1 when a row is out of bounds or a billable state was not billed.
  serve_soak_report.py figures EVENTS_JSON
      From `tpufleet events --json`: recoveries, median and 95th-percentile
      time-to-recover (the `recovered` events' seconds), and serve's own part of it
      (each `detected` to the node's next `create-requested`).

The bound, per node and state: every stretch's two ends are each seen late, by serve
(at most one pass, plus a list call) and by the sampler (at most one sample interval),
so one stretch's length is off by at most PASS + SAMPLE + 0.5 s (the 0.5 s is a list
call's and a sample's own latency on a loaded 2-core machine). A node's state seen in
n stretches is off by at most n times that, plus DOWNTIME (the seconds serve was
killed: nobody watched then, and a stretch that ended meanwhile is closed when serve
is back).
"""
import json
import sqlite3
import statistics
import sys
from datetime import datetime

# States that do not bill (core/ledger.h Billable): a STOPPED node, and a queued
# resource still waiting for its node. Rows in these states are shown only when the
# ledger billed them.
NOT_BILLABLE = {"STOPPED", "DELETED", "STATE_UNSPECIFIED", "ACCEPTED",
                "WAITING_FOR_RESOURCES", "PROVISIONING"}
# Slack per stretch for latency (seconds), as in the docstring.
LATENCY_SLACK = 0.5


def unix(value):
    """A time as the store, the emulator or events write it: RFC 3339 or a number."""
    if value is None or value == "":
        return None
    if isinstance(value, (int, float)):
        return value / 1000.0 if value > 1e11 else float(value)  # milliseconds
    text = str(value).strip()
    try:
        number = float(text)
        return number / 1000.0 if number > 1e11 else number
    except ValueError:
        pass
    text = text.replace("Z", "+00:00")
    # Python 3.11 reads fractions of any length; trim to microseconds for older ones.
    if "." in text:
        head, rest = text.split(".", 1)
        digits = "".join(c for c in rest if c.isdigit())
        tail = rest[len(digits):]
        text = head + "." + (digits + "000000")[:6] + tail
    return datetime.fromisoformat(text).timestamp()


def node_id(name):
    """projects/p/locations/z/nodes/n -> n."""
    return name.rsplit("/", 1)[-1]


def observed(samples_path, t0, t1):
    """{(node, state): (seconds, stretches)} from the samples, clipped to [t0, t1]."""
    rows = []
    with open(samples_path) as f:
        for line in f:
            try:
                s = json.loads(line)
                states = {node_id(n["name"]): n["state"] for n in s["nodes"]}
                # A queued resource whose node is gone (SUSPENDED after a preemption:
                # the emulator lists no node then) stands for its node, in its state:
                # "queued SUSPENDED", which bills nothing (no VM runs) and the ledger,
                # which keeps nodes, does not show.
                for qr in s.get("qrs", []):
                    states.setdefault(node_id(qr["name"]), "queued " + qr["state"])
                rows.append((unix(s["now"]), states))
            except (ValueError, KeyError, TypeError):
                continue  # a sample cut short when the sampler was stopped
    rows.sort(key=lambda r: r[0])
    seconds, stretches, last = {}, {}, {}
    for (t, nodes), (t_next, _) in zip(rows, rows[1:]):
        a, b = max(t, t0), min(t_next, t1)
        for node, state in nodes.items():
            if b > a:
                seconds[(node, state)] = seconds.get((node, state), 0.0) + (b - a)
            if last.get(node) != state and t_next > t0 and t < t1:
                stretches[(node, state)] = stretches.get((node, state), 0) + 1
        last = nodes
    return {k: (v, stretches.get(k, 1)) for k, v in seconds.items()}


def ledger(db_path, fleet, t0, t1):
    """{(node, state): (seconds, stretches)} from the store's spend table (times in
    microseconds since the epoch; end_time NULL: still open), clipped to [t0, t1]."""
    db = sqlite3.connect("file:" + db_path + "?mode=ro", uri=True)
    out = {}
    query = "SELECT node, state, start, end_time FROM spend WHERE fleet = ?"
    for node, state, start_us, end_us in db.execute(query, (fleet,)):
        start = start_us / 1e6
        end = end_us / 1e6 if end_us is not None else t1
        a, b = max(start, t0), min(end, t1)
        sec, n = out.get((node, state), (0.0, 0))
        out[(node, state)] = (sec + max(0.0, b - a), n + (1 if b > a else 0))
    return out


def check_ledger(args):
    samples, db, fleet = args[0], args[1], args[2]
    t0, t1, pass_s, sample_s, downtime = (float(a) for a in args[3:8])
    seen = observed(samples, t0, t1)
    billed = ledger(db, fleet, t0, t1)
    per_stretch = pass_s + sample_s + LATENCY_SLACK
    bad = 0
    out_nodes = set()
    total_seen = total_billed = 0.0
    print("| node | state | emulator (sampled) | ledger | difference | bound |")
    print("|---|---|---|---|---|---|")
    for key in sorted(set(seen) | set(billed)):
        node, state = key
        s, n_seen = seen.get(key, (0.0, 0))
        b, n_billed = billed.get(key, (0.0, 0))
        if (state in NOT_BILLABLE or state.startswith("queued ")) and b == 0:
            continue
        bound = max(n_seen, n_billed, 1) * per_stretch + downtime
        ok = abs(s - b) <= bound
        bad += not ok
        if not ok:
            out_nodes.add(node)
        total_seen += s
        total_billed += b
        print(f"| {node} | {state} | {s:.1f} s | {b:.1f} s | {b - s:+.1f} s | "
              f"{bound:.1f} s{'' if ok else ' OUT'} |")
    print(f"total billable: emulator {total_seen:.1f} s, ledger {total_billed:.1f} s")
    for node in sorted(out_nodes):
        timeline(samples, db, fleet, node, t0, t1)
    return 1 if bad or total_billed == 0 else 0


def timeline(samples_path, db_path, fleet, node, t0, t1):
    """Prints, for a node out of bounds, what the sampler saw change and the ledger's
    stretches, in time order (seconds from T0), so that a failed run says why."""
    events = []
    last = None
    with open(samples_path) as f:
        for line in f:
            try:
                s = json.loads(line)
                t = unix(s["now"])
                states = {node_id(n["name"]): n["state"] for n in s["nodes"]}
            except (ValueError, KeyError, TypeError):
                continue
            state = states.get(node, "(none)")
            if state != last and t0 <= t <= t1:
                events.append((t, f"emulator {state}"))
            last = state
    db = sqlite3.connect("file:" + db_path + "?mode=ro", uri=True)
    query = "SELECT state, zone, start, end_time FROM spend WHERE fleet = ? AND node = ?"
    for state, zone, start_us, end_us in db.execute(query, (fleet, node)):
        end = f"{end_us / 1e6 - t0:+.2f}" if end_us is not None else "open"
        events.append((start_us / 1e6, f"ledger   {state} in {zone} until {end}"))
    print(f"{node}, seconds from T0:")
    for t, what in sorted(events):
        print(f"  {t - t0:+8.2f}  {what}")


def detail_of(event):
    """An event's detail as a dict: the API may give a dict or "k=v k=v"."""
    d = event.get("detail", {})
    if isinstance(d, dict):
        return d
    out = {}
    for part in str(d).split():
        if "=" in part:
            k, v = part.split("=", 1)
            out[k] = v
    return out


def percentile(values, p):
    """The nearest-rank percentile (p in 0..100) of a non-empty list."""
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * p // 100))
    return ordered[int(rank) - 1]


def figures(args):
    with open(args[0]) as f:
        doc = json.load(f)
    events = doc.get("events", doc) if isinstance(doc, dict) else doc
    events = sorted(events, key=lambda e: unix(e.get("time")) or 0)
    ttr = [float(detail_of(e)["seconds"]) for e in events
           if e.get("kind") == "recovered" and "seconds" in detail_of(e)]
    own, pending = [], {}
    for e in events:
        key = (e.get("fleet", ""), e.get("node", ""))
        if e.get("kind") == "detected":
            pending.setdefault(key, unix(e.get("time")))
        elif e.get("kind") == "create-requested" and key in pending:
            own.append(unix(e.get("time")) - pending.pop(key))
    kinds = {}
    for e in events:
        kinds[e.get("kind")] = kinds.get(e.get("kind"), 0) + 1
    print("events: " + ", ".join(f"{k} {v}" for k, v in sorted(kinds.items())))
    for label, values in (("time-to-recover", ttr), ("serve's own part (detected -> create-requested)", own)):
        if values:
            print(f"{label}: n={len(values)} median {statistics.median(values):.2f} s, "
                  f"p95 {percentile(values, 95):.2f} s, max {max(values):.2f} s")
        else:
            print(f"{label}: none recorded")
    return 0 if ttr and own else 1


if __name__ == "__main__":
    commands = {"ledger": check_ledger, "figures": figures}
    if len(sys.argv) < 2 or sys.argv[1] not in commands:
        sys.exit(__doc__)
    sys.exit(commands[sys.argv[1]](sys.argv[2:]))
