#!/usr/bin/env python3
"""Markdown tables from live_ramp.py's JSON files: one row per run, one
table of each run's replicas, and replicas over time (every 10 s).
Usage: live_ramp_table.py RUN.json..."""
import json, sys

runs = [json.load(open(f)) for f in sys.argv[1:]]
pct = lambda v: "n/a" if v is None else f"{100 * v:.1f}%"
sec = lambda v: "never" if v is None else f"{v:.0f} s"
SPAN = 180  # replica-seconds are summed over the same span for every run


def replica_s(o):
    """Replicas held (ready + starting + draining) x seconds over [0, SPAN)."""
    sm = [x for x in o["samples"] if x["t"] < SPAN]
    tot = 0.0
    for a, b in zip(sm, sm[1:] + [{"t": SPAN}]):
        tot += (a["ready"] + a["starting"] + a["draining"]) * (b["t"] - a["t"])
    return tot


print("| planner | requests | SLO met | ramp up | hold | ramp down | TTFT p50 / p90 | "
      f"10 s p90 first over target | peak ready | replica-s over {SPAN} s | "
      "streams not ended by [DONE] | final replicas |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|")
for o in runs:
    f = o["final"] or {}
    print(f"| {o['planner']} | {o['requests']} | {pct(o['slo_attainment'])} | "
          f"{pct(o['slo_attainment_ramp_up'])} | {pct(o['slo_attainment_hold'])} | "
          f"{pct(o['slo_attainment_ramp_down'])} | {o['ttft_p50_s']:.2f} / {o['ttft_p90_s']:.2f} s | "
          f"{sec(o['slo_broke_at_s'])} | {o['peak_ready']} | {replica_s(o):.0f} | {o['streams_not_done']} | "
          f"{f.get('ready', '?')} ready, {f.get('draining', '?')} draining |")
for o in runs:
    print(f"\n{o['planner']}: replicas (times in s from the load's start)\n")
    print("| replica | started | healthy | prewarm (prompts, 200s, s) | draining (in flight) | "
          "drained (left) | requests | not [DONE] |")
    print("|---|---|---|---|---|---|---|---|")
    t = lambda e, k: "-" if e.get(k) is None else f"{e[k]:.1f}"
    for u, e in sorted(o["replicas"].items(), key=lambda kv: kv[1].get("started") or -1e9):
        pw = (f"{e['prewarm_prompts']}, {e['prewarm_ok']}, {e['prewarm_s']:.2f} at {e['prewarmed']:.1f}"
              if "prewarmed" in e else "-")
        dr = f"{t(e, 'draining')} ({e['drain_inflight']})" if "draining" in e else "-"
        dd = f"{t(e, 'drained')} ({e['drain_left']})" if "drained" in e else "-"
        extra = " (given up)" if "given_up" in e else ""
        print(f"| :{u.rsplit(':', 1)[1]}{extra} | {t(e, 'started')} | {t(e, 'healthy')} | {pw} | {dr} | "
              f"{dd} | {e['requests']} | {e['cut']} |")
print("\nReplicas over time (ready / starting / draining; offered req/s in the second; "
      "10 s rolling TTFT p90)\n")
print("| t (s) | " + " | ".join(o["planner"] for o in runs) + " |")
print("|---|" + "---|" * len(runs))
T = max(len(o["samples"]) for o in runs)
for s in range(0, T, 10):
    cells = []
    for o in runs:
        sm = [x for x in o["samples"] if int(x["t"]) == s]
        if not sm:
            cells.append("")
            continue
        x = sm[0]
        r = o["arrivals_per_s"][s] if s < len(o["arrivals_per_s"]) else 0
        p = o["rolling_p90"][s] if s < len(o["rolling_p90"]) else None
        cells.append(f"{x.get('ready', '?')}/{x.get('starting', '?')}/{x.get('draining', '?')}, "
                     f"{r} req/s, p90 {'-' if p is None else f'{p:.2f}'}")
    print(f"| {s} | " + " | ".join(cells) + " |")
