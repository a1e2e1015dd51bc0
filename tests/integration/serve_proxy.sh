# kvgate serve in front of real `kvgate sim` processes: the OpenAI surface,
# streaming, errors, retries, failure cases, drain and reload.
. "$(dirname "$0")/lib.sh"

S1=$(free_port); S2=$(free_port); S3=$(free_port); GW=$(free_port)
start_sim "$S1" --model m1 --speed 20 || exit 1
start_sim "$S2" --model m1 --speed 20 || exit 1
# A worker that cuts every stream after 5 tokens (a crash mid-stream).
start_sim "$S3" --model m3 --speed 20 --disconnect-after-tokens 5 || exit 1
cat >"$TMP/gw.yaml" <<YAML
policy: round_robin
threads: 2
health_check_interval_secs: 1
health_failure_threshold: 1
health_success_threshold: 1
workers:
  - url: http://127.0.0.1:$S1
  - url: http://127.0.0.1:$S2
  - url: http://127.0.0.1:$S3
YAML
start_serve "$GW" --config "$TMP/gw.yaml" --max-payload-size 100000 --max-header-size 8192 || exit 1
wait_http "http://127.0.0.1:$GW/readiness" 10 || exit 1
G=http://127.0.0.1:$GW

# 1. non-stream chat, headers
curl -s -D "$TMP/h1" -o "$TMP/b1" "$G/v1/chat/completions" -H 'x-request-id: abc-123' \
  -d '{"model":"m1","messages":[{"role":"user","content":"hello"}],"max_tokens":8,"ignore_eos":true}'
check "chat: 200 with 8 tokens" [ "$(json_get "$TMP/b1" 'j["usage"]["completion_tokens"]')" = 8 ]
check "chat: x-kvgate-worker header" grep -qi '^x-kvgate-worker: http://127.0.0.1:' "$TMP/h1"
check "chat: client x-request-id kept" grep -qi '^x-request-id: abc-123' "$TMP/h1"

# 2. stream: chunks, usage, DONE
curl -sN "$G/v1/completions" -d '{"model":"m1","prompt":"once upon","max_tokens":6,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true}}' >"$TMP/s1"
check "stream: 6 token chunks" [ "$(grep -c '"text"' "$TMP/s1")" = 6 ]
check "stream: usage chunk" grep -q '"completion_tokens":6' "$TMP/s1"
check "stream: ends with [DONE]" [ "$(tail -c 15 "$TMP/s1" | tr -d '\n')" = "data: [DONE]" ]

# 3. round robin over m1's two workers
for i in 1 2 3 4; do
  curl -s -D - -o /dev/null "$G/v1/completions" -d '{"model":"m1","prompt":"x","max_tokens":1}' | grep -i '^x-kvgate-worker'
done | sort | uniq -c >"$TMP/rr"
check "round_robin: both m1 workers used twice" [ "$(awk '$1==2' "$TMP/rr" | wc -l)" = 2 ]

# 4. models union
curl -s "$G/v1/models" >"$TMP/models"
check "models: union of m1 and m3" [ "$(json_get "$TMP/models" 'sorted(d["id"] for d in j["data"])')" = "['m1', 'm3']" ]

# 5. errors
code() { curl -s -o "$TMP/err" -w '%{http_code}' "$@"; }
check "malformed JSON: 400" [ "$(code "$G/v1/chat/completions" -d '{nope')" = 400 ]
check "error body is OpenAI-style" [ "$(json_get "$TMP/err" 'sorted(j["error"].keys())')" = "['code', 'message', 'param', 'type']" ]
check "unknown model: 404" [ "$(code "$G/v1/chat/completions" -d '{"model":"nope","messages":[]}')" = 404 ]
/usr/bin/python3 -c 'print("{\"model\":\"m1\",\"prompt\":\"" + "a"*200000 + "\"}")' >"$TMP/big.json"
check "oversize body: 413" [ "$(code "$G/v1/completions" --data-binary @"$TMP/big.json")" = 413 ]
check "oversize header: 431" [ "$(code "$G/health" -H "x-big: $(head -c 10000 /dev/zero | tr '\0' a)")" = 431 ]
printf 'GARBAGE / HTTP/1.1\r\n\r\n' >"$TMP/bad.req"
resp=$(timeout 5 /usr/bin/python3 -c 'import socket,sys; s=socket.create_connection(("127.0.0.1",int(sys.argv[1]))); s.sendall(open(sys.argv[2],"rb").read()); print(s.recv(200).split(b"\r\n")[0].decode())' "$GW" "$TMP/bad.req")
check "malformed HTTP: 400" [ "${resp#HTTP/1.1 }" != "$resp" -a "$(echo "$resp" | awk '{print $2}')" = 400 ]
check "engine 400 relayed" [ "$(code "$G/v1/completions" -d '{"model":"m1","prompt":"x","max_tokens":-1}')" = 400 ]
check "expect 100-continue" [ "$(curl -s -o /dev/null -w '%{http_code}' -H 'Expect: 100-continue' "$G/v1/completions" -d '{"model":"m1","prompt":"x","max_tokens":1}')" = 200 ]

# 6. a worker dying mid-stream: SSE error event, clean end, in-flight back to 0
curl -sN "$G/v1/completions" -d '{"model":"m3","prompt":"x","max_tokens":50,"ignore_eos":true,"stream":true}' >"$TMP/cut"
check "mid-stream death: error event" grep -q '"error"' "$TMP/cut"
check "mid-stream death: [DONE] after it" grep -q 'data: \[DONE\]' "$TMP/cut"
inflight() { curl -s "$G/workers" | /usr/bin/python3 -c 'import json,sys; print(sum(w["in_flight"] for w in json.load(sys.stdin)["workers"]))'; }
check "mid-stream death: in-flight 0" [ "$(inflight)" = 0 ]

# 7. client disconnects mid-stream: in-flight back to 0
timeout 0.5 curl -sN "$G/v1/completions" -d '{"model":"m1","prompt":"x","max_tokens":2000,"ignore_eos":true,"stream":true}' >/dev/null
sleep 0.3
check "client gone: in-flight 0" [ "$(inflight)" = 0 ]

# 8. a worker refusing connections: requests still succeed (retried elsewhere)
kill -KILL "${PIDS[1]}"
okc=0
for i in 1 2 3 4; do [ "$(code "$G/v1/completions" -d '{"model":"m1","prompt":"x","max_tokens":1}')" = 200 ] && okc=$((okc+1)); done
check "refused connections: retried, 4/4 ok" [ "$okc" = 4 ]

# 9. admin API: add, list, delete
check "POST /workers" [ "$(code -X POST "$G/workers" -H 'content-type: application/json' -d "{\"url\":\"http://127.0.0.1:$S2\"}")" = 409 ]
check "DELETE /workers/{url}" [ "$(code -X DELETE "$G/workers/http%3A%2F%2F127.0.0.1%3A$S2")" = 200 ]
check "DELETE unknown: 404" [ "$(code -X DELETE "$G/workers/http%3A%2F%2Fnope%3A1")" = 404 ]

# 10. no healthy worker for a known model: 503 with Retry-After (m3's only worker removed)
curl -s -X DELETE "$G/workers/http%3A%2F%2F127.0.0.1%3A$S3" >/dev/null
check "unknown model after removal: 404" [ "$(code "$G/v1/completions" -d '{"model":"m3","prompt":"x"}')" = 404 ]

# 11. SIGHUP reload: back to the file's list (S1, S2, S3)
kill -HUP "$SERVE_PID"; sleep 0.5
check "SIGHUP: workers reloaded" [ "$(curl -s "$G/workers" | /usr/bin/python3 -c 'import json,sys; print(len(json.load(sys.stdin)["workers"]))')" = 3 ]

# 12. SIGTERM drains: a stream in flight completes, the process exits 0
curl -sN "$G/v1/completions" -d '{"model":"m1","prompt":"x","max_tokens":40,"ignore_eos":true,"stream":true}' >"$TMP/drain" &
cpid=$!
sleep 0.2
kill -TERM "$SERVE_PID"
wait "$cpid"
check "drain: stream completed" grep -q 'data: \[DONE\]' "$TMP/drain"
check "drain: 40 chunks" [ "$(grep -c '"text"' "$TMP/drain")" = 40 ]
for i in $(seq 1 "$(scaled 50)"); do kill -0 "$SERVE_PID" 2>/dev/null || break; sleep 0.1; done
wait "$SERVE_PID"; rc=$?
check "drain: exit 0" [ "$rc" = 0 ]
finish
