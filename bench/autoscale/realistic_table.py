"""The Realistic-days goal per seed from bench/autoscale/realistic.sh's JSON:
kvgate >= 99% SLO attainment, <= 0.9x sla's GPU-hours, above queue on
attainment. Seeds whose runs are missing are listed as not run."""
import json
import os
import sys

d, n = sys.argv[1], int(sys.argv[2])
for sc, name in (("diurnal", "Aggregated"), ("diurnal-pd", "PD")):
    print(f"\n### {name} (`--scenario {sc}`)\n")
    print("| seed | kvgate SLO | GPU-h | sla SLO | GPU-h | queue SLO | GPU-h | kvgate/sla GPU-h | >= 99% | <= 0.9x | > queue | goal |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    met = ran = 0
    for s in range(1, n + 1):
        f = f"{d}/{sc}-{s}.json"
        if not os.path.exists(f):
            print(f"| {s} | not run | | | | | | | | | | |")
            continue
        r = {o["planner"]: o for o in json.load(open(f))}
        k, q, u = r["kvgate"], r["sla"], r["queue"]
        c = [k["slo_attainment"] >= 0.99, k["gpu_hours"] <= 0.9 * q["gpu_hours"],
             k["slo_attainment"] > u["slo_attainment"]]
        ran += 1
        met += all(c)
        yn = lambda b: "yes" if b else "**no**"
        print(f"| {s} | {100 * k['slo_attainment']:.2f}% | {k['gpu_hours']:.1f} | "
              f"{100 * q['slo_attainment']:.2f}% | {q['gpu_hours']:.1f} | "
              f"{100 * u['slo_attainment']:.2f}% | {u['gpu_hours']:.1f} | "
              f"{k['gpu_hours'] / q['gpu_hours']:.2f} | {yn(c[0])} | {yn(c[1])} | {yn(c[2])} | "
              f"{'met' if all(c) else '**not met**'} |")
    print(f"\nMet on {met} of {ran} seeds run ({n} asked).")
