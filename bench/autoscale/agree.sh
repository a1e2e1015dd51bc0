#!/usr/bin/env bash
# Issue 38, item 1's test (bench/results/autoscale-agreement.md): one
# compressed day offline (`kvgate bench --scenario diurnal`) and live
# (agree_replay.py: the same requests against `kvgate serve --autoscale`,
# the local actuator starting sims), compared by agree_compare.py. The day
# is small enough for ~11 minutes live on a 2-core machine: 600 s, 3.5
# requests/s at the mean, 2-5 replicas; every start takes 20 s (a whole
# number of the 5 s ticks) and the start-up model is scaled so that the
# planners' prior lead is those 20 s too (the warm prior's p90 for
# qwen2.5-32b, 343 s, x 0.05831); the kvgate planner's window and the
# scale-down hold on that clock (30 s). Planner kvgate without prewarm
# (the replay sets prewarm_prompts 0 and no slow start).
# SCENARIO=diurnal-pd: the PD day, a prefill and a decode pool (each 2-4
# replicas; the replay starts the sims in their roles), files named pd-*.
# Usage: bash bench/autoscale/agree.sh [SEED...]   (default 1 2 3)
# Env: BIN (build/release/kvgate), OUT (build/bench-agree), SCENARIO
# (diurnal), MEAN_RATE (3.5), KEEP=1 (keep the replay's folder).
set -u
cd "$(dirname "$0")/../.." || exit 1
BIN=${BIN:-build/release/kvgate}
OUT=${OUT:-build/bench-agree}
SCENARIO=${SCENARIO:-diurnal}
mkdir -p "$OUT"
DAY="--scenario $SCENARIO --day-secs 600 --mean-rate ${MEAN_RATE:-3.5} --startup-secs 20
  --startup-scale 0.05831 --cold-share 0 --forecast-window-secs 30 --down-hold-secs 30
  --planners kvgate-noprewarm"
if [ "$SCENARIO" = diurnal-pd ]; then
  DAY="$DAY --min-replicas 2 --max-replicas 4"
  P=pd-
else
  DAY="$DAY --min-replicas 2 --max-replicas 5"
  P=
fi
SEEDS=("$@")
[ ${#SEEDS[@]} -gt 0 ] || SEEDS=(1 2 3)
for seed in "${SEEDS[@]}"; do
  f=$P$seed
  # shellcheck disable=SC2086 # DAY is words
  "$BIN" bench $DAY --seed "$seed" --arrivals-out "$OUT/arr-$f.jsonl" --json "$OUT/off-$f.json" \
    --timeline "$OUT/off-$f.csv" --trace --out /dev/null 2>"$OUT/off-$f.trace" || exit 1
  echo "seed $seed: live from $(date -u +%H:%M:%S), $(uptime | sed 's/.*load/load/')"
  nice -n 10 python3 bench/autoscale/agree_replay.py "$BIN" "$OUT/arr-$f.jsonl" \
    "$OUT/live-$f.json" || exit 1
  echo "seed $seed: live to $(date -u +%H:%M:%S), $(uptime | sed 's/.*load/load/')"
  # The signals beside the offline trace's: the aggregated day's lines.
  tr=(--offline-trace "$OUT/off-$f.trace")
  [ -n "$P" ] && tr=()
  python3 bench/autoscale/agree_compare.py "$OUT/off-$f.csv" "$OUT/off-$f.json" \
    "$OUT/live-$f.json" "${tr[@]}" --json "$OUT/cmp-$f.json" || exit 1
done

