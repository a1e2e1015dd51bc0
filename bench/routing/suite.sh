#!/usr/bin/env bash
# The routing suite (issue 17): every workload users meet (llm-d's
# shared-prefix benchmark, chat moderate and overloaded, agentic sessions,
# short/long mix, heterogeneous engines, bursts, a trace replay) against every
# policy, offline, 3 seeds, medians and spreads. Writes
# bench/results/routing-suite.md and routing-suite.json. About 5-10 minutes
# on 2 cores. KVG_BIN=path overrides the kvgate binary.
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${KVG_BIN:-build/release/kvgate}
OUT=bench/results
mkdir -p "$OUT"
TMP=$(mktemp -d /tmp/kvgate-suite.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
t0=$(date +%s)
"$BIN" bench --suite routing --seeds "${SEEDS:-3}" --jobs 2 --json "$OUT/routing-suite.json" \
  --markdown "$TMP/suite.md" "$@" >/dev/null
t1=$(date +%s)
{
  echo "# Routing suite: one default for every workload"
  echo
  echo "Measured $(date -u +%Y-%m-%d) on $(nproc) cores ($(uname -m)), $((t1 - t0)) s of wall time."
  echo "Command: \`bash bench/routing/suite.sh\` (\`make bench-suite\`), i.e."
  echo "\`kvgate bench --suite routing --seeds ${SEEDS:-3} --jobs 2 --json bench/results/routing-suite.json\`."
  echo "Every figure is deterministic per seed; re-run one workload with the command shown above its table."
  echo
  sed 's/^#/##/' "$TMP/suite.md"
  [ -f bench/routing/suite-notes.md ] && { echo; cat bench/routing/suite-notes.md; }
} >"$OUT/routing-suite.md"
echo "wrote $OUT/routing-suite.md"
