#!/usr/bin/env bash
# Tokenizer benchmark: kvgate vs HuggingFace tokenizers vs gpt-tokenizer (and
# tiktoken) on the same 1 MB English and 1 MB code corpora, Qwen3 and o200k,
# single thread, in one run; Qwen3 load time. Writes
# bench/results/tokenizer.md (keeping the chat-template section that another
# benchmark appends after its marker).
#   bash bench/tokenizer/run.sh
# Needs the npm test tools (scripts/install-deps.sh) and jargon-text. Not a
# test: the figures depend on the machine; compare only within one run.
set -euo pipefail
cd "$(dirname "$0")/../.."
make -j2 build/release/bench/tokenizer/tok_bench >/dev/null
tmp=$(mktemp -d /tmp/kvg-tokbench.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
python3 bench/tokenizer/corpora.py "$tmp"
node bench/tokenizer/bench.mjs "$tmp/english.txt" "$tmp/code.txt" "bash bench/tokenizer/run.sh"
