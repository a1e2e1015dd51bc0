# Priorities under a saturated pool: with every engine's queue past the
# sheddable threshold (5 waiting), a sheddable request is answered 429 at
# once, a critical one is still served (queues below 50 qualify), and a
# critical request waits in the gateway queue, then 503, when no worker can
# take it.
. "$(dirname "$0")/lib.sh"
S1=$(free_port); S2=$(free_port); GW=$(free_port)
# Slow engines with 2 slots: a few long requests pile up a queue.
start_sim "$S1" --model m --max-num-seqs 2 || exit 1
start_sim "$S2" --model m --max-num-seqs 2 || exit 1
start_serve "$GW" --threads 2 --worker-urls "http://127.0.0.1:$S1" "http://127.0.0.1:$S2" \
  --load-monitor-interval-ms 100 --health-check-interval-secs 1 --critical-max-waiting 8 \
  --queue-timeout-secs 1 || exit 1
G=http://127.0.0.1:$GW
wait_http "$G/readiness" 10 || exit 1
CP=()
for i in $(seq 1 16); do
  curl -s -m 30 -o /dev/null "$G/v1/completions" -H 'x-kvgate-priority: critical' \
    -d '{"model":"m","prompt":"x","max_tokens":1500,"ignore_eos":true}' &
  CP+=($!)
done
# Waits (bounded) until every engine's scraped queue is at least $1; sets w.
wait_waiting() {
  local i
  for i in $(seq 1 "$(scaled 50)"); do
    w=$(curl -s "$G/workers" | /usr/bin/python3 -c 'import json,sys; print(min((w["engine"]["waiting"] or 0) for w in json.load(sys.stdin)["workers"]))')
    [ "${w%.*}" -ge "$1" ] && return 0
    sleep 0.1
  done
}
wait_waiting 6
check "pool saturated (each engine >= 6 waiting): $w" [ "${w%.*}" -ge 6 ]
code=$(curl -s -o "$TMP/shed" -w '%{http_code}' -m 5 "$G/v1/completions" -H 'x-kvgate-priority: sheddable' -d '{"model":"m","prompt":"x","max_tokens":1}')
check "sheddable under saturation: 429" [ "$code" = 429 ]
check "sheddable: error type rate_limit_exceeded" [ "$(json_get "$TMP/shed" 'j["error"]["type"]')" = rate_limit_exceeded ]
# (A stream, so the 200 shows as soon as the engine takes it into its queue.)
code=$(curl -sN -o /dev/null -w '%{http_code}' -m 2 "$G/v1/completions" -H 'x-kvgate-priority: critical' -d '{"model":"m","prompt":"x","max_tokens":1,"stream":true}')
check "critical under saturation: admitted (200)" [ "$code" = 200 ]
# Fill the queues past the critical threshold (8): critical waits, then 503.
for i in $(seq 1 6); do
  curl -s -m 30 -o /dev/null "$G/v1/completions" -H 'x-kvgate-priority: critical' \
    -d '{"model":"m","prompt":"x","max_tokens":1500,"ignore_eos":true}' &
  CP+=($!)
done
wait_waiting 8
t0=$(date +%s%N)
code=$(curl -s -D "$TMP/qh" -o /dev/null -w '%{http_code}' -m 10 "$G/v1/completions" -H 'x-kvgate-priority: critical' -d '{"model":"m","prompt":"x","max_tokens":1}')
t1=$(date +%s%N)
check "no worker below the critical threshold: 503 after the queue timeout" [ "$code" = 503 ]
check "queued about 1 s" [ $(( (t1 - t0) / 1000000 )) -ge 900 ]
check "503: Retry-After" grep -qi '^retry-after:' "$TMP/qh"
curl -s "$G/metrics" | grep -q '^kvgate_admission_shed_total 1' && ok "shed counted in metrics" || bad "shed counted in metrics"
curl -s "$G/metrics" >"$TMP/m"
check "queue events are a counter" grep -q '^# TYPE kvgate_admission_queue_events_total counter' "$TMP/m"
check "the timeout counted" grep -q '^kvgate_admission_queue_events_total{event="timeout"} [1-9]' "$TMP/m"
check "waiting is a gauge of its own" grep -q '^# TYPE kvgate_admission_queue_waiting gauge' "$TMP/m"
check "no event label on the gauge" bash -c "! grep -q '^kvgate_admission_queue{' '$TMP/m'"
kill "${CP[@]}" 2>/dev/null
finish
