#!/usr/bin/env python3
"""Markdown tables of bench/routing/fleet.sh's rows (a JSON array of the
routing suite's objects with `kv_events` added): per workload and KV mode,
one row per policy, for each router count p90 TTFT, cache-hit rate, the
worst 10 s load ratio and the herd ratio, and the change from one router."""
import json
import sys

rows = json.load(open(sys.argv[1]))
key = lambda r: (r["workload"], r["kv_events"], r["policy"], int(r.get("routers", 1)))
by = {key(r): r for r in rows if r.get("status") == "ok"}
wls = list(dict.fromkeys(r["workload"] for r in rows))
pols = list(dict.fromkeys(r["policy"] for r in rows))
ns = sorted({int(r.get("routers", 1)) for r in rows})


def cell(r, base):
    if not r:
        return "-"
    p90, hit = r["ttft_p90_s"], 100 * r["cache_hit_ratio"]
    s = f"{p90:.3g}"
    if base and base is not r and base["ttft_p90_s"] > 0:
        s += f" ({100 * (p90 / base['ttft_p90_s'] - 1):+.0f}%)"
    s += f" / {hit:.1f}%"
    if base and base is not r:
        s += f" ({hit - 100 * base['cache_hit_ratio']:+.1f})"
    s += f" / {r.get('max_load_ratio_10s', 0):.2f}"
    if int(r.get("routers", 1)) > 1:
        s += f" / {100 * r.get('herd_ratio', 0):.0f}%"
    return s


for kv in (True, False):
    if not any(r["kv_events"] == kv for r in rows):
        continue
    print(f"### {'With' if kv else 'Without'} KV events\n")
    for w in wls:
        print(f"#### {w}\n")
        print("| policy | " + " | ".join(f"{n} router{'s' if n > 1 else ''}" for n in ns) + " |")
        print("|---|" + "---:|" * len(ns))
        for p in pols:
            base = by.get((w, kv, p, ns[0]))
            if not any((w, kv, p, n) in by for n in ns):
                continue
            print(f"| {p} | " + " | ".join(cell(by.get((w, kv, p, n)), base) for n in ns) + " |")
        print()
