#!/usr/bin/env bash
# CPU cost of one `kvgate sim` process serving 128 concurrent streams at
# --speed 1 (real time). Target: under 10% of one core. The clients are 128
# curl processes; only the sim's own CPU time is counted (from /proc).
#   bash bench/sim/streams.sh [SECONDS, default 20]
set -euo pipefail
cd "$(dirname "$0")/../.."
SECS=${1:-20}
BIN=${KVG_BIN:-build/release/kvgate}
[ -x "$BIN" ] || make -s -j2 BUILD=release build/release/kvgate
PORT=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
PROFILE=${PROFILE:-qwen3-32b-h100-tp2}
"$BIN" sim --port "$PORT" --model m --profile "$PROFILE" --log-level warn &
SIM=$!
CURLS=()
cleanup() { kill "${CURLS[@]}" 2>/dev/null || true; kill "$SIM" 2>/dev/null || true; }
trap cleanup EXIT
for i in $(seq 1 100); do curl -sf -o /dev/null "http://127.0.0.1:$PORT/v1/models" && break; sleep 0.1; done
body='{"model":"m","prompt":"tell me a long story about a cat and a dog","max_tokens":30000,"ignore_eos":true,"stream":true}'
for i in $(seq 1 128); do
  curl -sN -o /dev/null "http://127.0.0.1:$PORT/v1/completions" -d "$body" &
  CURLS+=($!)
done
sleep 3 # every stream admitted and decoding
ticks() { awk '{print $14 + $15}' "/proc/$SIM/stat"; }
running() { curl -s "http://127.0.0.1:$PORT/metrics" | awk '/^vllm:num_requests_running/ {print $2}'; }
HZ=$(getconf CLK_TCK)
t0=$(ticks); w0=$(date +%s.%N); r0=$(running)
sleep "$SECS"
t1=$(ticks); w1=$(date +%s.%N); r1=$(running)
gen=$(curl -s "http://127.0.0.1:$PORT/metrics" | awk '/^vllm:generation_tokens_total/ {print $2}')
pct=$(/usr/bin/python3 -c "print(f'{($t1-$t0)/$HZ/($w1-$w0)*100:.1f}')")
{
  echo "# kvgate sim: CPU for 128 concurrent streams"
  echo
  echo "Command: \`bash bench/sim/streams.sh $SECS\` ($(date -u +%Y-%m-%d), $(nproc) cores; profile $PROFILE, --speed 1)."
  echo "128 curl clients stream completions of up to 30,000 tokens (ignore_eos); the sim's own"
  echo "CPU time (utime + stime from /proc) over ${SECS} s of steady decoding."
  echo
  echo "| running requests (start / end) | sim CPU, % of one core | generated tokens at the end |"
  echo "|---:|---:|---:|"
  echo "| $r0 / $r1 | **$pct** | $gen |"
  echo
  echo "Target: under 10% of a core."
} | tee bench/results/sim-streams.md
