# kvgate serve when things go wrong: a hung engine, an engine that is not
# ready (no healthy worker: 503 + Retry-After), slow clients (header
# timeout), pipelined and keep-alive requests, the connection limit, long URLs.
. "$(dirname "$0")/lib.sh"
H=$(free_port); C=$(free_port); OK=$(free_port); GW=$(free_port); GW2=$(free_port)
start_sim "$H" --model hung --hang-rate 1 || exit 1
"$KVG_BIN" sim --port "$C" --model cold --cold-start-secs 60 >"$TMP/sim-$C.log" 2>&1 &
PIDS+=($!)
start_sim "$OK" --model ok --speed 20 || exit 1
wait_http "http://127.0.0.1:$C/v1/models" 10 || exit 1
start_serve "$GW" --threads 2 --worker-urls "http://127.0.0.1:$H" "http://127.0.0.1:$C" \
  "http://127.0.0.1:$OK" --policy round_robin --request-timeout-secs 1 \
  --stream-idle-timeout-secs 1 --header-timeout-secs 1 --health-check-interval-secs 1 \
  --health-failure-threshold 1 --disable-retries || exit 1
G=http://127.0.0.1:$GW
wait_http "$G/readiness" 10 || exit 1
sleep "$(scaled 0.5)" # the first health round has seen every engine

# A hung engine: the answer times out (504), the in-flight count returns to 0.
t0=$(date +%s%N)
code=$(curl -s -o "$TMP/h" -w '%{http_code}' -m 10 "$G/v1/completions" -d '{"model":"hung","prompt":"x"}')
t1=$(date +%s%N)
check "hung engine: 504" [ "$code" = 504 ]
check "hung engine: after ~1 s" [ $(( (t1 - t0) / 1000000 )) -lt 5000 ]
code=$(curl -sN -o "$TMP/hs" -w '%{http_code}' -m 10 "$G/v1/completions" -d '{"model":"hung","prompt":"x","stream":true}')
check "hung engine, stream: 504 before any byte" [ "$code" = 504 ]
inflight() { curl -s "$G/workers" | /usr/bin/python3 -c 'import json,sys; print(sum(w["in_flight"] for w in json.load(sys.stdin)["workers"]))'; }
check "hung engine: in-flight back to 0" [ "$(inflight)" = 0 ]

# An engine not ready (its /health is 503): no healthy worker for its model.
code=$(curl -s -D "$TMP/ch" -o "$TMP/c" -w '%{http_code}' "$G/v1/completions" -d '{"model":"cold","prompt":"x"}')
check "cold engine: 503" [ "$code" = 503 ]
check "cold engine: Retry-After" grep -qi '^retry-after:' "$TMP/ch"
check "cold engine: error type" [ "$(json_get "$TMP/c" 'j["error"]["code"]')" = no_healthy_worker ]

# Keep-alive: several requests on one connection; pipelined requests too.
/usr/bin/python3 - "$GW" >"$TMP/ka" <<'PY'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1]))); s.settimeout(5)
one = b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n"
s.sendall(one * 3)  # pipelined
buf = b""
while buf.count(b"HTTP/1.1 200") < 3: buf += s.recv(4096)
s.sendall(one)      # and one more, kept alive
buf = b""
while b"\r\n\r\n" not in buf or b"ok" not in buf: buf += s.recv(4096)
print("ok")
PY
check "keep-alive and pipelining" grep -q ok "$TMP/ka"

# A client that never finishes its request head gets 408 after the header timeout.
/usr/bin/python3 - "$GW" >"$TMP/slow" <<'PY'
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1]))); s.settimeout(5)
s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n")
print(s.recv(200).split(b"\r\n")[0].decode())
PY
check "slow head: 408" grep -q "408" "$TMP/slow"

# An engine still loading at start (health 503 for 2 s) serves as soon as it
# is up, not a whole --health-check-interval (60 s) later.
LATE=$(free_port); GW3=$(free_port)
"$KVG_BIN" sim --port "$LATE" --model late --cold-start-secs 2 >"$TMP/sim-$LATE.log" 2>&1 &
PIDS+=($!)
start_serve "$GW3" --threads 1 --worker-urls "http://127.0.0.1:$LATE" || exit 1
check "late engine: not ready at first" [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$GW3/readiness")" = 503 ]
check "late engine: ready within 6 s" wait_http "http://127.0.0.1:$GW3/readiness" 6

# A connection limit: the connection over the limit is closed at once.
start_serve "$GW2" --threads 1 --max-connections 2 --worker-urls "http://127.0.0.1:$OK" || exit 1
/usr/bin/python3 - "$GW2" >"$TMP/lim" <<'PY'
import socket, sys
a = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
b = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
c = socket.create_connection(("127.0.0.1", int(sys.argv[1]))); c.settimeout(5)
try:
    c.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
    print("third:", c.recv(100)[:12])
except OSError as e:
    print("third: closed")
a.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n"); a.settimeout(5)
print("first:", a.recv(100)[:12])
PY
check "max connections: the third is refused" grep -q "third: \(closed\|b''\)" "$TMP/lim"
check "max connections: the first still served" grep -q "first: b'HTTP/1.1 200" "$TMP/lim"
# An engine stand-in that answers with the length of the path it received,
# padded with ?pad=N bytes.
ECHO=$(free_port); GW4=$(free_port)
/usr/bin/python3 "$KVG_ROOT/tests/fixtures/echo_engine.py" "$ECHO" echo &
PIDS+=($!)
wait_http "http://127.0.0.1:$ECHO/v1/models" 10 || exit 1
start_serve "$GW4" --threads 1 --worker-urls "http://127.0.0.1:$ECHO" --health-check-interval-secs 1 \
  --send-buffer-bytes 4096 || exit 1
wait_http "http://127.0.0.1:$GW4/readiness" 10 || exit 1
# A long URL reaches the engine whole (the proxy must not cut it).
Q=$(head -c 5000 /dev/zero | tr '\0' a)
curl -s -o "$TMP/long" -m 10 "http://127.0.0.1:$GW4/v1/completions?x=$Q" -d '{"model":"echo","prompt":"x"}'
check "a 5,018-byte URL is forwarded whole" [ "$(json_get "$TMP/long" 'j["pathlen"]')" = 5018 ]

# A client that half-closes (shutdown(SHUT_WR), as `nc -N` does) while its
# answer is still queued gets all of it: small send and receive buffers keep
# most of the 600 KB in kvgate's write queue when the half-close arrives.
/usr/bin/python3 - "$GW4" >"$TMP/half" <<'PY'
import socket, sys, time
body = b'{"model":"echo","prompt":"x"}'
s = socket.socket(); s.settimeout(5)
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
s.connect(("127.0.0.1", int(sys.argv[1])))
s.sendall(b"POST /v1/completions?pad=600000 HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
time.sleep(1)  # the engine has answered; kvgate holds what the socket does not take
s.shutdown(socket.SHUT_WR)
buf = b""
for _ in range(100000):
    d = s.recv(65536)
    if not d: break
    buf += d
head, _, rest = buf.partition(b"\r\n\r\n")
cl = [int(h.split(b":")[1]) for h in head.split(b"\r\n") if h.lower().startswith(b"content-length:")]
print("want", cl[0] if cl else -1, "got", len(rest))
PY
check "half-closed client: the whole answer arrives ($(cat "$TMP/half"))" awk '$2 > 600000 && $2 == $4 {ok=1} END {exit !ok}' "$TMP/half"
finish
