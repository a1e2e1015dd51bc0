#!/usr/bin/env bash
# The PD and EPD leg deadline (--pd-prefill-timeout-secs) runs from the
# leg's dispatch: a prefill or an encoder that sends its 200 head and then a
# byte a second (tests/support/trickle.py on 127.0.0.1) does not hold the
# request for as long as it trickles. With a 2 s deadline the client gets
# its 504 in the OpenAI error shape while curl's own bound (10 s, times the
# wait scale) is far from spent, and the legs' workers are released.
. "$KVG_ROOT/tests/integration/lib.sh"

X=$(free_port) P=$(free_port) PS=$(free_port) D=$(free_port) GA=$(free_port) GB=$(free_port)
/usr/bin/python3 "$KVG_ROOT/tests/support/trickle.py" "$X" 1 POST >"$TMP/trickle.log" 2>&1 &
PIDS+=($!)
wait_http "http://127.0.0.1:$X/v1/models" 10 || exit 1
start_sim "$P" --role prefill --side-channel-port "$PS" || exit 1
start_sim "$D" --role decode || exit 1
# A: the trickler is the prefill. B: it is the encoder (vllm-router's
# --epd-config), the prefill a sim.
start_serve "$GA" --vllm-pd-disaggregation --prefill "http://127.0.0.1:$X" \
  --decode "http://127.0.0.1:$D" --pd-threshold-tokens 0 --disable-health-check \
  --pd-prefill-timeout-secs 2 || exit 1
start_serve "$GB" --vllm-pd-disaggregation --prefill "http://127.0.0.1:$P" \
  --decode "http://127.0.0.1:$D" --epd-config "{\"encoder_urls\":[\"http://127.0.0.1:$X\"]}" \
  --pd-threshold-tokens 0 --disable-health-check --pd-prefill-timeout-secs 2 || exit 1

PROMPT='{"model":"sim-model","max_tokens":4,"messages":[{"role":"user","content":"tell me about the lazy dog"}]}'
IMAGE='{"model":"sim-model","max_tokens":4,"messages":[{"role":"user","content":[{"type":"text","text":"what is in this picture?"},{"type":"image_url","image_url":{"url":"http://img.test/cat.png"}}]}]}'
BOUND=$(scaled 10)
# ask PORT BODY NAME: the answer's status in $TMP/NAME.code, its body in
# $TMP/NAME (curl gives up at BOUND seconds: status 000).
ask() {
  curl -s -m "$BOUND" -o "$TMP/$3" -w '%{http_code}' "http://127.0.0.1:$1/v1/chat/completions" \
    -d "$2" >"$TMP/$3.code"
}
err_code() { json_get "$TMP/$1" "j['error']['code'] if isinstance(j['error'].get('message'), str) else 'no message'" 2>/dev/null; }

ask "$GA" "$PROMPT" pd
check "PD: a trickling prefill ends in 504 before the ${BOUND} s bound (got $(cat "$TMP/pd.code"))" \
  [ "$(cat "$TMP/pd.code")" = 504 ]
check "PD: the OpenAI error shape, code prefill_timeout" [ "$(err_code pd)" = prefill_timeout ]
check "PD: the prefill pick released (in flight 0)" workers_idle "http://127.0.0.1:$GA"

ask "$GB" "$IMAGE" epd
check "EPD: a trickling encoder ends in 504 before the ${BOUND} s bound (got $(cat "$TMP/epd.code"))" \
  [ "$(cat "$TMP/epd.code")" = 504 ]
check "EPD: the OpenAI error shape, code encode_timeout" [ "$(err_code epd)" = encode_timeout ]
check "EPD: the encoder and prefill picks released (in flight 0)" workers_idle "http://127.0.0.1:$GB"
finish
