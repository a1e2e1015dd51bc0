#!/usr/bin/env bash
# Session affinity over prefill/decode pairs (issue 17's "PD aware"): with
# --prefill-policy session_affinity, every turn of a session goes to the same
# prefill engine, even when the turns share no prefix (a prefix policy
# would spread them: each starts differently), other sessions spread over
# both prefills, and the decode still gets the pulled KV.
. "$KVG_ROOT/tests/integration/lib.sh"

GW=$(free_port) P1=$(free_port) S1=$(free_port) P2=$(free_port) S2=$(free_port) D=$(free_port)
start_sim "$P1" --model m --role prefill --side-channel-port "$S1" || exit 1
start_sim "$P2" --model m --role prefill --side-channel-port "$S2" || exit 1
start_sim "$D" --model m --role decode || exit 1
start_serve "$GW" --vllm-pd-disaggregation --prefill "http://127.0.0.1:$P1" none \
  --prefill "http://127.0.0.1:$P2" none --decode "http://127.0.0.1:$D" \
  --prefill-policy session_affinity --pd-threshold-tokens 64 --disable-health-check || exit 1
G="http://127.0.0.1:$GW"
PROMPT=$(printf 'the quick brown fox jumps over the lazy dog %.0s' $(seq 1 12)) # ~530 tokens
sent() { # URL: requests the gateway sent to that worker
  curl -s -m 5 "$G/workers" >"$TMP/w.json"
  json_get "$TMP/w.json" "[w['processed'] for w in j['workers'] if w['url'] == '$1'][0]"
}
codes=""
for turn in 1 2 3 4 5; do
  c=$(curl -s -m 20 -o "$TMP/r$turn" -w '%{http_code}' "$G/v1/completions" -H 'x-session-id: sess-a' \
    -d "{\"model\":\"m\",\"prompt\":\"turn $turn: $PROMPT\",\"max_tokens\":4}")
  codes="$codes$c "
done
check "five turns answered" [ "$codes" = "200 200 200 200 200 " ]
a1=$(sent "http://127.0.0.1:$P1"); a2=$(sent "http://127.0.0.1:$P2")
check "every turn of the session on one prefill ($a1 / $a2)" bash -c "[ \$(( $a1 * $a2 )) = 0 ] && [ \$(( $a1 + $a2 )) = 5 ]"
check "the decode got the pulled KV" [ "$(json_get "$TMP/r5" 'j["usage"]["prompt_tokens_details"]["cached_tokens"] > 400')" = True ]
# 24 sessions: each lands on a prefill by the ring (160 points per worker,
# an even split), so all on one has odds of 2^-23, not 2^-5 as with six.
for s in $(seq 1 24); do
  curl -s -m 20 -o /dev/null "$G/v1/completions" -H "x-session-id: sess-$s" \
    -d "{\"model\":\"m\",\"prompt\":\"$PROMPT $s\",\"max_tokens\":4}"
done
b1=$(sent "http://127.0.0.1:$P1"); b2=$(sent "http://127.0.0.1:$P2")
check "other sessions use the other prefill too ($b1 / $b2)" bash -c "[ $b1 -gt $a1 ] || [ $b2 -gt $a2 ]"
check "both prefills serve sessions" bash -c "[ $b1 -gt 0 ] && [ $b2 -gt 0 ]"
finish
