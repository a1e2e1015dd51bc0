#!/usr/bin/env bash
# Issue 38's "Realistic days" goal: kvgate, sla and queue over the realistic
# aggregated and PD days (the default `--scenario diurnal|diurnal-pd`) on
# seeds 1..N, one run at a time; each run's JSON into DIR, then the table
# with met / not met per seed (bench/autoscale/realistic_table.py) on stdout.
#   bash bench/autoscale/realistic.sh [N] [BIN] [DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
N=${1:-10}
BIN=${2:-build/release/kvgate}
DIR=${3:-$(mktemp -d /tmp/kvgate-realistic.XXXXXX)}
mkdir -p "$DIR"
for s in $(seq 1 "$N"); do
  for sc in diurnal-pd diurnal; do
    [ -s "$DIR/$sc-$s.json" ] && continue # a run already there is kept (resumable)
    nice -n 10 "$BIN" bench --scenario "$sc" --planners kvgate,sla,queue --seed "$s" \
      --json "$DIR/$sc-$s.json.part" > /dev/null
    mv "$DIR/$sc-$s.json.part" "$DIR/$sc-$s.json"
  done
done
python3 bench/autoscale/realistic_table.py "$DIR" "$N"
