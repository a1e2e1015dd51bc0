#!/usr/bin/env bash
# The LoRA and cache-salt workloads of the routing suite, LoRA-aware routing
# (the defaults) against the LoRA term off, for the policies that matter
# here; writes the raw suite reports that bench/results/routing-lora-salt.md
# is written from (the tables there quote them). Offline, deterministic per
# seed; 2 jobs at a time.
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=${KVG_BIN:-build/release/kvgate}
out=${OUT:-bench/results}
pol=kv_aware,precise,prefix_affinity
"$bin" bench --suite routing --workloads multi-lora,salted-tenants --policies "$pol" \
  --seeds 3 --jobs 2 --quiet --json "$out/routing-lora-salt-on.json" >"$out/routing-lora-salt-on.md"
"$bin" bench --suite routing --workloads multi-lora,salted-tenants --policies "$pol" \
  --seeds 3 --jobs 2 --quiet --bench-flags "--router-lora-load-cost 0 --router-lora-max-workers 0" \
  --json "$out/routing-lora-salt-off.json" >"$out/routing-lora-salt-off.md"
