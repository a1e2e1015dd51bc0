#!/usr/bin/env bash
# Many routers in front of one set of engines (issue 37), offline: the routing
# suite's workloads (llm-d's, chat sessions, agentic sessions, LoRA, salted
# tenants) for every policy, 1/2/4/8/16 router replicas (round robin), with
# the engines' KV events and without (the approximate index), one seed each.
# Writes bench/results/fleet.json (every row) and prints the markdown tables
# (bench/routing/fleet_table.py) for bench/results/fleet.md.
# ROUTERS="1 8" KV="direct" WORKLOADS=... SEEDS=... BALANCER=random narrow it;
# KVG_BIN=path overrides the kvgate binary. About 15 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${KVG_BIN:-build/release/kvgate}
OUT=${OUT:-bench/results/fleet.json}
WORKLOADS=${WORKLOADS:-llmd-73,chat,agentic,multi-lora,salted-tenants}
TMP=$(mktemp -d /tmp/kvgate-fleet.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
for kv in ${KV:-direct none}; do
  for n in ${ROUTERS:-1 2 4 8 16}; do
    echo "fleet: kv=$kv routers=$n" >&2
    "$BIN" bench --suite routing --workloads "$WORKLOADS" --seeds "${SEEDS:-1}" --jobs 2 --quiet \
      --routers "$n" --balancer "${BALANCER:-round_robin}" --bench-flags "--kv-path $kv" \
      --json "$TMP/$kv-$n.json" "$@" >/dev/null
  done
done
python3 - "$TMP" "$OUT" <<'PY'
import glob, json, os, sys
rows = []
for f in sorted(glob.glob(os.path.join(sys.argv[1], "*.json"))):
    kv = os.path.basename(f).split("-")[0]
    for r in json.load(open(f)):
        r["kv_events"] = kv != "none"
        rows.append(r)
json.dump(rows, open(sys.argv[2], "w"), indent=1)
PY
python3 bench/routing/fleet_table.py "$OUT"
