# Out of file descriptors, kvgate pauses accepting instead of spinning on
# failed accepts: kvgate serve under a descriptor limit, a client that opens
# more connections than the limit allows; the failures are logged (rate-
# limited), and once the client lets go, kvgate accepts again and answers.
. "$(dirname "$0")/lib.sh"
SP=$(free_port)
start_sim "$SP" --model m || exit 1
GW=$(free_port)
# 64 descriptors: the loop, its upstream pool, logs and the listener fit;
# 120 client connections do not.
( ulimit -n 64 && exec "$KVG_BIN" serve --port "$GW" --threads 1 --worker-urls "http://127.0.0.1:$SP" \
    --health-check-interval-secs 1 ) >"$TMP/serve.out" 2>"$TMP/serve.log" &
PIDS+=($!)
wait_http "http://127.0.0.1:$GW/health" 10 || exit 1
LOG=$TMP/serve.log

# Hold 120 connections for 3 s, sending nothing (each is one descriptor in
# kvgate once accepted), then close them all.
/usr/bin/python3 - "$GW" <<'PY' &
import socket, sys, time
port = int(sys.argv[1])
socks = []
for _ in range(120):
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=2)
        socks.append(s)
    except OSError:
        pass
time.sleep(3)
for s in socks:
    s.close()
PY
HOLDER=$!
PIDS+=($HOLDER)
for _ in $(seq 1 "$(scaled 50)"); do grep -q "accept failed" "$LOG" && break; sleep 0.1; done
check "out of descriptors: the accept failure is logged" grep -q "accept failed: too many open files" "$LOG"
check "accepting pauses" grep -q "accepting paused" "$LOG"
wait "$HOLDER"
check "accepting resumes and is logged" bash -c "for i in \$(seq 1 50); do grep -q 'accepting again' '$LOG' && exit 0; sleep 0.1; done; exit 1"
check "the gateway answers again" wait_http "http://127.0.0.1:$GW/health" 10
code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$GW/v1/completions" -d '{"model":"m","prompt":"hi","max_tokens":2}')
check "a request is proxied after the back-off: $code" [ "$code" = 200 ]
n=$(grep -c "accept failed" "$LOG")
check "failures logged at most about once a second: $n lines" [ "$n" -le 8 ]
finish
