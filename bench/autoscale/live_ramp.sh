#!/usr/bin/env bash
# The live ramp miniature (bench/autoscale/live_ramp.py): the kvgate and
# queue planners (queue with HPA's stabilization on the miniature's clock,
# and with HPA's own 300 s) on the same ramp up and down, and one static replica on the
# ramp up alone (where the SLO breaks unscaled). JSON and SVG per run in
# build/bench-live/ramp-PLANNER.*; the tables in bench/results/autoscale-live.md.
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${KVG_BIN:-$PWD/build/release/kvgate}
mkdir -p build/bench-live
for pl in kvgate queue queue-300; do
  python3 bench/autoscale/live_ramp.py "$BIN" "$pl" "build/bench-live/ramp-$pl" >/dev/null
done
KVG_RAMP=1,24,60,0,0,0 python3 bench/autoscale/live_ramp.py "$BIN" static build/bench-live/ramp-static >/dev/null
python3 bench/autoscale/live_ramp_table.py build/bench-live/ramp-{static,kvgate,queue,queue-300}.json
