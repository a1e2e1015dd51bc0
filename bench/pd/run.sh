#!/usr/bin/env bash
# Prefill/decode disaggregation, offline: aggregated vs 1P:1D, 1P:2D, 2P:1D at
# equal pod counts, and 1P:1D by KV link, in virtual time (deterministic).
# Writes bench/results/pd.md.
#   bash bench/pd/run.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
make -s -j2 BUILD=release build/release/kvgate
mkdir -p bench/results
build/release/kvgate bench --scenario pd --requests 200 --seed 1 --out bench/results/pd.md
