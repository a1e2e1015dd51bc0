#!/usr/bin/env bash
# Proxy overhead: kvgate's hop against nginx's and haproxy's, in one run on
# this machine, with wrk. Backend: nginx `return 200` (a tiny JSON answer).
#   direct to the backend; through an nginx proxy hop; through a haproxy hop;
#   through kvgate (round_robin, one worker) -- at 1 and 64 connections.
# Then the time to first byte a streaming upstream (kvgate sim) gets through
# each hop. Writes bench/results/proxy.md. Needs nginx, haproxy, wrk, curl.
#   bash bench/proxy/run.sh [SECONDS per wrk run, default 10]
set -euo pipefail
cd "$(dirname "$0")/../.."
DUR=${1:-10}
BIN=${KVG_BIN:-build/release/kvgate}
[ -x "$BIN" ] || make -s -j2 BUILD=release build/release/kvgate
W=$(mktemp -d /tmp/kvgate-bench-proxy.XXXXXX)
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; sleep 0.3; rm -rf "$W"; }
trap cleanup EXIT
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
BE=$(port); NP=$(port); HP=$(port); KP=$(port); KAP=$(port); SIMP=$(port); HSP=$(port); KSP=$(port)
HP2=$(port); KP2=$(port)

mkdir -p "$W/nginx/logs"
cat >"$W/nginx/backend.conf" <<CONF
worker_processes 1; daemon off; error_log $W/nginx/logs/be.err; pid $W/nginx/be.pid;
events { worker_connections 4096; }
http { access_log off;
  server { listen 127.0.0.1:$BE; keepalive_requests 1000000;
    location / { default_type application/json; return 200 '{"id":"x","object":"text_completion","choices":[{"text":"ok"}]}'; } } }
CONF
cat >"$W/nginx/proxy.conf" <<CONF
worker_processes 1; daemon off; error_log $W/nginx/logs/px.err; pid $W/nginx/px.pid;
events { worker_connections 4096; }
http { access_log off;
  upstream be { server 127.0.0.1:$BE; keepalive 128; }
  server { listen 127.0.0.1:$NP; keepalive_requests 1000000;
    location / { proxy_pass http://be; proxy_http_version 1.1; proxy_set_header Connection ""; } } }
CONF
cat >"$W/haproxy.cfg" <<CONF
global
  nbthread 1
  maxconn 4000
defaults
  mode http
  timeout connect 5s
  timeout client 60s
  timeout server 60s
  option http-keep-alive
frontend fe
  bind 127.0.0.1:$HP
  default_backend be
backend be
  http-reuse always
  server s1 127.0.0.1:$BE
frontend fes
  bind 127.0.0.1:$HSP
  default_backend bes
backend bes
  http-reuse always
  server s1 127.0.0.1:$SIMP
CONF
nginx -p "$W/nginx" -c "$W/nginx/backend.conf" & PIDS+=($!)
nginx -p "$W/nginx" -c "$W/nginx/proxy.conf" & PIDS+=($!)
haproxy -f "$W/haproxy.cfg" -q & PIDS+=($!)
# Both at their default thread count (the machine's cores), for a second row.
sed -e "s/nbthread 1/nbthread $(nproc)/" -e "s/127.0.0.1:$HP/127.0.0.1:$HP2/" -e '/^frontend fes/,$d' \
  "$W/haproxy.cfg" >"$W/haproxy2.cfg"
haproxy -f "$W/haproxy2.cfg" -q & PIDS+=($!)
"$BIN" serve --port "$KP2" --policy round_robin --worker-urls "http://127.0.0.1:$BE" \
  --no-access-log --log-level warn & PIDS+=($!)
"$BIN" serve --port "$KP" --threads 1 --policy round_robin --worker-urls "http://127.0.0.1:$BE" \
  --no-access-log --log-level warn & PIDS+=($!)
# The same hop with the default KV-aware policy: request parsing, chat
# rendering, tokenizing and block hashing included.
"$BIN" serve --port "$KAP" --threads 1 --policy kv_aware --worker-urls "http://127.0.0.1:$BE" \
  --no-access-log --log-level warn & PIDS+=($!)
"$BIN" sim --port "$SIMP" --model m --log-level warn & PIDS+=($!)
"$BIN" serve --port "$KSP" --threads 1 --policy round_robin --worker-urls "http://127.0.0.1:$SIMP" \
  --no-access-log --log-level warn & PIDS+=($!)
for u in "$BE/" "$NP/" "$HP/" "$HP2/" "$KP/readiness" "$KP2/readiness" "$KAP/readiness" "$HSP/v1/models" "$KSP/readiness"; do
  for i in $(seq 1 100); do curl -sf -o /dev/null "http://127.0.0.1:$u" && break; sleep 0.1; done
  curl -sf -o /dev/null "http://127.0.0.1:$u" || { echo "bench/proxy: 127.0.0.1:$u is not up" >&2; exit 1; }
done

cat >"$W/post.lua" <<'LUA'
wrk.method = "POST"
wrk.body = '{"model":"m","prompt":"hello","max_tokens":1}'
wrk.headers["Content-Type"] = "application/json"
LUA
run() { # name url conns -> "req/s p50_us p99_us"
  local out
  local t=2
  [ "$3" -lt 2 ] && t=1
  out=$(wrk -t$t -c"$3" -d"${DUR}s" --latency -s "$W/post.lua" "$2")
  local rps p50 p99
  rps=$(echo "$out" | awk '/Requests\/sec/ {print $2}')
  p50=$(echo "$out" | awk '$1=="50%" {print $2}')
  p99=$(echo "$out" | awk '$1=="99%" {print $2}')
  to_us() { python3 -c "import sys,re; v=sys.argv[1]; m=re.match(r'([0-9.]+)(us|ms|s)',v); f={'us':1,'ms':1e3,'s':1e6}[m.group(2)]; print(round(float(m.group(1))*f,1))" "$1"; }
  echo "$rps $(to_us "$p50") $(to_us "$p99")"
}
declare -A R
for c in 1 64; do
  R[direct,$c]=$(run direct "http://127.0.0.1:$BE/v1/completions" $c)
  R[nginx,$c]=$(run nginx "http://127.0.0.1:$NP/v1/completions" $c)
  R[haproxy,$c]=$(run haproxy "http://127.0.0.1:$HP/v1/completions" $c)
  R[kvgate,$c]=$(run kvgate "http://127.0.0.1:$KP/v1/completions" $c)
  R[kvgate_kv,$c]=$(run kvgate_kv "http://127.0.0.1:$KAP/v1/completions" $c)
done
R[haproxy_all,64]=$(run haproxy_all "http://127.0.0.1:$HP2/v1/completions" 64)
R[kvgate_all,64]=$(run kvgate_all "http://127.0.0.1:$KP2/v1/completions" 64)

# Streaming: time to first byte of a stream (kvgate sim, tiny profile) direct,
# through haproxy and through kvgate; median of 200 requests each.
ttfb() {
  python3 - "$1" <<'PY'
import socket, sys, time, statistics
port = int(sys.argv[1])
body = b'{"model":"m","prompt":"hello there","max_tokens":1,"stream":true}'
req = (b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
       b"Content-Length: %d\r\n\r\n" % len(body)) + body
s = socket.create_connection(("127.0.0.1", port)); s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
xs = []
for i in range(220):
    t = time.perf_counter(); s.sendall(req)
    buf = s.recv(65536); t1 = time.perf_counter()
    while b"[DONE]" not in buf: buf += s.recv(65536)
    while not buf.endswith(b"0\r\n\r\n"): buf += s.recv(65536)
    if i >= 20: xs.append((t1 - t) * 1e6)
print(round(statistics.median(xs), 1))
PY
}
T_DIRECT=$(ttfb "$SIMP"); T_HA=$(ttfb "$HSP"); T_KV=$(ttfb "$KSP")

f() { echo "${R[$1,$2]}" | awk -v k="$3" '{print $k}'; }
ratio() { python3 -c "print(f'{$1/$2:.2f}')"; }
add() { python3 -c "print(f'{$1-$2:.1f}')"; }
{
  echo "# Proxy overhead"
  echo
  echo "Produced by \`bash bench/proxy/run.sh $DUR\` on $(date -u +%Y-%m-%d), $(nproc) cores,"
  echo "wrk -t2 (-t1 at 1 connection), ${DUR}s per run, POST of a 45-byte JSON body; backend nginx \`return 200\`;"
  echo "each proxy with one worker process/thread (nginx 1 worker, haproxy nbthread 1,"
  echo "kvgate --threads 1). kvgate runs round_robin, like the others; kvgate_kv is the"
  echo "default kv_aware policy (parse, tokenize, hash, index lookup per request)."
  echo "All on this one machine: compare within the run only."
  echo
  echo "| path | conns | req/s | p50 µs | p99 µs | added p50 µs |"
  echo "|---|---:|---:|---:|---:|---:|"
  for c in 1 64; do
    for n in direct nginx haproxy kvgate kvgate_kv; do
      echo "| $n | $c | $(f $n $c 1) | $(f $n $c 2) | $(f $n $c 3) | $( [ $n = direct ] && echo - || add "$(f $n $c 2)" "$(f direct $c 2)") |"
    done
  done
  echo "| haproxy, nbthread $(nproc) | 64 | $(f haproxy_all 64 1) | $(f haproxy_all 64 2) | $(f haproxy_all 64 3) | $(add "$(f haproxy_all 64 2)" "$(f direct 64 2)") |"
  echo "| kvgate, --threads $(nproc) (its default) | 64 | $(f kvgate_all 64 1) | $(f kvgate_all 64 2) | $(f kvgate_all 64 3) | $(add "$(f kvgate_all 64 2)" "$(f direct 64 2)") |"
  echo
  echo "kvgate / haproxy req/s at 64 connections: **$(ratio "$(f kvgate 64 1)" "$(f haproxy 64 1)")** with one thread each,"
  echo "**$(ratio "$(f kvgate_all 64 1)" "$(f haproxy_all 64 1)")** with $(nproc) threads each (target ≥ 1.0)"
  echo "kvgate added p50 at 1 connection: $(add "$(f kvgate 1 2)" "$(f direct 1 2)") µs vs haproxy's $(add "$(f haproxy 1 2)" "$(f direct 1 2)") µs"
  echo
  echo "## Streaming time to first byte (kvgate sim upstream, median of 200)"
  echo
  echo "| path | TTFB µs | added µs |"
  echo "|---|---:|---:|"
  echo "| direct | $T_DIRECT | - |"
  echo "| haproxy | $T_HA | $(add "$T_HA" "$T_DIRECT") |"
  echo "| kvgate | $T_KV | $(add "$T_KV" "$T_DIRECT") |"
} | tee bench/results/proxy.md
