#!/usr/bin/env bash
# Priorities under overload: two slow simulated engines (4 slots each), a
# flood of standard and sheddable streams well past what they can serve, and
# meanwhile a trickle of critical requests. Reports the critical requests'
# time to first byte next to the standard ones', and how many sheddable
# requests were shed (429) instead of queueing. Writes
# bench/results/gateway-priority.md.
#   bash bench/gateway/priority.sh [SECONDS of overload, default 20]
set -euo pipefail
cd "$(dirname "$0")/../.."
SECS=${1:-20}
BIN=${KVG_BIN:-build/release/kvgate}
[ -x "$BIN" ] || make -s -j2 BUILD=release build/release/kvgate
W=$(mktemp -d /tmp/kvgate-bench-prio.XXXXXX)
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; sleep 0.3; rm -rf "$W"; }
trap cleanup EXIT
port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
S1=$(port); S2=$(port); GW=$(port)
"$BIN" sim --port "$S1" --model m --max-num-seqs 4 --log-level warn & PIDS+=($!)
"$BIN" sim --port "$S2" --model m --max-num-seqs 4 --log-level warn & PIDS+=($!)
"$BIN" serve --port "$GW" --threads 2 --policy least_load --worker-urls "http://127.0.0.1:$S1" \
  "http://127.0.0.1:$S2" --load-monitor-interval-ms 100 --no-access-log --log-level warn \
  >/dev/null & PIDS+=($!)
for i in $(seq 1 100); do curl -sf -o /dev/null "http://127.0.0.1:$GW/readiness" && break; sleep 0.1; done
G=http://127.0.0.1:$GW/v1/completions
flood() { # priority -> "status" per request (streams of 400 tokens, read to the end)
  curl -sN -o /dev/null -m 120 -w '%{http_code}\n' "$G" -H "x-kvgate-priority: $1" \
    -d '{"model":"m","prompt":"a batch job","max_tokens":400,"ignore_eos":true,"stream":true}'
}
ttft() { # priority -> "status seconds-to-first-token"
  /usr/bin/python3 - "$GW" "$1" <<'PY'
import http.client, json, sys, time
c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=120)
body = json.dumps({"model": "m", "prompt": "urgent", "max_tokens": 20, "ignore_eos": True, "stream": True})
t = time.monotonic()
c.request("POST", "/v1/completions", body, {"x-kvgate-priority": sys.argv[2], "content-type": "application/json"})
r = c.getresponse()
if r.status != 200:
    print(r.status, "nan"); sys.exit()
while True:
    line = r.readline()
    if not line or line.startswith(b"data: {"): break
print(200, f"{time.monotonic() - t:.3f}")
r.read()
PY
}
# One run: for SECS seconds a flood of 400-token batch streams arrives every
# 50 ms (about 4x what the two engines serve) with priority $1; every 0.5 s
# an interactive request (priority critical) measures its time to first token.
run() {
  local label=$1 batch=$2
  rm -f "$W/batch" "$W/crit"
  local end=$(( $(date +%s) + SECS ))
  ( while [ "$(date +%s)" -lt "$end" ]; do flood "$batch" >>"$W/batch" & sleep 0.05; done; wait ) &
  local fl=$!
  sleep 2
  while [ "$(date +%s)" -lt "$end" ]; do ttft critical >>"$W/crit"; sleep 0.5; done
  wait $fl || true
  /usr/bin/python3 - "$W/crit" "$W/batch" "$label" <<'PY'
import sys
crit = [l.split() for l in open(sys.argv[1]) if l.strip()]
ok = sorted(float(t) for s, t in crit if s == "200")
q = lambda p: ok[min(len(ok) - 1, int(p * len(ok)))] if ok else float("nan")
batch = [l.strip() for l in open(sys.argv[2]) if l.strip()]
shed = sum(1 for b in batch if b == "429")
print(f"| {sys.argv[3]} | {len(crit)} | {q(0.5):.3f} | {q(0.9):.3f} | {ok[-1] if ok else float('nan'):.3f} | {len(batch)} | {shed} |")
PY
}
R1=$(run "batch sheddable (priorities on)" sheddable)
sleep 5 # the engines drain
R2=$(run "batch standard (no priorities)" standard)
{
  echo "# Priorities under overload"
  echo
  echo "Command: \`bash bench/gateway/priority.sh $SECS\` ($(date -u +%Y-%m-%d), $(nproc) cores)."
  echo "Two \`kvgate sim\` engines (profile tiny, 4 slots each, real time) behind \`kvgate serve\`"
  echo "(least_load, engine metrics every 100 ms). For ${SECS} s a batch stream of 400 tokens"
  echo "arrives every 50 ms, about 4x what the engines serve; every 0.5 s an interactive request"
  echo "(critical, 20 tokens) measures its time to first token. Run twice: batch marked"
  echo "sheddable, then the same batch as standard traffic (what a gateway without priorities does)."
  echo
  echo "| run | critical requests | critical TTFT p50 (s) | p90 (s) | max (s) | batch requests | batch shed (429) |"
  echo "|---|---:|---:|---:|---:|---:|---:|"
  echo "$R1"
  echo "$R2"
  echo
  echo "Sheddable requests are admitted only while some engine has fewer than 5 waiting and KV"
  echo "below 80% (else 429 at once); critical ones go to engines with fewer than 50 waiting. The"
  echo "engines schedule first come first served, so shedding the batch is what keeps the"
  echo "interactive requests' queue short."
} | tee bench/results/gateway-priority.md
