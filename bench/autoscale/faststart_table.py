"""The fast-start tables (bench/results/autoscale-faststart.md) from
bench/autoscale/faststart.sh's JSON in DIR: the time-to-ready sweep and
standby on seeds 1..SWEEP, the goal with every replica restored within 30 s
per seed, and the stress goal with 30% batch on the PD and the aggregated
day (classes alone, fast start alone, both). A run that is missing is
listed as not run.
  python3 bench/autoscale/faststart_table.py DIR|FILE SEEDS [SWEEP]
  python3 bench/autoscale/faststart_table.py DIR SEEDS SWEEP --gather FILE"""
import json
import os
import sys

d, n = sys.argv[1], int(sys.argv[2])
sweep = int(sys.argv[3]) if len(sys.argv) > 3 else 1


# DIR, or the runs' figures gathered into one file (--gather OUT writes it,
# keeping the runs it held that DIR has not: bench/results/
# autoscale-faststart.json) and read back in its place.
KEEP = ("planner", "seed", "stress", "slo_attainment", "slo_attainment_interactive",
        "slo_attainment_batch", "batch_deadline_met", "batch_rejected", "batch_dropped",
        "batch_requests",
        "gpu_hours", "fast_share", "fast_ready_secs", "standby", "standby_cost",
        "parked_hours", "replicas_woken", "slo_goal")
gathered = json.load(open(d)) if os.path.isfile(d) else None


def load(name):
    if gathered is not None:
        runs = gathered.get(name)
    else:
        f = f"{d}/{name}.json"
        runs = json.load(open(f)) if os.path.exists(f) else None
    return {o["planner"]: o for o in runs} if runs else None


if len(sys.argv) > 4 and sys.argv[4] == "--gather":
    # Into what FILE already holds: DIR's runs replace those of their name.
    out = json.load(open(sys.argv[5])) if os.path.isfile(sys.argv[5]) else {}
    for f in sorted(os.listdir(d)):
        if f.endswith(".json"):
            out[f[:-5]] = [{k: o.get(k) for k in KEEP} for o in json.load(open(f"{d}/{f}"))]
    json.dump(out, open(sys.argv[5], "w"), indent=0, sort_keys=True)
    sys.exit(0)


def pct(v):
    return f"{100 * v:.2f}%"


def yn(b):
    return "yes" if b else "**no**"


print("### (a) SLO attainment against time to ready (every replica fast, no classes)\n")
for s in range(1, sweep + 1):
    print(f"Seed {s}, `--scenario diurnal-pd --stress --fast-share 1 --fast-ready-secs S`; "
          "the last row is today's start-up model (no fast nodes).\n")
    print("| time to ready (p90, never past) | kvgate SLO | kvgate GPU-h | sla SLO | sla GPU-h | "
          "kvgate / sla GPU-h |")
    print("|---|---|---|---|---|---|")
    for t in (5, 10, 30, 60, 120, 240, 470, None):
        r = load(f"pd-fast1-{t}-{s}" if t else f"pd-base-{s}")
        lab = f"{t} s" if t else "today's (warm / cold, 97-471 s)"
        if not r:
            print(f"| {lab} | not run | | | | |")
            continue
        k, q = r["kvgate"], r["sla"]
        print(f"| {lab} | {pct(k['slo_attainment'])} | {k['gpu_hours']:.1f} | "
              f"{pct(q['slo_attainment'])} | {q['gpu_hours']:.1f} | "
              f"{k['gpu_hours'] / q['gpu_hours']:.2f} |")
    print()

print("### (b) Standby: parked replicas per pool, charged as holding a GPU (standby_cost 1)\n")
for s in range(1, sweep + 1):
    print(f"Seed {s}, `--scenario diurnal-pd --stress --standby N` (each of the two pools keeps "
          "up to N parked; GPU-h include them; woken: parked replicas woken over the day).\n")
    print("| standby | kvgate SLO | kvgate GPU-h | parked replica-h | woken | sla SLO | sla GPU-h | parked replica-h "
          "| woken |")
    print("|---|---|---|---|---|---|---|---|---|")
    for k_ in range(0, 4):
        r = load(f"pd-standby{k_}-{s}" if k_ else f"pd-base-{s}")
        if not r:
            print(f"| {k_} | not run | | | | | | | |")
            continue
        k, q = r["kvgate"], r["sla"]
        print(f"| {k_} | {pct(k['slo_attainment'])} | {k['gpu_hours']:.1f} | "
              f"{k['parked_hours']:.1f} | {k['replicas_woken']} | {pct(q['slo_attainment'])} | "
              f"{q['gpu_hours']:.1f} | {q['parked_hours']:.1f} | {q['replicas_woken']} |")
    print()

print("### (c) The goal: every replica restored within 30 s, no classes, kvgate >= 99% at "
      "<= 0.9x sla's GPU-hours\n")
print("`--fast-share 1 --fast-ready-secs 30`. The budget is the lower of sla's GPU-hours on the "
      "same nodes and sla's today (no fast nodes); kvgate as configured by default (headroom "
      "0.1), and with its prefill pool's headroom at 0.2 (`--prefill-headroom 0.2`, a pool's "
      "`headroom`). Met: >= 99% and <= 0.9x the budget.\n")
print("| seed | sla (fast) SLO | GPU-h | sla (today) SLO | GPU-h | kvgate SLO | GPU-h | x budget "
      "| goal | kvgate, prefill headroom 0.2: SLO | GPU-h | x budget | goal |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
tally = [[0, 0], [0, 0]]
for s in range(1, n + 1):
    r, b, h = load(f"pd-fast1-30-{s}"), load(f"pd-base-{s}"), load(f"pd-fast1-30-h0.2-{s}")
    if not r or not b:
        print(f"| {s} | not run | | | | | | | | | | | |")
        continue
    q, q0 = r["sla"], b["sla"]
    budget = min(q["gpu_hours"], q0["gpu_hours"])
    cells = []
    for i, k in enumerate((r["kvgate"], h["kvgate"] if h else None)):
        if not k:
            cells.append("not run | | |")
            continue
        ok = k["slo_attainment"] >= 0.99 and k["gpu_hours"] <= 0.9 * budget
        tally[i][0] += ok
        tally[i][1] += 1
        cells.append(f"{pct(k['slo_attainment'])} | {k['gpu_hours']:.1f} | "
                     f"{k['gpu_hours'] / budget:.2f} | {'met' if ok else '**not met**'}")
    print(f"| {s} | {pct(q['slo_attainment'])} | {q['gpu_hours']:.1f} | "
          f"{pct(q0['slo_attainment'])} | {q0['gpu_hours']:.1f} | {cells[0]} | {cells[1]} |")
print(f"\n- kvgate (default headroom): met on {tally[0][0]} of {tally[0][1]} seeds run "
      f"({n} asked).")
print(f"- kvgate, prefill headroom 0.2: met on {tally[1][0]} of {tally[1][1]} seeds run "
      f"({n} asked).\n")

def stress(day, title, runs):
    """Section (d) for one day (runs named day-classes-S, day-fast-S,
    day-both-S, budget from day-base-S's sla)."""
    print(f"### (d) Stress {title} day, 30% batch: classes alone, fast start alone, both\n")
    print("Fast start: `--fast-share 0.5 --fast-ready-secs 30`; classes: `--batch-share 0.3` "
          "(deadline 1800 s). The budget is sla without classes and without fast nodes (as "
          "Dynamo's planner runs today). Met: interactive >= 99.5%, every batch request within "
          "its deadline, none rejected (429) or dropped, <= 0.9x sla's GPU-hours. Without "
          "classes every request is interactive and the batch columns are empty.\n")
    print("| seed | run | interactive SLO | batch deadline met | batch rejected | batch dropped | "
          "GPU-h | x sla | goal |")
    print("|---|---|---|---|---|---|---|---|---|")
    tally = {}
    for s in range(1, n + 1):
        b = load(f"{day}-base-{s}")
        for name, lab in runs:
            r = load(f"{day}-{name}-{s}")
            if not r or not b:
                print(f"| {s} | {lab} | not run | | | | | | |")
                continue
            k, q0 = r["kvgate"], b["sla"]
            dm, rej = k["batch_deadline_met"], k.get("batch_rejected") or 0
            c = [k["slo_attainment_interactive"] >= 0.995, dm is None or dm >= 1, rej == 0,
                 k["batch_dropped"] == 0, k["gpu_hours"] <= 0.9 * q0["gpu_hours"]]
            t = tally.setdefault(lab, [0, 0])
            t[0] += all(c)
            t[1] += 1
            print(f"| {s} | {lab} | {pct(k['slo_attainment_interactive'])} | "
                  f"{'-' if dm is None else pct(dm)} | {rej} | {k['batch_dropped']} | "
                  f"{k['gpu_hours']:.1f} | {k['gpu_hours'] / q0['gpu_hours']:.2f} | "
                  f"{'met' if all(c) else '**not met**'} |")
    print()
    for lab, (m, r_) in tally.items():
        print(f"- {lab}: met on {m} of {r_} seeds run ({n} asked).")
    print()


THREE = (("classes", "classes alone"), ("fast", "fast start alone"), ("both", "both"))
stress("pd", "PD", THREE)
stress("agg", "aggregated", THREE + (("classes993", "classes alone, slo_goal 0.993"),
                                     ("both993", "both, slo_goal 0.993"),
                                     ("classes995", "classes alone, slo_goal 0.995"),
                                     ("both995", "both, slo_goal 0.995")))
