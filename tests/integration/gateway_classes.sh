# Traffic classes on one saturated engine (one running slot, two waiting):
# a batch key cannot make itself interactive (403); a batch request waits in
# the gateway queue while an interactive one that came after it is served at
# once; a batch request past its deadline gets 429 batch_deadline_exceeded in
# its endpoint's error shape (OpenAI's, Anthropic's); the queue per class and
# the expiries are metrics; when the engine empties, the waiting batch
# request is served.
. "$(dirname "$0")/lib.sh"
S=$(free_port); GW=$(free_port)
start_sim "$S" --model m --max-num-seqs 1 || exit 1
KB=sk-nightly-$RANDOM$RANDOM; KI=sk-chat-$RANDOM$RANDOM
cat >"$TMP/keys.yaml" <<YAML
keys:
  - {name: nightly, hash: "$("$KVG_BIN" keys hash "$KB")", class: batch, deadline: 30m}
  - {name: chat, hash: "$("$KVG_BIN" keys hash "$KI")", admin: true}
YAML
start_serve "$GW" --keys "$TMP/keys.yaml" --worker-urls "http://127.0.0.1:$S" \
  --load-monitor-interval-ms 100 --health-check-interval-secs 1 || exit 1
G=http://127.0.0.1:$GW
wait_http "$G/readiness" 10 || exit 1
code=$(curl -s -o "$TMP/up" -w '%{http_code}' -m 5 "$G/v1/completions" -H "authorization: Bearer $KB" \
  -H 'x-kvgate-class: interactive' -d '{"model":"m","prompt":"x","max_tokens":1}')
check "a batch key asking to be interactive: 403" [ "$code" = 403 ]
check "403 class_not_allowed" [ "$(json_get "$TMP/up" 'j["error"]["code"]')" = class_not_allowed ]
code=$(curl -s -o /dev/null -w '%{http_code}' -m 5 "$G/v1/completions" -H "authorization: Bearer $KB" \
  -H 'x-kvgate-deadline: 2h' -d '{"model":"m","prompt":"x","max_tokens":1}')
check "a deadline past the key's: 403" [ "$code" = 403 ]
# Saturate: one running, two waiting in the engine (batch needs fewer than 1).
LP=()
for i in 1 2 3; do
  curl -s -m 60 -o /dev/null "$G/v1/completions" -H "authorization: Bearer $KI" \
    -d '{"model":"m","prompt":"x","max_tokens":2000,"ignore_eos":true}' &
  LP+=($!); PIDS+=($!)
done
for i in $(seq 1 "$(scaled 50)"); do
  w=$(curl -s "$G/workers" -H "authorization: Bearer $KI" | /usr/bin/python3 -c 'import json,sys; print(int(json.load(sys.stdin)["workers"][0]["engine"]["waiting"] or 0))')
  [ "$w" -ge 2 ] && break
  sleep 0.1
done
check "engine saturated (waiting $w)" [ "$w" -ge 2 ]
# Past its deadline: 429 with the reason, OpenAI's shape and Anthropic's.
curl -s -o "$TMP/exp" -w '%{http_code}' -m 10 "$G/v1/completions" -H "authorization: Bearer $KB" \
  -H 'x-kvgate-deadline: 1' -d '{"model":"m","prompt":"x","max_tokens":1}' >"$TMP/exp.code" &
E1=$!; PIDS+=($E1)
curl -s -o "$TMP/expa" -w '%{http_code}' -m 10 "$G/v1/messages" -H "x-api-key: $KB" \
  -H 'anthropic-version: 2023-06-01' -H 'x-kvgate-deadline: 1' \
  -d '{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"x"}]}' >"$TMP/expa.code" &
E2=$!; PIDS+=($E2)
# A batch request that will wait (30 min key deadline) ...
curl -s -o "$TMP/late" -w '%{http_code}' -m 60 "$G/v1/completions" -H "authorization: Bearer $KB" \
  -d '{"model":"m","prompt":"x","max_tokens":1}' >"$TMP/late.code" &
BP=$!; PIDS+=($BP)
for i in $(seq 1 "$(scaled 50)"); do
  curl -s "$G/metrics" >"$TMP/m"
  grep -q '^kvgate_admission_queue_class_waiting{class="batch"} 3' "$TMP/m" && break
  sleep 0.1
done
check "three batch requests wait (gauge per class)" grep -q '^kvgate_admission_queue_class_waiting{class="batch"} 3' "$TMP/m"
check "no interactive one waits" eval "grep -q '^kvgate_admission_queue_class_waiting{class=\"standard\"} 0' '$TMP/m' && grep -q '^kvgate_admission_queue_class_waiting{class=\"critical\"} 0' '$TMP/m'"
# ... and an interactive one after them is not queued behind them.
code=$(curl -sN -o /dev/null -w '%{http_code}' -m 5 "$G/v1/completions" -H "authorization: Bearer $KI" \
  -d '{"model":"m","prompt":"x","max_tokens":1,"stream":true}')
check "interactive after waiting batch: served (200)" [ "$code" = 200 ]
wait "$E1" "$E2"
check "batch past its deadline: 429" [ "$(cat "$TMP/exp.code")" = 429 ]
check "429 batch_deadline_exceeded (OpenAI shape)" [ "$(json_get "$TMP/exp" 'j["error"]["code"]')" = batch_deadline_exceeded ]
check "the reason names the deadline" grep -q 'deadline (1 s)' "$TMP/exp"
check "Messages: 429 in Anthropic's shape" [ "$(cat "$TMP/expa.code"):$(json_get "$TMP/expa" 'j["type"] + "/" + j["error"]["type"]')" = 429:error/rate_limit_error ]
curl -s "$G/metrics" >"$TMP/m"
check "expiries counted" grep -q '^kvgate_admission_queue_events_total{event="batch_expired"} 2' "$TMP/m"
check "the batch request still waits" kill -0 "$BP"
# The trough: the engine empties and the waiting batch request is served.
kill "${LP[@]}" 2>/dev/null
wait "$BP"
check "batch served once the engine emptied (200)" [ "$(cat "$TMP/late.code")" = 200 ]
finish
