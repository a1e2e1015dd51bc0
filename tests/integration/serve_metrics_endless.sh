#!/usr/bin/env bash
# An engine whose /metrics and health endpoint send their head and then a
# byte every 0.2 s, forever (tests/support/trickle.py on 127.0.0.1). kvgate
# keeps one scrape and one health check in flight per worker, each ended by
# its overall deadline (--health-check-timeout-secs), so its open fds stay
# bounded instead of growing by a connection per tick; the scrape's and the
# check's failures are logged, naming the worker, once each.
. "$KVG_ROOT/tests/integration/lib.sh"

U=$(free_port) G=$(free_port)
/usr/bin/python3 "$KVG_ROOT/tests/support/trickle.py" "$U" 0.2 /metrics /endless-health >"$TMP/endless.log" 2>&1 &
PIDS+=($!)
wait_http "http://127.0.0.1:$U/v1/models" 10 || exit 1
W="http://127.0.0.1:$U"
start_serve "$G" --worker-urls "$W" --load-monitor-interval-ms 100 \
  --health-check-interval-secs 1 --health-check-timeout-secs 2 \
  --health-check-endpoint /endless-health || exit 1
LOG="$TMP/serve-$G.log"

fds() { ls "/proc/$SERVE_PID/fd" | wc -l; }
# Both deadlines passed at least once: their failures are in the log.
logged() { grep -q "$1" "$LOG"; }
SCRAPE_LINE="worker $W: /metrics scrape failed (unreachable: .*deadline"
HEALTH_LINE="health: worker $W: check failed: .*deadline"
for _ in $(seq 1 "$(scaled 100)"); do
  logged "$SCRAPE_LINE" && logged "$HEALTH_LINE" && break
  sleep 0.1
done
check "the scrape's deadline logged, naming the worker" logged "$SCRAPE_LINE"
check "the health check's deadline logged, naming the worker" logged "$HEALTH_LINE"

# Ten seconds of ticks: 100 scrapes and ~10 checks, each a new connection
# if nothing bounds them. One scrape and one check in flight (plus a
# connection being closed) is a handful of fds whatever the speed.
n0=$(fds)
sleep 10
n1=$(fds)
check "open fds bounded over 10 s of ticks ($n0 then $n1)" [ "$n1" -le $((n0 + 4)) ]
n=$(grep -c "/metrics scrape failed" "$LOG")
check "the scrape failure logged once, not per tick (got $n)" [ "$n" = 1 ]
n=$(grep -c "health: worker $W: check failed" "$LOG")
check "the check failure logged once, not per tick (got $n)" [ "$n" = 1 ]
curl -s -m 2 "http://127.0.0.1:$G/workers" >"$TMP/w.json"
check "/workers: scrape state unreachable" \
  [ "$(json_get "$TMP/w.json" "j['workers'][0]['scrape']['state']")" = unreachable ]
finish
