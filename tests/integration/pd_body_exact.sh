# The bodies kvgate edits reach the engines with every byte it did not edit
# as the client wrote it (base/json_edit.h): through vLLM PD mode, a prompt
# holding \u0000 and an integer past 2^53 reach the prefill (max_tokens 1,
# its kv_transfer_params) and the decode (the prefill's params) intact, where
# a reprint from cJSON's tree once cut the string at the NUL and rounded the
# integer to a double. Also the gate's own edits (a client's priority
# removed, include_usage added to a stream) on the aggregated path, where a
# body with a \u0000 and a priority was once refused (400): the strict check
# could not read the NUL.
# Engines: tests/fixtures/echo_engine.py, logging each body it receives.
. "$(dirname "$0")/lib.sh"
P=$(free_port) D=$(free_port) A=$(free_port) GW=$(free_port) GA=$(free_port)
for port in "$P" "$D" "$A"; do
  ECHO_BODIES="$TMP/bodies-$port" /usr/bin/python3 "$KVG_ROOT/tests/fixtures/echo_engine.py" "$port" m &
  PIDS+=($!)
  wait_http "http://127.0.0.1:$port/v1/models" 10 || exit 1
done
start_serve "$GW" --vllm-pd-disaggregation --prefill "http://127.0.0.1:$P" none \
  --decode "http://127.0.0.1:$D" --pd-threshold-tokens 1 --disable-health-check \
  --load-monitor-interval-ms 0 || exit 1
G=http://127.0.0.1:$GW

# The client's members, as written (spacing included), that must arrive so.
PROMPT='"prompt" : "a\u0000b \udbff\udfff the quick brown fox jumps over the lazy dog"'
SEED='"seed":12345678901234567890123'
LOGIT='"logit_bias": {"50256": -1e2}'
BODY='{"model":"m", '"$PROMPT"', '"$SEED"', "max_tokens":5,'"$LOGIT"'}'

# has FILE TEXT: the first body in FILE holds TEXT byte for byte.
has() { head -n 1 "$1" | grep -qF -- "$2"; }
# body_get FILE EXPR: EXPR (python, j the document) on the first body in FILE.
body_get() { head -n 1 "$1" >"$1.first" && json_get "$1.first" "$2"; }

code=$(curl -s -o "$TMP/r1" -w '%{http_code}' -m 20 "$G/v1/completions" -d "$BODY")
check "the PD request is answered (got $code: $(head -c 300 "$TMP/r1"))" [ "$code" = 200 ]
check "the prefill got one body" test "$(wc -l <"$TMP/bodies-$P" 2>/dev/null)" = 1
check "the decode got one body" test "$(wc -l <"$TMP/bodies-$D" 2>/dev/null)" = 1
for leg in P D; do
  f=$TMP/bodies-${!leg}
  check "$leg: the prompt's bytes with \\u0000 and U+10FFFF intact ($(head -c 300 "$f"))" has "$f" "$PROMPT"
  check "$leg: the integer past 2^53 as sent" has "$f" "$SEED"
  check "$leg: an untouched member's spacing and number text as sent" has "$f" "$LOGIT"
  check "$leg: the model as sent" has "$f" '{"model":"m", '
  check "$leg: the prompt reads as the client's" \
    [ "$(body_get "$f" 'j["prompt"] == "a\x00b \U0010ffff the quick brown fox jumps over the lazy dog"')" = True ]
done
check "prefill: max_tokens 1, not streamed" \
  [ "$(body_get "$TMP/bodies-$P" '(j["max_tokens"], j["stream"])')" = "(1, False)" ]
check "prefill: its kv_transfer_params" \
  [ "$(body_get "$TMP/bodies-$P" 'j["kv_transfer_params"]["do_remote_decode"]')" = True ]
check "decode: the client's max_tokens" [ "$(body_get "$TMP/bodies-$D" 'j["max_tokens"]')" = 5 ]
check "decode: the prefill's kv_transfer_params" \
  [ "$(body_get "$TMP/bodies-$D" 'j["kv_transfer_params"]["remote_engine_id"]')" = echo ]
check "decode: one kv_transfer_params member" \
  [ "$(head -n 1 "$TMP/bodies-$D" | grep -o '"kv_transfer_params"' | wc -l)" = 1 ]

# EPD: the encode leg and the prefill after it (the encoder's
# ec_transfer_params set) keep the client's bytes too.
E=$(free_port) EP=$(free_port) ED=$(free_port) GE=$(free_port)
ECHO_ROLE=encode ECHO_BODIES="$TMP/bodies-$E" /usr/bin/python3 "$KVG_ROOT/tests/fixtures/echo_engine.py" "$E" m &
PIDS+=($!)
for port in "$EP" "$ED"; do
  ECHO_BODIES="$TMP/bodies-$port" /usr/bin/python3 "$KVG_ROOT/tests/fixtures/echo_engine.py" "$port" m &
  PIDS+=($!)
done
for port in "$E" "$EP" "$ED"; do wait_http "http://127.0.0.1:$port/v1/models" 10 || exit 1; done
start_serve "$GE" --vllm-pd-disaggregation --prefill "http://127.0.0.1:$EP" \
  --decode "http://127.0.0.1:$ED" --epd-config "{\"encoder_urls\":[\"http://127.0.0.1:$E\"]}" \
  --pd-threshold-tokens 0 --disable-health-check --load-monitor-interval-ms 0 || exit 1
TEXT='"text" : "a\u0000b \udbff\udfff what is here?"'
CHAT='{"model":"m", '"$SEED"',"max_tokens":4,"messages":[{"role":"user","content":[{"type":"text",'"$TEXT"'},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}}]}]}'
code=$(curl -s -o "$TMP/r4" -w '%{http_code}' -m 20 "http://127.0.0.1:$GE/v1/chat/completions" -d "$CHAT")
check "the EPD request is answered (got $code: $(head -c 300 "$TMP/r4"))" [ "$code" = 200 ]
for port in "$E" "$EP" "$ED"; do
  f=$TMP/bodies-$port
  check "EPD leg on $port: the text's bytes intact ($(head -c 300 "$f" 2>/dev/null))" has "$f" "$TEXT"
  check "EPD leg on $port: the integer past 2^53 as sent" has "$f" "$SEED"
done
check "encode leg: max_tokens 1" [ "$(body_get "$TMP/bodies-$E" 'j["max_tokens"]')" = 1 ]
check "prefill leg: the encoder's ec_transfer_params" \
  [ "$(body_get "$TMP/bodies-$EP" 'j["ec_transfer_params"]["mm_hashes"]')" = "['h0']" ]

# The aggregated path: the gate's edits on the client's bytes.
start_serve "$GA" --worker-urls "http://127.0.0.1:$A" --disable-health-check \
  --load-monitor-interval-ms 0 || exit 1
GAU=http://127.0.0.1:$GA
PROMPT2='"prompt" : "a\\u0000b \udbff\udfff the quick brown fox"'
code=$(curl -s -o "$TMP/r2" -w '%{http_code}' -m 20 "$GAU/v1/completions" \
  -d '{"model":"m", '"$PROMPT2"', "priority":3, '"$SEED"',"stream":true}')
check "a stream with priority is answered (got $code)" [ "$code" = 200 ]
f=$TMP/bodies-$A
check "gate: the prompt's bytes intact ($(head -c 300 "$f"))" has "$f" "$PROMPT2"
check "gate: the integer past 2^53 as sent" has "$f" "$SEED"
code=$(curl -s -o "$TMP/r3" -w '%{http_code}' -m 20 "$GAU/v1/completions" \
  -d '{"model":"m", '"$PROMPT"', "priority":3, '"$SEED"',"max_tokens":2}')
check "a NUL in a prompt beside priority is answered (got $code)" [ "$code" = 200 ]
check "gate: that prompt's bytes intact ($(tail -n 1 "$f" | head -c 300))" grep -qF -- "$PROMPT" "$f"
check "gate: priority removed, include_usage asked" \
  [ "$(body_get "$f" '("priority" in j, j["stream_options"]["include_usage"])')" = "(False, True)" ]
finish
