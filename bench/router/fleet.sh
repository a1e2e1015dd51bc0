#!/usr/bin/env bash
# The KV index at fleet scale (issue 19): bench/router/bench_kv_index at the
# issue-5 size (64 workers, the baseline of the same run) and at 1,024
# workers x ~10 M blocks (9,766 blocks per worker, max_entries raised to 24 M
# so the fleet's blocks and the lookup prompts fit without eviction churn),
# then a perf profile of the fleet-scale ingest. Writes the "KV index at fleet
# scale" table at the top of bench/results/router.md and keeps the sections
# written by hand below it (from the first "### " heading).
#   bash bench/router/fleet.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
make -s -j2 build/release/bench/router/bench_kv_index
B=build/release/bench/router/bench_kv_index
out=bench/results/router.md
W=$(mktemp -d /tmp/kvgate-fleet.XXXXXX)
trap 'rm -rf "$W"' EXIT
load=$(cut -d' ' -f1-3 /proc/loadavg)
BASE=(--contention-seconds 1)
FLEET=(--workers 1024 --capacity 9766 --events 20000000 --max-entries 24000000 --contention-seconds 1)
"$B" "${BASE[@]}" >"$W/base" 2>/dev/null
"$B" "${FLEET[@]}" >"$W/fleet" 2>/dev/null
# Where ingest time goes at 1,024 workers: perf over the ingest phase only
# (its first seconds; the index fills, then evicts by BlockRemoved).
PROF=
if perf stat -e task-clock true >/dev/null 2>&1; then
  "$B" --workers 1024 --capacity 2000 --events 8000000 --lookups 100 --contention-seconds 0.1 \
    >/dev/null 2>&1 &
  bp=$!
  sleep 1
  perf record -q -F 999 -p "$bp" -o "$W/perf" -- sleep 4 >/dev/null 2>&1 || true
  wait "$bp" || true
  PROF=$(perf report -i "$W/perf" --no-children --stdio 2>/dev/null | python3 -c '
import re, sys
out = []
for line in sys.stdin:
    m = re.match(r"\s*([\d.]+)%\s+\S+\s+(\S+)\s+\[.\]\s+(\S+)", line)
    if m and len(out) < 8:
        out.append(m.group(3) + " " + m.group(1) + "%")
print("; ".join(out))')
fi
row() { grep -F "$2" "$1" | head -1 | awk -F'|' '{print $3}' | sed 's/^ *//; s/ *$//'; }
{
  echo "# Router benchmarks"
  echo
  echo "## KV index at fleet scale"
  echo
  echo "Command: \`bash bench/router/fleet.sh\` ($(date -u +%Y-%m-%dT%H:%MZ), release build, $(nproc) CPUs"
  echo "shared with other work, load average at start ${load}). bench_kv_index (see"
  echo "router-index.md for what each line measures) run twice in one go: the issue-5 size"
  echo "\`${BASE[*]}\` (64 workers, 16,384 blocks each) and the fleet"
  echo "\`${FLEET[*]}\`. Targets (issue 19): ingest >= 10 M"
  echo "block events/s per core or the measured reason why not; lookup p99 <= 10 us at 1,024"
  echo "workers."
  echo
  echo "| measure | 64 workers | 1,024 workers x ~10 M blocks |"
  echo "|---|---|---|"
  for k in "ingest, block events/s" "msgpack decode alone" "lookup 375 blocks" "same, from 6,000 token ids" \
    "lookup worst case" "same, from token ids" "worst case with cold caches" \
    "worst case through kvg_kv_index_match_tiers" \
    "ingests 0.25 M" "ingests 1.00 M" "ingests as fast" "bytes per (block, worker) entry, every" \
    "bytes per entry after"; do
    label=$(grep -F "$k" "$W/fleet" | head -1 | awk -F'|' '{print $2}' | sed 's/^ *//; s/ *$//' |
      sed 's/x 1024 workers/x N workers/; s/all 1024 workers/all N workers/')
    echo "| $label | $(row "$W/base" "$k") | $(row "$W/fleet" "$k") |"
  done
  for n in 1 2 3; do
    wr() { grep -F "writer achieved" "$1" | sed -n "${n}p" | awk -F'|' '{print $3}' | sed 's/^ *//; s/ *$//'; }
    echo "| ... writer achieved; lookups; lock waits (lookups / writer), writer run $n | $(wr "$W/base") | $(wr "$W/fleet") |"
  done
  echo
  echo "Ingest profile at 1,024 workers (perf, own samples, the ingest phase):"
  echo "${PROF:-not taken (perf unavailable)}."
  # The hand-written sections after the generated one (from its first
  # "### " heading on) are kept.
  if [ -f "$out" ]; then
    echo
    sed -n '/^### /,$p' "$out"
  fi
} >"$W/out"
mv "$W/out" "$out"
cat "$out"
