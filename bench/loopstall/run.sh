#!/usr/bin/env bash
# Loop stall under big prompts (issue 13, section 6): how long other requests
# on the same event loop wait while one big request is routed. kvgate serve
# --threads 1 --policy kv_aware (approximate mode: the sim publishes no KV
# events; builtin:bytes tokenizer, 16-token blocks, so a 50 MB prompt is 3.1 M
# blocks and overflows the approximate index's 2^20 bound) in front of one
# `kvgate sim`; a probe (health_probe.c) sends GET /health back to back on
# its own keep-alive connection while curl posts one 1 MB, 10 MB or 50 MB
# /v1/completions (and, at 10 MB, /v1/chat/completions) request; the probe's
# worst and p99 latency over the big request's lifetime are the stall.
#
# "before" is kvgate built from BASE (default: the merge base of HEAD and
# main) in a temporary `git worktree add --detach` under /tmp, removed at the
# end; "after" is this tree's build/release/kvgate. Both run in this one run,
# alternating per size, so that machine load hits both alike.
#   bash bench/loopstall/run.sh          writes bench/results/loopstall.md
#   BEFORE_BIN=path/kvgate bash bench/loopstall/run.sh   reuse a "before" binary
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
make -s -j2 build/release/kvgate build/release/bench/loopstall/health_probe
AFTER=$ROOT/build/release/kvgate
PROBE=$ROOT/build/release/bench/loopstall/health_probe
W=$(mktemp -d /tmp/kvgate-bench-loopstall.XXXXXX)
PIDS=()
WT=""
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  sleep 0.3
  rm -rf "$W"
  if [ -n "$WT" ]; then git -C "$ROOT" worktree remove --force "$WT" || true; fi
}
trap cleanup EXIT

BASE=${BASE:-$(git merge-base HEAD main)}
if [ -n "${BEFORE_BIN:-}" ]; then
  BEFORE=$BEFORE_BIN
else
  WT=$W/base
  git worktree add --detach "$WT" "$BASE" >/dev/null
  make -s -C "$WT" -j2 build/release/kvgate
  BEFORE=$WT/build/release/kvgate
fi

port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_up() { for _ in $(seq 1 100); do curl -sf "$1" >/dev/null && return 0; sleep 0.1; done; return 1; }

# Prompt files: random 2-8 letter words (seeded), JSON-safe.
for mb in 1 10 50; do
  python3 - "$W" "$mb" <<'PY'
import random, sys
d, mb = sys.argv[1], int(sys.argv[2])
r = random.Random(mb)
words = [''.join(r.choice('abcdefghijklmnop') for _ in range(r.randint(2, 8))) for _ in range(5000)]
out, n = [], 0
while n < mb * 1000000:
    w = r.choice(words); out.append(w); n += len(w) + 1
text = ' '.join(out)[: mb * 1000000]
open(f"{d}/p{mb}.txt", "w").write(text)
open(f"{d}/c{mb}.json", "w").write('{"model":"m","max_tokens":1,"prompt":"' + text + '"}')
open(f"{d}/h{mb}.json", "w").write('{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"' + text + '"}]}')
PY
done

# One measurement: binary $1, body file $2, path $3. Prints "max p99 probes secs".
measure() {
  local bin=$1 body=$2 path=$3 sp gp probe t0 t1 line
  sp=$(port); gp=$(port)
  "$AFTER" sim --port "$sp" --model m --speed 1000 >"$W/sim.log" 2>&1 &
  local simpid=$!; PIDS+=($simpid)
  "$bin" serve --port "$gp" --threads 1 --policy kv_aware --block-size 16 \
    --worker-urls "http://127.0.0.1:$sp" --request-timeout-secs 600 >"$W/serve.log" 2>&1 &
  local gwpid=$!; PIDS+=($gwpid)
  wait_up "http://127.0.0.1:$sp/health" && wait_up "http://127.0.0.1:$gp/readiness" || {
    echo "start failed" >&2; tail -5 "$W/serve.log" >&2; return 1; }
  sleep 0.5
  "$PROBE" 127.0.0.1 "$gp" >"$W/probe.out" &
  probe=$!
  sleep 0.3
  t0=$(date +%s.%N)
  curl -s -o "$W/ans" -w '%{http_code}' --max-time 600 "http://127.0.0.1:$gp$path" \
    -H 'content-type: application/json' --data-binary "@$body" >"$W/code" || true
  t1=$(date +%s.%N)
  sleep 0.2
  kill -TERM "$probe"; wait "$probe" || true
  kill "$gwpid" "$simpid" 2>/dev/null || true
  wait "$gwpid" "$simpid" 2>/dev/null || true
  PIDS=()
  line=$(cat "$W/probe.out")
  set -- $line
  echo "$4 $6 $2 $(python3 -c "print(f'{$t1-$t0:.2f}')") $(cat "$W/code")"
}

rows=()
for spec in "1 c /v1/completions" "10 c /v1/completions" "10 h /v1/chat/completions" \
  "50 c /v1/completions"; do
  set -- $spec
  mb=$1 kind=$2 path=$3
  b=$(measure "$BEFORE" "$W/$kind$mb.json" "$path")
  a=$(measure "$AFTER" "$W/$kind$mb.json" "$path")
  echo "$mb MB $path: before [$b] after [$a]" >&2
  rows+=("$mb MB|$path|$b|$a")
done

load=$(cut -d' ' -f1-3 /proc/loadavg)
cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')
out=bench/results/loopstall.md
mkdir -p bench/results
{
  echo "# Loop stall under big prompts"
  echo
  echo "Worst and p99 latency of GET /health on the same event loop (\`kvgate serve"
  echo "--threads 1 --policy kv_aware\`, approximate mode, builtin:bytes tokenizer,"
  echo "16-token blocks, one \`kvgate sim\`) while one big request is routed and"
  echo "answered. The probe sends /health back to back (1 ms apart) on its own"
  echo "connection. before = kvgate at \`$(git rev-parse --short "$BASE")\` (built in a temporary"
  echo "\`git worktree add --detach\`), after = this tree; measured in one run,"
  echo "alternating. Ratios are after/before (timings on a shared machine are noisy;"
  echo "the ratio is the figure to read)."
  echo
  echo "Command: \`${BEFORE_BIN:+BEFORE_BIN=$BEFORE_BIN }bash bench/loopstall/run.sh\` (BEFORE_BIN: a"
  echo "binary built from \`git worktree add --detach /tmp/... BASE\` beforehand). Machine: $(nproc) CPUs, ${cpu};"
  echo "load average at the end: ${load}. Date: $(date -u +%Y-%m-%dT%H:%MZ)."
  echo
  echo "| body | endpoint | before max ms | before p99 ms | after max ms | after p99 ms | max ratio | request s before / after | status before / after |"
  echo "|---|---|---:|---:|---:|---:|---:|---|---|"
  for r in "${rows[@]}"; do
    IFS='|' read -r size path b a <<<"$r"
    read -r bmax bp99 _ bsec bcode <<<"$b"
    read -r amax ap99 _ asec acode <<<"$a"
    ratio=$(python3 -c "print(f'{$amax/max($bmax,0.001):.3f}')")
    echo "| $size | \`$path\` | $bmax | $bp99 | $amax | $ap99 | $ratio | $bsec / $asec | $bcode / $acode |"
  done
} >"$out"
cat "$out"
