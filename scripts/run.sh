#!/usr/bin/env bash
# Quick start, part 1: build kvgate and run its main job on the embedded
# default: a gateway on 127.0.0.1:8080 in front of a few local simulated
# engines. Extra arguments go to `kvgate serve`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh --run
make -s -j"$(nproc)" BUILD=release build/release/kvgate
exec build/release/kvgate serve "$@"
