#!/usr/bin/env bash
# What tracing costs a request: kvgate's hop (one loop thread, round_robin)
# to an nginx `return 200` backend, with wrk, in one run on this machine:
#   off        no --otlp-endpoint;
#   sampled    --trace-sample 1 to a collector that takes every batch (an
#              nginx location answering 200: the export's own cost is the
#              exporter thread's, sharing the cores);
#   dead       --trace-sample 1 to a port with nothing listening (every
#              batch fails and is dropped);
#   default    --trace-sample 0.1 (the default) to the taking collector.
# At 1 and 64 connections. Writes bench/results/trace.md. Needs nginx, wrk.
#   bash bench/trace/run.sh [SECONDS per wrk run, default 10]
set -euo pipefail
cd "$(dirname "$0")/../.."
DUR=${1:-10}
BIN=${KVG_BIN:-build/release/kvgate}
[ -x "$BIN" ] || make -s -j2 BUILD=release build/release/kvgate
W=$(mktemp -d /tmp/kvgate-bench-trace.XXXXXX)
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; sleep 0.3; rm -rf "$W"; }
trap cleanup EXIT
port() { python3 "$PWD/tests/fixtures/free_port.py"; }
BE=$(port); OK=$(port); DEAD=$(port); K0=$(port); K1=$(port); K2=$(port); K3=$(port)

mkdir -p "$W/nginx/logs"
cat >"$W/nginx/backend.conf" <<CONF
worker_processes 1; daemon off; error_log $W/nginx/logs/be.err; pid $W/nginx/be.pid;
events { worker_connections 4096; }
http { access_log off; client_max_body_size 64m;
  server { listen 127.0.0.1:$BE; keepalive_requests 1000000;
    location / { default_type application/json; return 200 '{"id":"x","object":"text_completion","choices":[{"text":"ok"}]}'; } }
  server { listen 127.0.0.1:$OK;
    location /v1/traces { default_type application/x-protobuf; return 200 ''; } } }
CONF
nginx -p "$W/nginx" -c "$W/nginx/backend.conf" & PIDS+=($!)
common=(--threads 1 --policy round_robin --worker-urls "http://127.0.0.1:$BE" --no-access-log
        --log-level error --disable-health-check)
declare -A PID
"$BIN" serve --port "$K0" "${common[@]}" & PIDS+=($!); PID[off]=$!
"$BIN" serve --port "$K1" "${common[@]}" --otlp-endpoint "http://127.0.0.1:$OK" --trace-sample 1 & PIDS+=($!); PID[sampled]=$!
"$BIN" serve --port "$K2" "${common[@]}" --otlp-endpoint "http://127.0.0.1:$DEAD" --trace-sample 1 & PIDS+=($!); PID[dead]=$!
"$BIN" serve --port "$K3" "${common[@]}" --otlp-endpoint "http://127.0.0.1:$OK" & PIDS+=($!); PID[default]=$!
for u in "$BE/" "$K0/readiness" "$K1/readiness" "$K2/readiness" "$K3/readiness"; do
  for i in $(seq 1 100); do curl -sf -o /dev/null "http://127.0.0.1:$u" && break; sleep 0.1; done
  curl -sf -o /dev/null "http://127.0.0.1:$u" || { echo "bench/trace: 127.0.0.1:$u is not up" >&2; exit 1; }
done
cat >"$W/post.lua" <<'LUA'
wrk.method = "POST"
wrk.body = '{"model":"m","prompt":"hello","max_tokens":1}'
wrk.headers["Content-Type"] = "application/json"
LUA
to_us() { python3 -c "import sys,re; v=sys.argv[1]; m=re.match(r'([0-9.]+)(us|ms|s)',v); f={'us':1,'ms':1e3,'s':1e6}[m.group(2)]; print(round(float(m.group(1))*f,1))" "$1"; }
# CPU time of a process and all its threads, in clock ticks.
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
run() { # url conns pid -> "req/s p50_us p99_us cpu_us_per_request"
  local t=2 out c0 c1 n
  [ "$2" -lt 2 ] && t=1
  c0=$(ticks "$3")
  out=$(wrk -t$t -c"$2" -d"${DUR}s" --latency -s "$W/post.lua" "$1")
  sleep 1.2 # the exporter's last batch of the run, counted with it
  c1=$(ticks "$3")
  n=$(echo "$out" | awk '/requests in/ {print $1}')
  echo "$(echo "$out" | awk '/Requests\/sec/ {print $2}') $(to_us "$(echo "$out" | awk '$1=="50%" {print $2}')") $(to_us "$(echo "$out" | awk '$1=="99%" {print $2}')") $(python3 -c "print(round(($c1-$c0)/$(getconf CLK_TCK)*1e6/$n,1))")"
}
metric() { curl -s "http://127.0.0.1:$1/metrics" | awk -v m="$2" 'index($0, m) == 1 {print $2}'; }
declare -A R
for c in 1 64; do
  R[off,$c]=$(run "http://127.0.0.1:$K0/v1/completions" $c "${PID[off]}")
  R[sampled,$c]=$(run "http://127.0.0.1:$K1/v1/completions" $c "${PID[sampled]}")
  R[dead,$c]=$(run "http://127.0.0.1:$K2/v1/completions" $c "${PID[dead]}")
  R[default,$c]=$(run "http://127.0.0.1:$K3/v1/completions" $c "${PID[default]}")
done
sleep 2
EXP=$(metric "$K1" 'kvgate_trace_spans_exported_total ')
FULL=$(metric "$K1" 'kvgate_trace_spans_dropped_total{reason="queue_full"}')
DEXP=$(metric "$K2" 'kvgate_trace_spans_dropped_total{reason="export_failed"}')
DFULL=$(metric "$K2" 'kvgate_trace_spans_dropped_total{reason="queue_full"}')
f() { echo "${R[$1,$2]}" | awk -v k="$3" '{print $k}'; }
{
  echo "# Tracing cost"
  echo
  echo "Produced by \`bash bench/trace/run.sh $DUR\` on $(date -u +%Y-%m-%d), $(nproc) cores"
  echo "(load average $(cut -d' ' -f1 /proc/loadavg) at the end: a shared machine, compare within the run only)."
  echo "wrk ${DUR}s per run, POST of a 45-byte JSON body; backend nginx \`return 200\`;"
  echo "kvgate --threads 1, round_robin; each request makes 5 spans (server, parse,"
  echo "auth, quota_admission, route) plus its upstream leg's."
  echo
  echo "CPU µs/request: the gateway process's CPU time (every thread, the exporter's"
  echo "included) over the run and the second after it, per request answered; the"
  echo "figure least bent by a busy machine."
  echo
  echo "| tracing | conns | req/s | p50 µs | p99 µs | CPU µs/request |"
  echo "|---|---:|---:|---:|---:|---:|"
  for c in 1 64; do
    for k in off sampled dead default; do
      echo "| $k | $c | $(f $k $c 1) | $(f $k $c 2) | $(f $k $c 3) | $(f $k $c 4) |"
    done
  done
  echo
  echo "sampled: ${EXP:-0} spans exported, ${FULL:-0} dropped with the queue full"
  echo "(the exporter thread shares the two cores with the loop and wrk)."
  echo "dead collector: ${DEXP:-0} spans dropped as failed exports, ${DFULL:-0} with the queue full."
} >bench/results/trace.md
cat bench/results/trace.md
