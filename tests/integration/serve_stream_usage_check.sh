# Every stream asks the engine for its usage (stream_options.include_usage),
# quota or not, and hides the extra usage chunk from a client that did not
# ask: the routing mode's prompt-token check (router/mode.h) compares the
# engine's usage.prompt_tokens with kvgate's own count on streams too.
. "$(dirname "$0")/lib.sh"
SP=$(free_port); GW=$(free_port)
start_sim "$SP" --model m --speed 50 || exit 1
start_serve "$GW" --threads 1 --block-size 16 --worker-urls "http://127.0.0.1:$SP" \
  --policy kv_aware --health-check-interval-secs 1 || exit 1
wait_http "http://127.0.0.1:$GW/readiness" 10 || exit 1
G=http://127.0.0.1:$GW
checks() { curl -s -m 5 "$G/workers" >"$TMP/w.json" && json_get "$TMP/w.json" 'j["workers"][0]["prompt_token_checks"]'; }
stream() { # stream FILE [STREAM_OPTIONS]: one streamed chat request, its body in FILE
  curl -s -N -o "$1" -w '%{http_code}' -m 10 "$G/v1/chat/completions" \
    -d "{\"model\":\"m\",\"stream\":true,\"max_tokens\":3,${2:+\"stream_options\":$2,}\"messages\":[{\"role\":\"user\",\"content\":\"stream $RANDOM: $(printf 'y%.0s' $(seq 1 60))\"}]}"
}
before=$(checks)
ok=0
for i in 1 2 3 4 5; do [ "$(stream "$TMP/s$i")" = 200 ] && ok=$((ok + 1)); done
check "five streams answered ($ok)" [ "$ok" = 5 ]
check "each ends with [DONE]" grep -q 'data: \[DONE\]' "$TMP/s5"
n=$(cat "$TMP"/s[1-5] | grep -c '"usage":{' || true)
check "no usage chunk reaches a client that did not ask ($n)" [ "$n" = 0 ]
after=$(checks)
check "the gateway checked their prompt tokens ($before -> $after)" [ "$((after - before))" -ge 5 ]
check "none differ" [ "$(json_get "$TMP/w.json" 'j["workers"][0]["prompt_token_mismatches"]')" = 0 ]
# A client that asks for usage still gets it.
code=$(stream "$TMP/u" '{"include_usage":true}')
check "asked: answered (got $code)" [ "$code" = 200 ]
check "asked: the usage chunk reaches the client" grep -q '"usage":{"prompt_tokens"' "$TMP/u"
finish
