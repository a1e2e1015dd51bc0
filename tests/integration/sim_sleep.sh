#!/usr/bin/env bash
# kvgate sim's sleep mode against vLLM's request and response shapes (the
# dev routes of vllm/entrypoints/serve/dev/sleep/api_router.py, as
# docs/engines-api.md records them) and SGLang's memory release routes:
# routes only with VLLM_SERVER_DEV_MODE=1, POST /sleep -> 200 empty, the
# running stream ended with finish_reason "abort", GET /is_sleeping, a
# request sent while asleep held until the wake, a partial wake by tags, a
# cold prefix cache after waking (cached_tokens 0, AllBlocksCleared on the
# KV event stream), the wake answered no sooner than its wake time.
source "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3
B='{"model":"sim-model","messages":[{"role":"user","content":"a prompt long enough to fill several sixteen-token blocks of the prefix cache, and then some more words"}],"max_tokens":4}'
chat() { curl -s -m "$(scaled 10)" "http://127.0.0.1:$1/v1/chat/completions" -H 'content-type: application/json' -d "$B"; }
cached() { json_get "$1" "j['usage']['prompt_tokens_details']['cached_tokens']"; }

P0=$(free_port)
start_sim "$P0" --enable-sleep-mode
check "without VLLM_SERVER_DEV_MODE the routes are not there (404, as vLLM)" \
  [ "$(curl -s -XPOST "http://127.0.0.1:$P0/sleep?level=1")" = '{"detail":"Not Found"}' ]

P=$(free_port)
EP=$(free_port)
# A subscriber for the KV events, bounded: it reports whether it saw
# AllBlocksCleared within its time.
cat >"$TMP/sub.py" <<'PY'
import sys, time, zmq, msgpack
s = zmq.Context().socket(zmq.SUB)
s.connect(sys.argv[1]); s.setsockopt(zmq.SUBSCRIBE, b"")
open(sys.argv[2] + ".ready", "w").close()
end = time.time() + float(sys.argv[3])
seen = []
while time.time() < end:
    if s.poll(100):
        fr = s.recv_multipart()
        for ev in msgpack.unpackb(fr[-1], raw=False)[1]:
            seen.append(ev[0])
            if ev[0] == "AllBlocksCleared":
                open(sys.argv[2], "w").write(" ".join(seen)); sys.exit(0)
open(sys.argv[2], "w").write("none: " + " ".join(seen[:20]))
PY
VLLM_SERVER_DEV_MODE=1 "$KVG_BIN" sim --port "$P" --enable-sleep-mode --speed 10 \
  --wake-secs-level2 5 --kv-events-endpoint "tcp://127.0.0.1:$EP" >"$TMP/sim.log" 2>&1 &
PIDS+=($!)
wait_http "http://127.0.0.1:$P/v1/models" 10
$PY "$TMP/sub.py" "tcp://127.0.0.1:$EP" "$TMP/events" "$(scaled 20)" &
PIDS+=($!)
for _ in $(seq 1 "$(scaled 50)"); do [ -f "$TMP/events.ready" ] && break; sleep 0.1; done
sleep 0.3 # the subscription reaches the publisher

check "GET /is_sleeping awake: {\"is_sleeping\": false}" \
  [ "$(json_get <(curl -s "http://127.0.0.1:$P/is_sleeping") "j == {'is_sleeping': False}")" = True ]
chat "$P" >"$TMP/c1.json"
chat "$P" >"$TMP/c2.json"
check "a repeated prompt hits the prefix cache before the sleep" [ "$(cached "$TMP/c2.json")" -gt 0 ]

curl -s -N -m "$(scaled 30)" "http://127.0.0.1:$P/v1/chat/completions" -H 'content-type: application/json' \
  -d '{"model":"sim-model","messages":[{"role":"user","content":"x"}],"max_tokens":1500,"ignore_eos":true,"stream":true}' \
  >"$TMP/stream.out" &
SPID=$!
PIDS+=($SPID)
for _ in $(seq 1 "$(scaled 50)"); do grep -q '"content":"[^"]' "$TMP/stream.out" && break; sleep 0.05; done
curl -s -o "$TMP/sleep.body" -w '%{http_code}' -XPOST "http://127.0.0.1:$P/sleep?level=2" >"$TMP/sleep.code"
check "POST /sleep?level=2: 200 with an empty body" \
  [ "$(cat "$TMP/sleep.code")" = 200 -a ! -s "$TMP/sleep.body" ]
wait "$SPID"
check "the stream running then ends with finish_reason abort and [DONE] (mode abort)" \
  eval 'grep -q "\"finish_reason\":\"abort\"" "$TMP/stream.out" && tail -c 20 "$TMP/stream.out" | grep -q "data: \[DONE\]"'
check "GET /is_sleeping: true" \
  [ "$(json_get <(curl -s "http://127.0.0.1:$P/is_sleeping") "j['is_sleeping']")" = True ]
chat "$P" >"$TMP/held.json" &
HPID=$!
PIDS+=($HPID)
sleep 0.5
check "a request sent while asleep is held, not answered (vLLM's paused scheduler)" [ ! -s "$TMP/held.json" ]
t0=$(date +%s.%N)
check "POST /wake_up?tags=weights: 200" \
  [ "$(curl -s -o /dev/null -w '%{http_code}' -XPOST "http://127.0.0.1:$P/wake_up?tags=weights")" = 200 ]
t1=$(date +%s.%N)
check "the level-2 wake took at least its wake time (5 engine s at --speed 10)" \
  [ "$($PY -c "print($t1 - $t0 >= 0.45)")" = True ]
check "still sleeping while kv_cache sleeps (a partial wake)" \
  [ "$(json_get <(curl -s "http://127.0.0.1:$P/is_sleeping") "j['is_sleeping']")" = True ]
curl -s -o /dev/null -XPOST "http://127.0.0.1:$P/wake_up?tags=kv_cache"
check "awake once every tag is" \
  [ "$(json_get <(curl -s "http://127.0.0.1:$P/is_sleeping") "j['is_sleeping']")" = False ]
wait "$HPID"
check "the held request is answered after the wake" \
  [ "$(json_get "$TMP/held.json" "j['choices'][0]['finish_reason']")" = length ]
check "the prefix cache is cold after waking... (the held one found nothing)" [ "$(cached "$TMP/held.json")" = 0 ]
for _ in $(seq 1 "$(scaled 50)"); do [ -s "$TMP/events" ] && break; sleep 0.1; done
check "... and the KV events said AllBlocksCleared" grep -q AllBlocksCleared "$TMP/events"
check "level 3: a 400 naming the levels" \
  eval '[[ $(curl -s -XPOST "http://127.0.0.1:$P/sleep?level=3") == *"level must be 1 or 2"* ]]'
check "GET /sleep: 405 with Allow: POST" \
  eval '[[ $(curl -s -i "http://127.0.0.1:$P/sleep" | tr -d "\r") == *"405"*"allow: POST"* ]]'
check "an unknown tag: 400" \
  eval '[[ $(curl -s -XPOST "http://127.0.0.1:$P/wake_up?tags=gpu") == *"unknown tag"* ]]'

# SGLang's routes on its flavor.
PS=$(free_port)
start_sim "$PS" --flavor sglang --enable-sleep-mode --speed 10
check "sglang: POST /release_memory_occupation {}: 200 null" \
  [ "$(curl -s -XPOST "http://127.0.0.1:$PS/release_memory_occupation" -H 'content-type: application/json' -d '{}')" = null ]
curl -s -XPOST "http://127.0.0.1:$PS/resume_memory_occupation" -H 'content-type: application/json' \
  -d '{"tags":["weights"]}' >"$TMP/r1"
check "sglang: resume weights alone: 200 null" [ "$(cat "$TMP/r1")" = null ]
check "sglang: a bad tags value: 400 in SGLang's error shape" \
  [ "$(json_get <(curl -s -XPOST "http://127.0.0.1:$PS/resume_memory_occupation" -d '{"tags":"kv"}') "'tags' in j['error']['message']")" = True ]
curl -s -o /dev/null -XPOST "http://127.0.0.1:$PS/resume_memory_occupation" -d '{"tags":["kv_cache"]}'
check "sglang: serves again after resuming" \
  [ "$(json_get <(chat "$PS") "j['choices'][0]['finish_reason']")" = length ]
check "sglang: no vLLM /sleep route" \
  [ "$(curl -s -o /dev/null -w '%{http_code}' -XPOST "http://127.0.0.1:$PS/sleep")" = 404 ]
finish
