#!/usr/bin/env python3
"""contrib/grafana/tpufleet.json queries only metrics tpufleet exports: each tpufleet_*
name in a panel's expression (a histogram's _bucket series named by its own) must be
written by serve's /metrics (src/server/metrics.cc) or the node agent's
(src/agent/export/prometheus_text.cc), and each panel must have a query.
Usage: grafana_dashboard_test.py SOURCE_DIR. Prints one line per problem; exit 1 if any."""
import json
import pathlib
import re
import sys

root = pathlib.Path(sys.argv[1])
exported = set()
for source in ("src/server/metrics.cc", "src/agent/export/prometheus_text.cc"):
    exported |= set(re.findall(r'"(tpufleet_[a-z_]+)"', (root / source).read_text()))
dashboard = json.loads((root / "contrib/grafana/tpufleet.json").read_text())
problems = []
queried = set()
for panel in dashboard["panels"]:
    if panel["type"] == "row":
        continue
    targets = panel.get("targets", [])
    if not targets:
        problems.append(f"panel {panel['title']!r} has no query")
    for target in targets:
        for name in re.findall(r"tpufleet_[a-z_]+", target["expr"]):
            base = re.sub(r"_(bucket|sum|count)$", "", name) if name not in exported else name
            queried.add(base)
            if base not in exported:
                problems.append(f"panel {panel['title']!r} queries {name}, which tpufleet does not export")
for p in problems:
    print(p)
print(f"{len(queried)} metrics queried, {len(exported)} exported, {len(problems)} problems")
sys.exit(1 if problems else 0)
