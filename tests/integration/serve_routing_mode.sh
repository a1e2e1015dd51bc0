# Routing mode per worker (exact, degraded, approximate, load_only) with its
# reason in GET /workers, POST /debug/route and kvgate_worker_routing_mode,
# and one log line per change; against `kvgate sim` engines that publish KV
# events (exact), publish them in another block size, publish none while
# events are configured, or render the chat with another template (token
# counts differ: tokenizer mismatch suspected). Each gateway fronts one
# engine, so every request reaches the worker under test.
. "$(dirname "$0")/lib.sh"

# gateway NAME SIM_ARGS -- SERVE_ARGS: a sim and a gateway in front of it;
# sets $NAME to the gateway's URL and ${NAME}_LOG to its log.
gateway() {
  local name=$1 sp gp e sim_args=() serve_args=()
  shift
  while [ $# -gt 0 ] && [ "$1" != -- ]; do sim_args+=("$1"); shift; done
  [ $# -gt 0 ] && shift
  serve_args=("$@")
  sp=$(free_port); gp=$(free_port); e=$(free_port)
  sim_args=("${sim_args[@]//EV/tcp://127.0.0.1:$e}")
  serve_args=("${serve_args[@]//EV/tcp://127.0.0.1:$e}")
  start_sim "$sp" --model m --speed 50 "${sim_args[@]}" || return 1
  start_serve "$gp" --threads 1 --block-size 16 --worker-urls "http://127.0.0.1:$sp" \
    --health-check-interval-secs 1 "${serve_args[@]}" || return 1
  wait_http "http://127.0.0.1:$gp/readiness" 10 || return 1
  printf -v "$name" '%s' "http://127.0.0.1:$gp"
  printf -v "${name}_LOG" '%s' "$TMP/serve-$gp.log"
}

# send GW N: N chat requests, each a distinct 100-character prompt.
send() { # GW N [TAG]: N distinct prompts (TAG keeps them apart from another batch's)
  local i
  for i in $(seq 1 "$2"); do
    curl -s -o /dev/null -m 5 "$1/v1/chat/completions" \
      -d "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"request ${3:-}$i: $(printf 'x%.0s' $(seq 1 90))\"}],\"max_tokens\":2}"
  done
}

mode_of() { # mode_of GW: "mode|reason" of its only worker
  curl -s "$1/workers" >"$TMP/w.json"
  json_get "$TMP/w.json" 'j["workers"][0]["routing"]["mode"] + "|" + j["workers"][0]["routing"]["reason"]'
}

# wait_mode GW MODE: until the worker's mode is MODE (bounded: 10 s).
wait_mode() {
  local i
  for i in $(seq 1 "$(scaled 50)"); do
    case "$(mode_of "$1")" in "$2|"*) return 0 ;; esac
    sleep 0.2
  done
  return 1
}

gateway EXACT --kv-events-endpoint EV -- --policy kv_aware --kv-events-endpoints EV || exit 1
gateway BS --kv-events-endpoint EV --block-size 32 -- --policy kv_aware --kv-events-endpoints EV || exit 1
gateway SILENT -- --policy kv_aware --kv-events-endpoints EV || exit 1
gateway APPROX -- --policy kv_aware || exit 1
gateway LOAD -- --policy round_robin || exit 1
printf '{"chat_template": "{%% for m in messages %%}<<{{ m.role }}>> {{ m.content }}\\n{%% endfor %%}"}' >"$TMP/tc.json"
gateway TOK --kv-events-endpoint EV --tokenizer-config "$TMP/tc.json" -- --policy kv_aware \
  --kv-events-endpoints EV || exit 1
# The same engine, and kvgate given the engine's template (vLLM's --chat-template).
printf '{%% for m in messages %%}<<{{ m.role }}>> {{ m.content }}\n{%% endfor %%}' >"$TMP/tc.jinja"
gateway TPL --kv-events-endpoint EV --tokenizer-config "$TMP/tc.json" -- --policy kv_aware \
  --kv-events-endpoints EV --chat-template "$TMP/tc.jinja" || exit 1

send "$EXACT" 25
check "events applied in sequence: exact" wait_mode "$EXACT" exact
check "exact: the reason says events were applied" grep -q "applied in sequence" <<<"$(mode_of "$EXACT")"
check "exact: token counts checked, none differ" [ "$(json_get "$TMP/w.json" 'str(j["workers"][0]["prompt_token_checks"] >= 25) + str(j["workers"][0]["prompt_token_mismatches"])')" = True0 ]

send "$BS" 3
check "engine block size 32, router 16: degraded" wait_mode "$BS" degraded
check "degraded: the reason names the block size" grep -q "block size mismatch" <<<"$(mode_of "$BS")"
check "the change is logged once" [ "$(grep -c 'routing mode exact -> degraded: block size mismatch' "$BS_LOG")" = 1 ]

send "$SILENT" 10
check "events configured, none yet after 10 answers: still exact" wait_mode "$SILENT" exact
send "$SILENT" 10 # the same ten again: 20 answers, but the repeats stored nothing
check "repeats served from the engine's cache owe no event: still exact" wait_mode "$SILENT" exact
# Distinct from the first ten: a repeated prompt is served from the engine's
# cache, stores no block and owes no event, so it does not count.
send "$SILENT" 12 b
check "events configured, none applied after 20+ answers: degraded" wait_mode "$SILENT" degraded
check "degraded: the reason says no events were applied" grep -q "none applied after" <<<"$(mode_of "$SILENT")"

send "$TOK" 25
check "the engine's prompt_tokens differ from kvgate's: degraded" wait_mode "$TOK" degraded
check "degraded: the reason suspects the tokenizer" grep -q "tokenizer mismatch suspected" <<<"$(mode_of "$TOK")"
check "mismatches counted per worker" [ "$(json_get "$TMP/w.json" 'j["workers"][0]["prompt_token_mismatches"] >= 20')" = True ]
send "$TPL" 25
check "--chat-template the engine's: exact" wait_mode "$TPL" exact
check "--chat-template: token counts checked, none differ" [ "$(json_get "$TMP/w.json" 'str(j["workers"][0]["prompt_token_checks"] >= 25) + str(j["workers"][0]["prompt_token_mismatches"])')" = True0 ]

send "$APPROX" 2
check "no events: approximate" wait_mode "$APPROX" approximate
check "round_robin reads no text: load_only" wait_mode "$LOAD" load_only

# The gauge: 1 for the current mode, 0 for the others, labelled with the model
# the worker serves.
curl -s "$BS/metrics" >"$TMP/m"
check "gauge: degraded 1" grep -qE '^kvgate_worker_routing_mode\{worker="[^"]+",model="m",mode="degraded"\} 1$' "$TMP/m"
check "gauge: exact 0" grep -qE '^kvgate_worker_routing_mode\{worker="[^"]+",model="m",mode="exact"\} 0$' "$TMP/m"
check "gauge: mismatches counter" grep -qE '^kvgate_worker_prompt_token_mismatches_total\{worker="[^"]+"\} [0-9]+' "$TMP/m"
curl -s "$TOK/metrics" >"$TMP/m"
check "counter: mismatches on the mismatched engine" grep -qE '^kvgate_worker_prompt_token_mismatches_total\{worker="[^"]+"\} [1-9][0-9]*$' "$TMP/m"

# /debug/route shows each candidate's mode.
curl -s "$EXACT/debug/route" -d '{"model":"m","messages":[{"role":"user","content":"hi"}]}' >"$TMP/d"
check "debug/route: candidate mode and reason" [ "$(json_get "$TMP/d" 'j["workers"][0]["routing"]["mode"] + str(len(j["workers"][0]["routing"]["reason"]) > 0)')" = exactTrue ]
curl -s "$SILENT/debug/route" -d '{"model":"m","messages":[{"role":"user","content":"hi"}]}' >"$TMP/d"
check "debug/route: degraded shown" [ "$(json_get "$TMP/d" 'j["workers"][0]["routing"]["mode"]')" = degraded ]
finish
