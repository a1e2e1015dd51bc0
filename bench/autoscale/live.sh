#!/usr/bin/env bash
# The live miniature of prewarm (bench/autoscale/live.py) for seeds 1 and 2
# under least_load and prefix_affinity routing; JSON per run in
# build/bench-live/ (the figures in bench/results/autoscale-live.md).
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${KVG_BIN:-$PWD/build/release/kvgate}
mkdir -p build/bench-live
for pol in least_load prefix_affinity; do
  for seed in 1 2; do
    python3 bench/autoscale/live.py "$BIN" "$seed" "build/bench-live/$pol-$seed.json" "$pol" >/dev/null
  done
done
python3 - <<'PY'
import json, glob
for f in sorted(glob.glob("build/bench-live/*.json")):
    for r in json.load(open(f)):
        fmt = lambda v, k=1000: "n/a" if v is None else f"{v * k:.0f}"
        print(f"{f.split('/')[-1][:-5]:20} prewarm {r['prewarm_prompts']}: new replica "
              f"{r['new_replica_requests']} requests, first after {fmt(r['first_request_after_s'])} ms, "
              f"first-20 latency {fmt(r['ttft_first20_mean_s'])} ms, cached {fmt(r['cached_first20_mean'], 100)}%, "
              f"recovery {fmt(r['hit_recovery_s'])} ms; old replica {fmt(r['old_replica_ttft_mean_s'])} ms")
PY
