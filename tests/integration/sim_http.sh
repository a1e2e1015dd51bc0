# kvgate sim on the wire: vLLM's API and error shapes, the three flavors'
# metrics and usage habits, prefix-cache hits in usage, KV events over ZMQ
# decoded by an independent subscriber, and fault injection.
. "$(dirname "$0")/lib.sh"
P1=$(free_port); P2=$(free_port); P3=$(free_port); P4=$(free_port); P5=$(free_port); EV=$(free_port)
start_sim "$P1" --model m --kv-events-endpoint "tcp://127.0.0.1:$EV" --speed 50 || exit 1
S=http://127.0.0.1:$P1
post() { curl -s -o "$TMP/r" -w '%{http_code}' "$S$1" -d "$2"; }

# Errors in vLLM's shape.
check "malformed JSON: 400" [ "$(post /v1/completions '{x')" = 400 ]
check "vLLM error shape" [ "$(json_get "$TMP/r" 'j["error"]["code"]')" = 400 ]
check "wrong model: 404" [ "$(post /v1/completions '{"model":"zz","prompt":"a"}')" = 404 ]
check "over the context: 400" [ "$(post /v1/completions '{"model":"m","prompt":"a","max_tokens":100000}')" = 400 ]
check "context message" grep -q "maximum context length" "$TMP/r"
check "messages not a list: 400" [ "$(post /v1/chat/completions '{"model":"m","messages":3}')" = 400 ]
check "unknown path: 404" [ "$(curl -s -o /dev/null -w '%{http_code}' "$S/nope")" = 404 ]

# Exactly max_tokens with ignore_eos; deterministic for a seed.
post /v1/completions '{"model":"m","prompt":"hello","max_tokens":17,"ignore_eos":true,"seed":5}' >/dev/null
cp "$TMP/r" "$TMP/a"
post /v1/completions '{"model":"m","prompt":"hello","max_tokens":17,"ignore_eos":true,"seed":5}' >/dev/null
check "ignore_eos: exactly max_tokens" [ "$(json_get "$TMP/a" 'j["usage"]["completion_tokens"]')" = 17 ]
check "seeded output is deterministic" [ "$(json_get "$TMP/a" 'j["choices"][0]["text"]')" = "$(json_get "$TMP/r" 'j["choices"][0]["text"]')" ]

# A repeated long prompt hits the prefix cache: cached_tokens in usage.
long=$(/usr/bin/python3 -c 'print("the quick brown fox jumps over the lazy dog " * 20)')
post /v1/completions "{\"model\":\"m\",\"prompt\":\"$long\",\"max_tokens\":2}" >/dev/null
post /v1/completions "{\"model\":\"m\",\"prompt\":\"$long\",\"max_tokens\":2}" >/dev/null
cached=$(json_get "$TMP/r" 'j["usage"]["prompt_tokens_details"]["cached_tokens"]')
check "prefix cache: cached_tokens >= 800" [ "$cached" -ge 800 ]

# Chat, streaming with usage only when asked.
curl -sN "$S/v1/chat/completions" -d '{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":4,"stream":true}' >"$TMP/s"
check "chat stream: role chunk" grep -q '"role":"assistant"' "$TMP/s"
check "chat stream: no usage unless asked" bash -c "! grep -q '\"usage\"' '$TMP/s'"
curl -sN "$S/v1/chat/completions" -d '{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":4,"stream":true,"stream_options":{"include_usage":true}}' >"$TMP/s"
check "chat stream: usage chunk when asked" grep -q '"choices":\[\],"usage"' "$TMP/s"

# Metrics: vLLM names, parseable by promtool (its only lint is the ':' vLLM uses too).
curl -s "$S/metrics" >"$TMP/m"
check "vllm metrics names" grep -q '^vllm:num_requests_waiting{model_name="m",engine="0"}' "$TMP/m"
check "cache_config_info" grep -q 'vllm:cache_config_info{block_size="16"' "$TMP/m"
promtool check metrics <"$TMP/m" >"$TMP/lint" 2>&1; rc=$?
check "promtool parses (rc 0 or lint-only 3)" [ "$rc" = 0 -o "$rc" = 3 ]
check "promtool: only the colon lint" [ "$(grep -vc "should not contain ':'" "$TMP/lint")" = 0 ]

# KV events: an independent subscriber (python3-zmq + msgpack) sees BlockStored
# for a new prompt, with 16 token ids per block.
/usr/bin/python3 - "$EV" >"$TMP/ev" 2>&1 <<'PY' &
import sys, zmq, msgpack
ctx = zmq.Context(); s = ctx.socket(zmq.SUB)
s.connect("tcp://127.0.0.1:%s" % sys.argv[1]); s.setsockopt(zmq.SUBSCRIBE, b"")
s.setsockopt(zmq.RCVTIMEO, 5000)
stored = 0
try:
    while stored == 0:
        topic, seq, payload = s.recv_multipart()
        batch = msgpack.unpackb(payload, raw=False)
        for ev in batch[1]:
            if ev[0] == "BlockStored":
                assert len(ev[3]) == len(ev[1]) * ev[4], "tokens per block"
                stored += len(ev[1])
    print("stored", stored, "seq", int.from_bytes(seq, "big"))
except zmq.Again:
    print("timeout")
PY
sub=$!
sleep "$(scaled 0.5)"
post /v1/completions "{\"model\":\"m\",\"prompt\":\"$(/usr/bin/python3 -c 'print("zebra " * 40)')\",\"max_tokens\":1}" >/dev/null
wait $sub

check "KV events decoded by a python subscriber" grep -q '^stored [1-9]' "$TMP/ev"

# Flavors: SGLang and llama.cpp metric names; llama.cpp's usage on the final chunk.
start_sim "$P2" --model m --flavor sglang || exit 1
start_sim "$P3" --model m --flavor llamacpp || exit 1
check "sglang metrics" bash -c "curl -s http://127.0.0.1:$P2/metrics | grep -q '^sglang:num_queue_reqs'"
check "llamacpp metrics" bash -c "curl -s http://127.0.0.1:$P3/metrics | grep -q '^llamacpp:requests_deferred'"
curl -sN "http://127.0.0.1:$P3/v1/completions" -d '{"model":"m","prompt":"x","max_tokens":3,"stream":true}' >"$TMP/l"
check "llamacpp: usage on the finish chunk" grep -q '"finish_reason":"length"}\],"usage"' "$TMP/l"

# Faults: always failing, cold start.
start_sim "$P4" --model m --fail-rate 1 || exit 1
check "--fail-rate 1: 500" [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$P4/v1/completions" -d '{"model":"m","prompt":"x"}')" = 500 ]
"$KVG_BIN" sim --port "$P5" --model m --cold-start-secs 1 >"$TMP/sim-$P5.log" 2>&1 &
PIDS+=($!)
wait_http "http://127.0.0.1:$P5/v1/models" 10
check "cold start: /health 503" [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$P5/health")" = 503 ]
check "cold start: then 200" wait_http "http://127.0.0.1:$P5/health" 5
finish
