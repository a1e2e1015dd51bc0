# Failures that are kvgate's own, or not the engine's answer: engines just
# killed and not yet marked unhealthy (every attempt fails to connect: 503 +
# Retry-After, not 502), circuits opening and closing (logged), an empty pool
# (503 no_workers, not 404 model_not_found), a non-stream answer cut after
# its 200 head (502 "the engine's answer was cut"), and kvgate out of file
# descriptors (503 + Retry-After, logged, the circuit left alone).
. "$(dirname "$0")/lib.sh"
S1=$(free_port); S2=$(free_port); GW=$(free_port)
start_sim "$S1" --model m || exit 1
start_sim "$S2" --model m || exit 1
SIMS=("${PIDS[@]}")
start_serve "$GW" --worker-urls "http://127.0.0.1:$S1" "http://127.0.0.1:$S2" \
  --health-check-interval-secs 60 --load-monitor-interval-ms 0 --cb-failure-threshold 4 \
  --cb-success-threshold 1 --cb-timeout-duration-secs 1 || exit 1
G=http://127.0.0.1:$GW
LOG="$TMP/serve-$GW.log"
req() { curl -s -D "$TMP/h" -o "$TMP/b" -w '%{http_code}' -m 10 "$1/v1/completions" -d '{"model":"m","prompt":"x","max_tokens":2}'; }
check "both engines answer" [ "$(req "$G")" = 200 ]
kill -KILL "${SIMS[@]}"
for p in "${SIMS[@]}"; do for _ in $(seq 1 "$(scaled 50)"); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done; done
code=$(req "$G")
check "engines just killed: 503 (got $code)" [ "$code" = 503 ]
check "engines just killed: Retry-After" grep -qi '^retry-after:' "$TMP/h"
check "engines just killed: code upstream_unreachable" [ "$(json_get "$TMP/b" 'j["error"]["code"]')" = upstream_unreachable ]
# Six attempts (5 retries), three per engine: under the breaker's 4. The
# next request opens both circuits.
code=$(req "$G")
check "then no healthy worker: 503 (got $code)" [ "$code" = 503 ]
check "circuit open logged" grep -q 'WARN.*circuit open' "$LOG"
start_sim "$S1" --model m || exit 1
sleep 1.2 # the breaker's timeout: half-open
code=$(req "$G")
check "engine back: 200 (got $code)" [ "$code" = 200 ]
check "circuit closed logged" grep -q 'circuit closed' "$LOG"
# An empty pool.
for s in "$S1" "$S2"; do curl -s -o /dev/null -X DELETE "$G/workers/http%3A%2F%2F127.0.0.1%3A$s"; done
code=$(req "$G")
check "empty pool: 503 (got $code)" [ "$code" = 503 ]
check "empty pool: code no_workers" [ "$(json_get "$TMP/b" 'j["error"]["code"]')" = no_workers ]
check "empty pool: Retry-After" grep -qi '^retry-after:' "$TMP/h"

# An engine whose non-stream answer breaks after its 200 head.
CUT=$(free_port)
/usr/bin/python3 - "$CUT" >"$TMP/cut.log" 2>&1 <<'PY' &
import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(16); s.settimeout(60)
end = time.time() + 60
while time.time() < end:
    try: c, _ = s.accept()
    except socket.timeout: break
    c.settimeout(5)
    data = b""
    while b"\r\n\r\n" not in data:
        d = c.recv(65536)
        if not d: break
        data += d
    if data.startswith(b"POST"):
        c.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n10\r\n{\"id\":\"cmpl-1\"")
    else:
        body = b'{"object":"list","data":[{"id":"m","object":"model"}]}'
        c.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%s" % (len(body), body))
    c.close()
PY
PIDS+=($!)
wait_http "http://127.0.0.1:$CUT/health" 10 || exit 1
G2P=$(free_port)
start_serve "$G2P" --worker-urls "http://127.0.0.1:$CUT" --health-check-interval-secs 60 \
  --load-monitor-interval-ms 0 || exit 1
code=$(req "http://127.0.0.1:$G2P")
check "answer cut after a 200 head: 502 (got $code)" [ "$code" = 502 ]
check "answer cut: says so" grep -q "the engine's answer was cut" "$TMP/b"

# kvgate out of file descriptors: idle client connections take them all.
S3=$(free_port); G3P=$(free_port)
start_sim "$S3" --model m || exit 1
(ulimit -n 48; exec "$KVG_BIN" serve --port "$G3P" --threads 1 --worker-urls "http://127.0.0.1:$S3" \
  --health-check-interval-secs 60 --load-monitor-interval-ms 0 --cb-failure-threshold 1) >"$TMP/serve-$G3P.out" 2>"$TMP/serve-$G3P.log" &
PIDS+=($!)
wait_http "http://127.0.0.1:$G3P/health" 10 || exit 1
/usr/bin/python3 - "$G3P" >"$TMP/emfile.out" 2>&1 <<'PY'
import socket, sys, time, json
port = int(sys.argv[1])
def conn():
    c = socket.create_connection(("127.0.0.1", port), timeout=5)
    return c
def alive(c):
    c.setblocking(False)
    try:
        return c.recv(1, socket.MSG_PEEK) != b""
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        c.setblocking(True)
held = []
for _ in range(80):
    held.append(conn())
time.sleep(0.5)
live = [c for c in held if alive(c)]
for c in held:
    if c not in live: c.close()
print("held", len(live), "of", len(held))
# The first connection was accepted; those past the limit wait in the
# backlog (kvgate pauses accepting), so no descriptor is left for the
# request's upstream connection.
c = live[0]
body = b'{"model":"m","prompt":"x","max_tokens":2}'
c.sendall(b"POST /v1/completions HTTP/1.1\r\nhost: x\r\ncontent-length: %d\r\nconnection: close\r\n\r\n%s" % (len(body), body))
resp = b""
c.settimeout(10)
while True:
    d = c.recv(65536)
    if not d: break
    resp += d
print(resp.decode(errors="replace").split("\r\n")[0])
print("retry-after" in resp.decode(errors="replace").lower())
for x in live: x.close()
time.sleep(0.3)
PY
check "out of descriptors: connections held ($(head -1 "$TMP/emfile.out"))" grep -q '^held [0-9]* of 80' "$TMP/emfile.out"
check "out of descriptors: 503 ($(sed -n 2p "$TMP/emfile.out"))" grep -q '^HTTP/1.1 503' "$TMP/emfile.out"
check "out of descriptors: Retry-After" grep -q '^True' "$TMP/emfile.out"
check "out of descriptors: logged as local" grep -q 'not the engine' "$TMP/serve-$G3P.log"
cb=$(curl -s -m 5 "http://127.0.0.1:$G3P/workers" | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["workers"][0]["circuit"])')
check "out of descriptors: the circuit stays closed ($cb)" [ "$cb" = closed ]
code=$(req "http://127.0.0.1:$G3P")
check "descriptors back: 200 (got $code)" [ "$code" = 200 ]
finish
