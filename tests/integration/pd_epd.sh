#!/usr/bin/env bash
# EPD (an encode stage before the PD pair) end to end on loopback, for both
# protocols, with sims in the encode, prefill and decode roles.
# vLLM (--vllm-pd-disaggregation --epd-disaggregation --encode): a text
# request never touches the encoder; an image request goes to the encoder
# first, its ec_transfer_params reach the prefill (which reads the
# embeddings from the encoder's side channel) and not the decode, and the
# answer streams from the decode. A prefill asked to read embeddings the
# encoder does not hold fails the vLLM way (500). Client gone during the
# encode: the encoder drops it. Encoder killed: a clean JSON error, and
# in-flight 0 on every worker.
# SGLang (--pd-disaggregation, prefill started with --encoder-urls): the
# router routes the pair; the prefill calls the encoder for images only;
# encoder killed: a clean error, in-flight 0.
. "$KVG_ROOT/tests/integration/lib.sh"

GW=$(free_port) E=$(free_port) ES=$(free_port) P=$(free_port) PS=$(free_port) D=$(free_port)
G="http://127.0.0.1:$GW"

ec() { curl -s -m 2 "http://127.0.0.1:$1/debug/ec" | json_field "$2"; }
json_field() { /usr/bin/python3 -c "import json,sys; print(json.load(sys.stdin)[sys.argv[1]])" "$1"; }
metric() { curl -s -m 2 "$1/metrics" | prom_value "$2"; }
text_body() { # stream
  printf '{"model":"sim-model","max_tokens":6,"ignore_eos":true,"stream":%s,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"tell me about the lazy dog"}]}' "$1"
}
image_body() { # stream image-url
  printf '{"model":"sim-model","max_tokens":6,"ignore_eos":true,"stream":%s,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":[{"type":"text","text":"what is in this picture?"},{"type":"image_url","image_url":{"url":"%s"}}]}]}' "$1" "$2"
}
status_of() { # FILE: the HTTP status line's code of a curl -D dump
  awk 'NR == 1 {print $2}' "$1"
}
wait_encoding_zero() { # PORT: the encoder has no job left (bounded)
  local i
  for i in $(seq 1 "$(scaled 50)"); do
    [ "$(ec "$1" encoding)" = 0 ] && return 0
    sleep 0.1
  done
  return 1
}

start_encoder() { # ARGS...
  start_sim "$E" --role encode --side-channel-port "$ES" "$@"
  E_PID=${PIDS[-1]}
}
start_encoder
start_sim "$P" --role prefill --side-channel-port "$PS"
start_sim "$D" --role decode
# Threshold 0: every request takes the prefill leg, so "text skips the
# encoder" is checked on a request that does go through a prefill. The
# encoder comes in vllm-router's --epd-config (the SGLang gateway below
# uses --epd-disaggregation --encode).
start_serve "$GW" --vllm-pd-disaggregation --prefill "http://127.0.0.1:$P" \
  --decode "http://127.0.0.1:$D" --epd-config "{\"encoder_urls\":[\"http://127.0.0.1:$E\"]}" \
  --pd-threshold-tokens 0 --disable-health-check
fails() { ! "$@"; }
check "--epd-config needs encoder_urls" fails "$KVG_BIN" serve --port 0 --vllm-pd-disaggregation \
  --prefill http://127.0.0.1:1 --decode http://127.0.0.1:2 --epd-config '{"encoders":[]}' 2>/dev/null
check "--epd-disaggregation needs a PD mode" \
  fails "$KVG_BIN" serve --port 0 --epd-disaggregation --encode http://127.0.0.1:1 2>/dev/null

# --- text: no encoder
curl -s -N -m 20 "$G/v1/chat/completions" -d "$(text_body true)" >"$TMP/t1"
check "vllm text: stream ends with [DONE]" grep -q '^data: \[DONE\]' "$TMP/t1"
check "vllm text: the encoder got nothing" test "$(ec "$E" encode_requests)" = 0
check "vllm text: the prefill got no ec_transfer_params" test "$(ec "$P" ec_params_received)" = 0
check "vllm text: the prefill leg ran" \
  test "$(metric "$G" "kvgate_pd_requests_total{worker=\"http://127.0.0.1:$P\",leg=\"prefill\"}")" = 1

# --- image: encoder, then prefill (with the params), then decode (without)
curl -s -N -m 20 -D "$TMP/h2" "$G/v1/chat/completions" \
  -d "$(image_body true http://img.test/cat.png)" >"$TMP/s2"
check "vllm image: stream ends with [DONE]" grep -q '^data: \[DONE\]' "$TMP/s2"
check "vllm image: answered by the decode" grep -qi "x-kvgate-worker: http://127.0.0.1:$D" "$TMP/h2"
check "vllm image: six tokens streamed" test "$(grep -c '"delta":{"content"' "$TMP/s2")" = 6
check "vllm image: the decode had the prefill's KV" kv_was_pulled "$TMP/s2"
check "vllm image: one encode on the encoder" test "$(ec "$E" encode_requests)" = 1
check "vllm image: the prefill got the ec_transfer_params" test "$(ec "$P" ec_params_received)" = 1
check "vllm image: ... and read the embeddings from the encoder" test "$(ec "$P" ec_reads_ok)" = 1
check "vllm image: the encoder served that read" test "$(ec "$E" ec_reads_ok)" = 1
check "vllm image: the decode never got ec_transfer_params (stripped)" \
  test "$(ec "$D" ec_params_received)" = 0
check "vllm image: encode leg counted on the encoder" \
  test "$(metric "$G" "kvgate_pd_requests_total{worker=\"http://127.0.0.1:$E\",leg=\"encode\"}")" = 1
check "vllm image: encode latency observed" test "$(metric "$G" kvgate_pd_encode_seconds_count)" = 1
check "vllm image: media always prefill_decode" \
  test "$(metric "$G" 'kvgate_pd_decisions_total{decision="prefill_decode"}')" = 2
curl -s -m 20 "$G/v1/chat/completions" -d "$(image_body false http://img.test/dog.png)" >"$TMP/j2"
check "vllm image, non-stream: six tokens" \
  test "$(json_get "$TMP/j2" "j['usage']['completion_tokens']")" = 6
check "vllm: the client's answer carries no ec_transfer_params" \
  test "$(json_get "$TMP/j2" "'ec_transfer_params' in j")" = False
check "in flight 0 after the happy paths" workers_idle "$G"

# --- /debug/route explains the encode pick
curl -s -m 2 "$G/debug/route" -d "$(image_body false http://img.test/cat.png)" >"$TMP/r1"
check "debug/route: the encoder for an image" \
  test "$(json_get "$TMP/r1" "j['pd']['encode']['encoder']")" = "http://127.0.0.1:$E"
check "debug/route: one media item" test "$(json_get "$TMP/r1" "j['pd']['encode']['media_items']")" = 1
curl -s -m 2 "$G/debug/route" -d "$(text_body false)" >"$TMP/r2"
check "debug/route: no encoder for text" test "$(json_get "$TMP/r2" "j['pd']['encode']['encoder']")" = None

# --- a prefill asked for embeddings the encoder does not hold: vLLM's 500
EID=$(curl -s -m 20 "http://127.0.0.1:$E/v1/chat/completions" \
  -d "$(image_body false http://img.test/owl.png)" | json_field ec_transfer_params |
  /usr/bin/python3 -c "import ast,sys; print(ast.literal_eval(sys.stdin.read())['remote_engine_id'])")
missing=$(image_body false http://img.test/never-encoded.png |
  sed "s|}]}]}|}]}],\"ec_transfer_params\":{\"remote_engine_id\":\"$EID\",\"remote_host\":\"127.0.0.1\",\"remote_port\":$ES}}|")
curl -s -m 20 -D "$TMP/h3" "http://127.0.0.1:$P/v1/chat/completions" -d "$missing" >"$TMP/j3"
check "prefill, embeddings not held: 500" test "$(status_of "$TMP/h3")" = 500
check "... saying the encoder cache has no entry" grep -q 'no encoder cache entry' "$TMP/j3"
wrong=$(image_body false http://img.test/owl.png |
  sed "s|}]}]}|}]}],\"ec_transfer_params\":{\"remote_engine_id\":\"restarted\",\"remote_host\":\"127.0.0.1\",\"remote_port\":$ES}}|")
curl -s -m 20 -D "$TMP/h4" "http://127.0.0.1:$P/v1/chat/completions" -d "$wrong" >"$TMP/j4"
check "prefill, another encoder engine id: 500" test "$(status_of "$TMP/h4")" = 500
check "... an engine id mismatch" grep -q 'engine id mismatch' "$TMP/j4"
curl -s -m 20 -D "$TMP/h5" "http://127.0.0.1:$E/v1/chat/completions" -d "$(text_body false)" >"$TMP/j5"
check "the encoder refuses text-only requests (400)" test "$(status_of "$TMP/h5")" = 400

# --- client gone during the encode: the encoder drops it, nothing leaks
kill -TERM "$E_PID"; wait "$E_PID" 2>/dev/null
start_encoder --speed 0.001 # 5 ms of encode now takes 5 s
seen=$(ec "$P" ec_params_received)
curl -s -m 1 "$G/v1/chat/completions" -d "$(image_body true http://img.test/slow.png)" >/dev/null 2>&1
check "client gone mid-encode: in flight 0" workers_idle "$G"
check "client gone mid-encode: the encoder dropped the job" wait_encoding_zero "$E"
check "client gone mid-encode: the prefill never got the request" \
  test "$(ec "$P" ec_params_received)" = "$seen"

# --- encoder killed: a clean error, in flight 0, text unaffected
kill -KILL "$E_PID"; wait "$E_PID" 2>/dev/null
curl -s -m 20 -D "$TMP/h6" "$G/v1/chat/completions" -d "$(image_body true http://img.test/cat.png)" >"$TMP/j6"
check "encoder killed: 502 or 503" grep -qE '^(502|503)$' <(status_of "$TMP/h6")
check "encoder killed: an OpenAI JSON error" \
  test "$(json_get "$TMP/j6" "j['error']['code'] in ('encode_failed', 'encode_unreachable')")" = True
check "encoder killed: the encode failure counted" test "$(metric "$G" kvgate_pd_encode_failures_total)" = 1
check "encoder killed: in flight 0 on every leg" workers_idle "$G"
curl -s -m 20 "$G/v1/chat/completions" -d "$(text_body false)" >"$TMP/j7"
check "encoder killed: text still answered" test "$(json_get "$TMP/j7" "j['usage']['completion_tokens']")" = 6

# --- SGLang: the prefill calls its encoder (--encoder-urls), the router routes the pair
GW2=$(free_port) E2=$(free_port) P2=$(free_port) B2=$(free_port) D2=$(free_port)
G2="http://127.0.0.1:$GW2"
start_sim "$E2" --role encode --side-channel-port 0 --flavor sglang
E2_PID=${PIDS[-1]}
start_sim "$P2" --role prefill --side-channel-port 0 --bootstrap-port "$B2" --flavor sglang \
  --encoder-urls "http://127.0.0.1:$E2"
start_sim "$D2" --role decode --flavor sglang
start_serve "$GW2" --pd-disaggregation --prefill "http://127.0.0.1:$P2" "$B2" \
  --decode "http://127.0.0.1:$D2" --epd-disaggregation --encode "http://127.0.0.1:$E2" \
  --disable-health-check
curl -s -N -m 20 "$G2/v1/chat/completions" -d "$(text_body true)" >"$TMP/t8"
check "sglang text: stream ends with [DONE]" grep -q '^data: \[DONE\]' "$TMP/t8"
check "sglang text: the encoder got nothing" test "$(ec "$E2" encode_requests)" = 0
check "sglang text: the prefill called no encoder" test "$(ec "$P2" encoder_calls)" = 0
curl -s -N -m 20 -D "$TMP/h9" "$G2/v1/chat/completions" \
  -d "$(image_body true http://img.test/cat.png)" >"$TMP/s9"
check "sglang image: stream ends with [DONE]" grep -q '^data: \[DONE\]' "$TMP/s9"
check "sglang image: no error in the stream" test "$(grep -c '"error"' "$TMP/s9")" = 0
check "sglang image: answered by the decode" grep -qi "x-kvgate-worker: http://127.0.0.1:$D2" "$TMP/h9"
check "sglang image: the decode had the prefill's KV" kv_was_pulled "$TMP/s9"
check "sglang image: the prefill called the encoder" test "$(ec "$P2" encoder_calls)" = 1
check "sglang image: the encoder encoded one item" test "$(ec "$E2" encode_items)" = 1
check "sglang image: the router sent no encode leg" \
  test "$(metric "$G2" "kvgate_pd_requests_total{worker=\"http://127.0.0.1:$E2\",leg=\"encode\"}")" = 0
check "sglang image: the encoder was never picked to answer" \
  test "$(metric "$G2" "kvgate_pd_requests_total{worker=\"http://127.0.0.1:$E2\",leg=\"decode\"}")" = 0
check "sglang: in flight 0 after the happy paths" workers_idle "$G2"
kill -KILL "$E2_PID"; wait "$E2_PID" 2>/dev/null
curl -s -N -m 20 "$G2/v1/chat/completions" -d "$(image_body true http://img.test/dog.png)" >"$TMP/s10"
check "sglang encoder killed: an error reaches the client" grep -q '"error"' "$TMP/s10"
check "sglang encoder killed: the prefill's encoder call failed" test "$(ec "$P2" encoder_calls_failed)" = 1
check "sglang encoder killed: in flight 0 on every leg" workers_idle "$G2"
curl -s -m 20 "$G2/v1/chat/completions" -d "$(text_body false)" >"$TMP/j11"
check "sglang encoder killed: text still answered" \
  test "$(json_get "$TMP/j11" "j['usage']['completion_tokens']")" = 6

# --- the YAML config's role: encode
GW3=$(free_port)
cat >"$TMP/epd.yaml" <<EOF
vllm_pd_disaggregation: true
epd_disaggregation: true
disable_health_check: true
workers:
  - url: http://127.0.0.1:$P
    role: prefill
  - url: http://127.0.0.1:$D
    role: decode
  - url: http://127.0.0.1:$E2
    role: encode
EOF
start_serve "$GW3" --config "$TMP/epd.yaml"
curl -s -m 2 "http://127.0.0.1:$GW3/workers" >"$TMP/w3"
check "yaml: role encode" \
  test "$(json_get "$TMP/w3" "[w['role'] for w in j['workers'] if w['url'].endswith(':$E2')]")" = "['encode']"
finish
