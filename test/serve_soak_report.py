#!/usr/bin/env python3
"""What test/serve_soak.sh checks and prints at its end, from the files it kept.

  serve_soak_report.py ledger SAMPLES STATE_DB FLEET T0 T1 PASS SAMPLE
      The spend ledger (the store's spend table, store/sql_serve_tables.cc) against what
      the emulator said each node was, sampled every SAMPLE seconds into SAMPLES (JSON
      lines of {"now", "pass", "nodes": [{"name", "state"}], "qrs": [...]}, "pass" being
      serve's heartbeat: the end of its last pass, in microseconds), both clipped to the
      window [T0, T1] (unix seconds: serve's first start to its last stop). Per node and
      state, the ledger's seconds must be within the bound below of the sampled seconds.
      Prints a table and how far apart serve's passes came; exits 1 when a row is out of
      bounds, a billable state was not billed, or no pass was seen.
  serve_soak_report.py figures EVENTS_JSON
      From `tpufleet events --json`: recoveries, median and 95th-percentile
      time-to-recover (the `recovered` events' seconds), and serve's own part of it
      (each `detected` to the node's next `create-requested`).

The bound, per node and state: serve sees a change only at its next pass, which may
come late (serve killed and restarted, or its loop held up); the samples say when each
pass ended, so each end of each sampled stretch counts as late as the second pass end
after it (the pass running then may have listed before the change). On top of that,
per stretch, PASS (a list that failed, as in an API storm, leaves it to the pass after)
+ SAMPLE (the sampler's own lateness) + 0.5 s (a list call's and a sample's latency on
a loaded 2-core machine).
"""
import bisect
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


def read_samples(samples_path):
    """The samples in time order: [(time, {node: state}, serve's last pass end or None)]."""
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
                pass_us = s.get("pass") or ""
                rows.append((unix(s["now"]), states,
                             int(pass_us) / 1e6 if pass_us.isdigit() else None))
            except (ValueError, KeyError, TypeError, AttributeError):
                continue  # a sample cut short when the sampler was stopped
    rows.sort(key=lambda r: r[0])
    return rows


def observed(rows, t0, t1):
    """{(node, state): [(start, end), ...]}: each stretch the samples show, clipped to
    [t0, t1] (a state holds from its first sample to the next sample that differs)."""
    out, open_at = {}, {}
    for (t, nodes, _), (t_next, _, _) in zip(rows, rows[1:]):
        for node, state in nodes.items():
            a, b = max(t, t0), min(t_next, t1)
            if b <= a:
                continue
            key = (node, state)
            if open_at.get(node) == key and out[key][-1][1] >= a:
                out[key][-1] = (out[key][-1][0], b)
            else:
                out.setdefault(key, []).append((a, b))
                open_at[node] = key
        for node in list(open_at):
            if node not in nodes:
                del open_at[node]
    return out


def pass_ends(rows):
    """The ends of serve's passes that the samples saw (its heartbeat), in order."""
    return sorted({p for _, _, p in rows if p is not None})


def seen_by(ends, t, t1):
    """By when serve had seen a change at `t`: a pass lists as it begins, so the pass
    running at `t` may have listed before it; the next one saw it by its own end, the
    second pass end after `t` (while serve was killed, none came: that time counts)."""
    i = bisect.bisect_right(ends, t)
    return min(ends[i + 1], t1) if i + 1 < len(ends) else t1


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
    t0, t1, pass_s, sample_s = (float(a) for a in args[3:7])
    rows = read_samples(samples)
    seen = observed(rows, t0, t1)
    billed = ledger(db, fleet, t0, t1)
    ends = pass_ends(rows)
    edge = sample_s  # a stretch's end at the window's edge is no change
    def late(t):
        return 0.0 if t <= t0 + edge or t >= t1 - edge else seen_by(ends, t, t1) - t
    per_stretch = pass_s + sample_s + LATENCY_SLACK
    bad = 0
    out_nodes = set()
    total_seen = total_billed = 0.0
    print("| node | state | emulator (sampled) | ledger | difference | bound |")
    print("|---|---|---|---|---|---|")
    for key in sorted(set(seen) | set(billed)):
        node, state = key
        stretches = seen.get(key, [])
        s = sum(b - a for a, b in stretches)
        b, n_billed = billed.get(key, (0.0, 0))
        if (state in NOT_BILLABLE or state.startswith("queued ")) and b == 0:
            continue
        bound = (sum(late(a) + late(b) for a, b in stretches) +
                 max(len(stretches), n_billed, 1) * per_stretch)
        ok = abs(s - b) <= bound
        bad += not ok
        if not ok:
            out_nodes.add(node)
        total_seen += s
        total_billed += b
        print(f"| {node} | {state} | {s:.1f} s | {b:.1f} s | {b - s:+.1f} s | "
              f"{bound:.1f} s{'' if ok else ' OUT'} |")
    print(f"total billable: emulator {total_seen:.1f} s, ledger {total_billed:.1f} s")
    gaps = [b - a for a, b in zip(ends, ends[1:])]
    if gaps:
        print(f"serve's passes seen: {len(ends)}; between two: median {statistics.median(gaps):.2f} s, "
              f"p95 {percentile(gaps, 95):.2f} s, max {max(gaps):.2f} s")
    for node in sorted(out_nodes):
        timeline(rows, db, fleet, node, t0, t1)
    return 1 if bad or total_billed == 0 or not ends else 0


def timeline(rows, db_path, fleet, node, t0, t1):
    """Prints, for a node out of bounds, what the sampler saw change, the ledger's
    stretches and serve's pass ends, in time order (seconds from T0), so that a failed
    run says why."""
    events = [(p, "serve's pass ended") for p in pass_ends(rows) if t0 <= p <= t1]
    last = None
    for t, states, _ in rows:
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
