# The circuit breaker judges the worker, not the request. llama.cpp's server
# answers a body it cannot read (`n` other than 1, a chat message without
# content) with HTTP 500; a client without a key sending 100 of them in a row
# must leave every engine healthy and the next valid request answered
# (router/circuit.h). kvgate refuses the shapes the OpenAI API refuses itself
# (400 with param); what it forwards (n=2 is valid OpenAI) reaches the
# engines. An engine that is really gone is still ejected.
. "$(dirname "$0")/lib.sh"
CHAT=/v1/chat/completions
BAD='{"model":"m","n":2,"max_tokens":2,"messages":[{"role":"user","content":"hi"}]}'
GOOD='{"model":"m","max_tokens":2,"messages":[{"role":"user","content":"hi"}]}'
post() { curl -s -o "$TMP/b" -w '%{http_code}' -m 10 "$1$CHAT" -H 'content-type: application/json' -d "$2"; }
circuits() { # circuits GATEWAY: "healthy/circuit" of each worker
  curl -s -m 5 "$1/workers" | /usr/bin/python3 -c 'import json,sys
print(" ".join("%s/%s" % (w["healthy"], w["circuit"]) for w in json.load(sys.stdin)["workers"]))'
}
# malformed_burst GATEWAY WHAT: 100 bad requests in a row, each the engine's
# 500 relayed; then a valid one is answered and every circuit is closed.
malformed_burst() {
  local n=0 i code c
  for i in $(seq 1 100); do [ "$(post "$1" "$BAD")" = 500 ] && n=$((n + 1)); done
  check "$2: 100 malformed requests reach the engines: 100 relayed 500s (got $n)" [ "$n" = 100 ]
  code=$(post "$1" "$GOOD")
  check "$2: then a valid request is answered (got $code)" [ "$code" = 200 ]
  c=$(circuits "$1")
  check "$2: every engine healthy, circuits closed ($c)" [ "$c" = "True/closed True/closed" ]
}

# 1. Two `kvgate sim --flavor llamacpp` engines.
S1=$(free_port); S2=$(free_port); GW=$(free_port)
start_sim "$S1" --model m --flavor llamacpp || exit 1
SIM1=${PIDS[-1]}
start_sim "$S2" --model m --flavor llamacpp || exit 1
start_serve "$GW" --worker-urls "http://127.0.0.1:$S1" "http://127.0.0.1:$S2" --policy round_robin \
  --health-check-interval-secs 1 --load-monitor-interval-ms 0 || exit 1
wait_http "http://127.0.0.1:$GW/readiness" 10 || exit 1
G=http://127.0.0.1:$GW
# The sim answers as llama.cpp does: 500, llama.cpp's error body.
code=$(post "http://127.0.0.1:$S1" '{"model":"m","messages":[{"role":"user"}]}')
check "sim llamacpp: a message without content is a 500 (got $code)" [ "$code" = 500 ]
check "sim llamacpp: llama.cpp's error body" \
  [ "$(json_get "$TMP/b" 'j["error"]["type"], j["error"]["code"]')" = "server_error 500" ]
code=$(post "http://127.0.0.1:$S1" "$BAD")
check "sim llamacpp: n=2 is a 500 (got $code)" [ "$code" = 500 ]
# kvgate refuses what OpenAI refuses, naming the field.
code=$(post "$G" '{"model":"m","messages":[{"role":"user"}]}')
check "kvgate: a message without content is its own 400 (got $code)" [ "$code" = 400 ]
check "kvgate: param messages[0].content" [ "$(json_get "$TMP/b" 'j["error"]["param"]')" = "messages[0].content" ]
code=$(post "$G" '{"model":"m","messages":[{"role":"wizard","content":"hi"}]}')
check "kvgate: an unknown role is its own 400 (got $code)" [ "$code" = 400 ]
check "kvgate: param messages[0].role" [ "$(json_get "$TMP/b" 'j["error"]["param"]')" = "messages[0].role" ]
malformed_burst "$G" sims
# A dead engine is still ejected: its connect failures count.
kill -KILL "$SIM1"
for _ in $(seq 1 "$(scaled 50)"); do kill -0 "$SIM1" 2>/dev/null || break; sleep 0.1; done
ok200=0
for _ in $(seq 1 20); do [ "$(post "$G" "$GOOD")" = 200 ] && ok200=$((ok200 + 1)); done
check "engine killed: the other answers every request ($ok200/20)" [ "$ok200" = 20 ]
for _ in $(seq 1 "$(scaled 50)"); do
  c=$(circuits "$G")
  [ "${c%% *}" != True/closed ] && break
  sleep 0.1
done
check "engine killed: ejected ($c)" [ "${c%% *}" != True/closed ]

# 2. Two llama.cpp-like stand-ins (tests/fixtures/echo_engine.py answers
# what llama.cpp refuses with its 500).
E1=$(free_port); E2=$(free_port); GW2=$(free_port)
for e in "$E1" "$E2"; do
  /usr/bin/python3 "$KVG_ROOT/tests/fixtures/echo_engine.py" "$e" m &
  PIDS+=($!)
  wait_http "http://127.0.0.1:$e/v1/models" 10 || exit 1
done
start_serve "$GW2" --worker-urls "http://127.0.0.1:$E1" "http://127.0.0.1:$E2" --policy round_robin \
  --health-check-interval-secs 60 --load-monitor-interval-ms 0 || exit 1
wait_http "http://127.0.0.1:$GW2/readiness" 10 || exit 1
malformed_burst "http://127.0.0.1:$GW2" stand-ins
finish
