# Trust boundaries with --keys on, as a hostile client would try them: the
# admin API needs an admin key, the client's credentials and kvgate's own
# headers never reach an engine, a key cannot raise its priority, a body
# with duplicate keys is refused, a second kvgate cannot share the port, a
# keyless client cannot make kvgate buffer a body, bodies have a deadline
# and a process-wide cap, and 0 is not a silent "no limit".
. "$(dirname "$0")/lib.sh"
E=$(free_port); S=$(free_port); GW=$(free_port); GW2=$(free_port)
# An engine that answers every request with the headers it received.
ECHO_PY="$KVG_ROOT/tests/fixtures/echo_engine.py"
/usr/bin/python3 "$ECHO_PY" "$E" >"$TMP/echo.log" 2>&1 &
PIDS+=($!)
wait_http "http://127.0.0.1:$E/health" 10 || exit 1
start_sim "$S" --model m --speed 200 || exit 1
KU=sk-user-$RANDOM$RANDOM; KA=sk-admin-$RANDOM$RANDOM; KS=sk-shed-$RANDOM$RANDOM
cat >"$TMP/keys.yaml" <<YAML
keys:
  - name: user
    hash: $("$KVG_BIN" keys hash "$KU")
  - name: ops
    hash: $("$KVG_BIN" keys hash "$KA")
    admin: true
  - name: batch
    hash: $("$KVG_BIN" keys hash "$KS")
    priority: sheddable
YAML
start_serve "$GW" --threads 2 --keys "$TMP/keys.yaml" --upstream-api-key engine-secret \
  --max-buffered-bytes 1000000 --body-timeout-secs 1 --health-check-interval-secs 1 \
  --worker-urls "http://127.0.0.1:$E" || exit 1
G=http://127.0.0.1:$GW
code() { curl -s -o "$TMP/b" -w '%{http_code}' -m 10 "$@"; }

# 1. The admin API.
check "no key: GET /workers 401" [ "$(code "$G/workers")" = 401 ]
check "no key: POST /workers 401" [ "$(code "$G/workers" -d "{\"url\":\"http://127.0.0.1:$S\"}")" = 401 ]
check "no key: DELETE /workers 401" [ "$(code -X DELETE "$G/workers/http%3A%2F%2F127.0.0.1%3A$E")" = 401 ]
check "no key: POST /debug/route 401" [ "$(code "$G/debug/route" -d '{"model":"m","prompt":"x"}')" = 401 ]
check "user key: GET /workers 403" [ "$(code "$G/workers" -H "authorization: Bearer $KU")" = 403 ]
check "user key: POST /workers 403" [ "$(code "$G/workers" -H "authorization: Bearer $KU" -d "{\"url\":\"http://127.0.0.1:$S\"}")" = 403 ]
check "403 is OpenAI-style" grep -q '"code":"admin_required"' "$TMP/b"
check "admin key: GET /workers 200" [ "$(code "$G/workers" -H "authorization: Bearer $KA")" = 200 ]
check "the pool is unchanged" [ "$(/usr/bin/python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["workers"]))' "$TMP/b")" = 1 ]
check "admin key: POST /debug/route 200" [ "$(code "$G/debug/route" -H "authorization: Bearer $KA" -d '{"model":"m","prompt":"x"}')" = 200 ]
check "/metrics stays readable" [ "$(code "$G/metrics")" = 200 ]
check "/v1/models stays readable" [ "$(code "$G/v1/models")" = 200 ]
check "/health stays readable" [ "$(code "$G/health")" = 200 ]
check "API without a key 401" [ "$(code "$G/v1/completions" -d '{"model":"m","prompt":"x"}')" = 401 ]

# 2. What reaches the engine.
check "a request goes through" [ "$(code "$G/v1/completions" -H "authorization: Bearer $KU" -H 'x-kvgate-debug: 1' -H 'x-secret: s3' -H 'connection: keep-alive, x-secret' -H 'x-other: kept' -d '{"model":"m","prompt":"x","max_tokens":1}')" = 200 ]
hdr() { /usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["headers"].get(sys.argv[2],"-"))' "$TMP/b" "$1"; }
check "the client's key is not forwarded" [ "$(hdr authorization)" = "Bearer engine-secret" ]
check "x-kvgate-* is not forwarded" [ "$(hdr x-kvgate-debug)" = - ]
check "a header Connection names is not forwarded" [ "$(hdr x-secret)" = - ]
check "other headers are" [ "$(hdr x-other)" = kept ]
# Members that would point an engine's KV or encoder transfer at a host of the
# client's choosing are cut out; every other member reaches the engine as
# written (its bytes, so a 20-digit seed is not rounded through a double).
EVIL='{"model":"m", "prompt":"x","kv_transfer_params":{"do_remote_prefill":true,"remote_host":"10.9.9.9","remote_port":1},"max_tokens":1 ,"bootstrap_host":"10.9.9.9","bootstrap_room":7,"ec_transfer_params":{"mm_hashes":["h"]},"seed":12345678901234567890,"data_parallel_rank":3}'
check "engine-only members: answered" [ "$(code "$G/v1/completions" -H "authorization: Bearer $KU" -d "$EVIL")" = 200 ]
body_seen() { /usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["body"])' "$TMP/b"; }
check "... the engine got the body without them, the other members as sent" \
  [ "$(body_seen)" = '{"model":"m","prompt":"x","max_tokens":1,"seed":12345678901234567890}' ]
check "a body without them is forwarded as sent" [ "$(code "$G/v1/completions" -H "authorization: Bearer $KU" -d '{"model":"m","prompt":"x" , "max_tokens":1}')" = 200 ]
check "... byte for byte" [ "$(body_seen)" = '{"model":"m","prompt":"x" , "max_tokens":1}' ]
check "an escaped engine-only key: 400" [ "$(code "$G/v1/completions" -H "authorization: Bearer $KU" -d '{"model":"m","prompt":"x","kv\u005ftransfer_params":{"remote_host":"10.9.9.9"}}')" = 400 ]
check "... OpenAI-style, naming the members" grep -q '"message":"kv_transfer_params.*"type":"invalid_request_error"' "$TMP/b"
# cJSON reads a control byte as whitespace, the strict reader does not: such a
# body cannot be cut where cJSON sees its members, so it is refused too.
printf '{"model":"m",\001"prompt":"x","kv_transfer_params":{"remote_host":"10.9.9.9"}}' >"$TMP/lenient"
check "a lenient body with an engine-only member: 400" [ "$(code "$G/v1/completions" -H "authorization: Bearer $KU" --data-binary @"$TMP/lenient")" = 400 ]
check "... for that reason" grep -q 'not strict JSON' "$TMP/b"

# 3. Priorities.
sp() { code "$G/v1/completions" -H "authorization: Bearer $KS" -H "x-kvgate-priority: $1" -d '{"model":"m","prompt":"x","max_tokens":1}'; }
check "sheddable key asking critical: 403" [ "$(sp critical)" = 403 ]
check "... code priority_not_allowed" grep -q '"code":"priority_not_allowed"' "$TMP/b"
check "sheddable key asking 1000: 403" [ "$(sp 1000)" = 403 ]
check "sheddable key asking standard: 403" [ "$(sp standard)" = 403 ]
check "sheddable key asking lower (-5): 200" [ "$(sp -5)" = 200 ]
check "an unknown priority: 400" [ "$(sp urgent)" = 400 ]
check "out of range: 400" [ "$(sp 5000)" = 400 ]

# 4. Duplicate keys.
check "duplicate model: 400" [ "$(code "$G/v1/completions" -H "authorization: Bearer $KU" -d '{"model":"m","prompt":"x","model":"other"}')" = 400 ]
check "duplicate in a message: 400" [ "$(code "$G/v1/chat/completions" -H "authorization: Bearer $KU" -d '{"model":"m","messages":[{"role":"user","content":"a","content":"b"}]}')" = 400 ]

# 5. A second kvgate on the same port.
"$KVG_BIN" serve --port "$GW" --worker-urls "http://127.0.0.1:$E" >"$TMP/second.out" 2>"$TMP/second.log" &
P2=$!; PIDS+=($P2)
for _ in $(seq 1 "$(scaled 50)"); do kill -0 "$P2" 2>/dev/null || break; sleep 0.1; done
wait "$P2"; rc=$?
check "a second kvgate on the port exits non-zero" [ "$rc" != 0 ]
check "... saying address in use" grep -qi 'address already in use' "$TMP/second.log"

# 6. Nothing buffered before the key; a cap across connections; a deadline.
raw() { # port, request bytes (printf format), seconds to wait -> first line of the answer
  timeout 10 /usr/bin/python3 - "$1" "$2" "$3" <<'PY'
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(sys.argv[2].encode().decode("unicode_escape").encode("latin-1"))
s.settimeout(float(sys.argv[3]))
try:
    print(s.recv(4096).split(b"\r\n")[0].decode())
except socket.timeout:
    print("no answer")
PY
}
r=$(raw "$GW" 'POST /v1/completions HTTP/1.1\r\nhost: x\r\ncontent-length: 500000000\r\nexpect: 100-continue\r\n\r\n' 3)
check "keyless 500 MB body: 401 at once, no 100 Continue" [ "$(echo "$r" | awk '{print $2}')" = 401 ]
r=$(raw "$GW" "POST /v1/completions HTTP/1.1\r\nhost: x\r\nauthorization: Bearer $KU\r\ncontent-length: 2000000\r\n\r\n" 3)
check "a body over the process-wide cap: 503" [ "$(echo "$r" | awk '{print $2}')" = 503 ]
t0=$(date +%s%N)
r=$(raw "$GW" "POST /v1/completions HTTP/1.1\r\nhost: x\r\nauthorization: Bearer $KU\r\ncontent-length: 100\r\n\r\n{" 8)
t1=$(date +%s%N)
check "a body that never ends: 408 at the body deadline" [ "$(echo "$r" | awk '{print $2}')" = 408 ]

# 7. Zero is refused.
for f in max-payload-size max-header-size header-timeout-secs keepalive-timeout-secs body-timeout-secs max-buffered-bytes; do
  "$KVG_BIN" serve --port "$GW2" --$f 0 --worker-urls "http://127.0.0.1:$E" >/dev/null 2>"$TMP/zero.log"
  rc=$?
  check "--$f 0: startup error" [ "$rc" = 2 ]
  check "--$f 0: says why" grep -q "greater than 0" "$TMP/zero.log"
done

# A worker's own key (YAML), sent on the model list and on requests; the
# common key for the others.
E2=$(free_port); GW3=$(free_port)
/usr/bin/python3 "$ECHO_PY" "$E2" m own-secret >"$TMP/echo2.log" 2>&1 &
PIDS+=($!)
wait_http "http://127.0.0.1:$E2/health" 10 || exit 1
cat >"$TMP/serve.yaml" <<YAML
workers:
  - url: http://127.0.0.1:$E2
    upstream_api_key: own-secret
upstream_api_key: common-secret
YAML
start_serve "$GW3" --config "$TMP/serve.yaml" --health-check-interval-secs 1 || exit 1
wait_http "http://127.0.0.1:$GW3/readiness" 10
for _ in $(seq 1 "$(scaled 50)"); do curl -s "http://127.0.0.1:$GW3/v1/models" | grep -q '"m"' && break; sleep 0.1; done
curl -s "http://127.0.0.1:$GW3/v1/models" -o "$TMP/models"
check "the worker's own key opens its model list" grep -q '"m"' "$TMP/models"
check "a request goes with the worker's own key" [ "$(code "http://127.0.0.1:$GW3/v1/completions" -d '{"model":"m","prompt":"x","max_tokens":1}')" = 200 ]
check "... the engine saw own-secret" [ "$(hdr authorization)" = "Bearer own-secret" ]
check "GET /workers does not show keys" bash -c "! curl -s 'http://127.0.0.1:$GW3/workers' | grep -q secret"

# Without --keys: the admin API answers loopback clients (this one).
start_serve "$GW2" --worker-urls "http://127.0.0.1:$E" || exit 1
check "no --keys: admin API open on loopback" [ "$(code "http://127.0.0.1:$GW2/workers")" = 200 ]
check "no --keys: the log says loopback only" grep -q 'loopback interface only' "$TMP/serve-$GW2.log"
finish
