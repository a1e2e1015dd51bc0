#!/usr/bin/env bash
# The goal's two checks that every day has (kvgate >= 99% SLO attainment,
# kvgate's GPU-hours <= 0.9x sla's) on seeds 1..N of the aggregated and the
# PD day (default settings: half cold, half warm nodes), with each seed's
# burst times: a markdown table on stdout. Both planners run per seed and
# scenario, from `kvgate bench ... --json`.
#   bash bench/autoscale/seeds.sh [N] [BIN]   # N 10: about 4 minutes on 2 cores
set -euo pipefail
cd "$(dirname "$0")/../.."
N=${1:-10}
BIN=${2:-build/release/kvgate}
TMP=$(mktemp -d /tmp/kvgate-seeds.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
for s in $(seq 1 "$N"); do
  "$BIN" bench --scenario diurnal --stress --planners kvgate,sla --seed "$s" \
    --json "$TMP/diurnal-$s.json" > /dev/null
  # --trace for the burst times (the same seed draws the same bursts).
  "$BIN" bench --scenario diurnal-pd --stress --planners kvgate,sla --seed "$s" --trace \
    --json "$TMP/diurnal-pd-$s.json" > /dev/null 2> "$TMP/diurnal-pd-$s.trace"
done
python3 - "$TMP" "$N" <<'PY'
import json, re, sys
tmp, n = sys.argv[1], int(sys.argv[2])
print("| seed | bursts (virtual s, 90 s at 1.5x each; bold: overlapping (2.25x) or back to back) | aggregated kvgate | sla | goal | PD kvgate | sla | goal |")
print("|---|---|---|---|---|---|---|---|")
met = {"diurnal": 0, "diurnal-pd": 0}
for s in range(1, n + 1):
    row = [str(s)]
    tr = open(f"{tmp}/diurnal-pd-{s}.trace").read()
    at = sorted({int(float(x)) for x in re.findall(r"^kvgate: burst \d+ at ([0-9.]+) s", tr, re.M)})
    over = {a for a, b in zip(at, at[1:]) if b - a <= 90} | {b for a, b in zip(at, at[1:]) if b - a <= 90}
    row.append(", ".join(f"**{a:,}**" if a in over else f"{a:,}" for a in at))
    for sc in ("diurnal", "diurnal-pd"):
        r = {o["planner"]: o for o in json.load(open(f"{tmp}/{sc}-{s}.json"))}
        k, q = r["kvgate"], r["sla"]
        ok = k["slo_attainment"] >= 0.99 and k["gpu_hours"] <= 0.9 * q["gpu_hours"]
        met[sc] += ok
        row.append(f"{100 * k['slo_attainment']:.2f}% at {k['gpu_hours']:.1f} GPU-h")
        row.append(f"{100 * q['slo_attainment']:.2f}% at {q['gpu_hours']:.1f}")
        row.append("met" if ok else "**not met**")
    print("| " + " | ".join(row) + " |")
print()
print(f"Both checks met on {met['diurnal']} of {n} aggregated days and {met['diurnal-pd']} of {n} PD days.")
PY
