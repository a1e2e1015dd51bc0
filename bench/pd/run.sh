#!/usr/bin/env bash
# Prefill/decode disaggregation, offline, in virtual time (deterministic):
# aggregated vs P:D splits at 2, 3 and 4 pods (and a decode-heavy workload
# at 3), 1P:1D by KV link, the decode pick with and without locality, and
# overload with and without early rejection. Writes bench/results/pd.md.
# bench/pd/live.sh then appends the live miniature over HTTP (LIVE=0: not).
#   bash bench/pd/run.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
make -s -j2 BUILD=release build/release/kvgate
mkdir -p bench/results
build/release/kvgate bench --scenario pd --requests 200 --seed 1 --out bench/results/pd.md
# The live miniature (~1.5 min of real processes); LIVE=0 skips it.
if [ "${LIVE:-1}" != 0 ]; then
  KVG_BIN=build/release/kvgate bash bench/pd/live.sh
fi
