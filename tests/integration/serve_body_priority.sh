# A client's body `priority` never reaches an engine: vLLM's and SGLang's
# priority scheduling read it, so it would jump the engine's queue around
# kvgate's priority classes (x-kvgate-priority, the key's default). kvgate
# removes it as it removes the other members it alone sets
# (gateway/gate.c), every other member forwarded as the client wrote it.
. "$(dirname "$0")/lib.sh"
ECHO=$(free_port); GW=$(free_port)
/usr/bin/python3 "$KVG_ROOT/tests/fixtures/echo_engine.py" "$ECHO" m &
PIDS+=($!)
wait_http "http://127.0.0.1:$ECHO/v1/models" 10 || exit 1
start_serve "$GW" --worker-urls "http://127.0.0.1:$ECHO" --health-check-interval-secs 1 \
  --load-monitor-interval-ms 0 || exit 1
wait_http "http://127.0.0.1:$GW/readiness" 10 || exit 1
G=http://127.0.0.1:$GW
# received FILE: the body the engine received, as Python's dict.
received() { json_get "$1" 'json.loads(j["body"])'; }
code=$(curl -s -o "$TMP/a" -w '%{http_code}' -m 10 "$G/v1/completions" \
  -d '{"model":"m","priority":-100,"prompt":"hi","max_tokens":2}')
check "a body with priority is answered (got $code)" [ "$code" = 200 ]
check "the engine gets no priority ($(received "$TMP/a"))" \
  [ "$(json_get "$TMP/a" '"priority" in json.loads(j["body"])')" = False ]
check "every other member as sent" \
  [ "$(json_get "$TMP/a" 'json.loads(j["body"]) == {"model": "m", "prompt": "hi", "max_tokens": 2}')" = True ]
code=$(curl -s -o "$TMP/b" -w '%{http_code}' -m 10 "$G/v1/chat/completions" \
  -H 'x-kvgate-priority: sheddable' \
  -d '{"model":"m","messages":[{"role":"user","content":"hi"}],"priority":5}')
check "chat, a sheddable class: answered (got $code)" [ "$code" = 200 ]
check "chat: the engine gets no priority ($(received "$TMP/b"))" \
  [ "$(json_get "$TMP/b" '"priority" in json.loads(j["body"])')" = False ]
finish
