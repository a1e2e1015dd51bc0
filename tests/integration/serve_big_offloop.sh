# Big requests do their CPU work (parse, tokenizing, hashing, the pick and
# the approximate index's record) on libuv's thread pool (issue 13, section
# 6). Behaviour only (no timing): big bodies are routed and recorded like
# small ones, the request headers still steer the pick, a bad big body is a
# 400 naming the field, a client leaving mid-work leaves nothing in flight,
# and the one loop thread answers /health while a 20 MB request is routed.
. "$(dirname "$0")/lib.sh"
S1=$(free_port); S2=$(free_port)
start_sim "$S1" --model m || exit 1
start_sim "$S2" --model m || exit 1
URLS=("http://127.0.0.1:$S1" "http://127.0.0.1:$S2")
GW=$(free_port)
start_serve "$GW" --threads 1 --policy kv_aware --block-size 16 --worker-urls "${URLS[@]}" \
  --health-check-interval-secs 1 || exit 1
G=http://127.0.0.1:$GW
wait_http "$G/readiness" 10 || exit 1

# A 300 KB prompt (over the 16 KB inline bound): builtin:bytes tokens.
/usr/bin/python3 - "$TMP" <<'PY'
import random, sys
d = sys.argv[1]
r = random.Random(3)
t = ' '.join(''.join(r.choice('abcdefgh') for _ in range(5)) for _ in range(50000))
open(f"{d}/big.json", "w").write('{"model":"m","max_tokens":1,"prompt":"' + t + '"}')
open(f"{d}/bad.json", "w").write('{"model":"m","messages":"' + t + '"}')
big = ' '.join(''.join(r.choice('abcdefgh') for _ in range(5)) for _ in range(3400000))
open(f"{d}/huge.json", "w").write('{"model":"m","max_tokens":1,"prompt":"' + big + '"}')
PY

code=$(curl -s -D "$TMP/h" -o "$TMP/r" -w '%{http_code}' "$G/v1/completions" --data-binary "@$TMP/big.json")
w=$(tr -d '\r' <"$TMP/h" | awk -F': ' 'tolower($1)=="x-kvgate-worker"{print $2}')
check "big request answered by an engine (status $code, worker $w)" [ -n "$w" ] && [ "$code" != 000 ]
curl -s "$G/debug/route" --data-binary "@$TMP/big.json" >"$TMP/d"
m=$(json_get "$TMP/d" 'max((x["matched_blocks"] or 0) for x in j["workers"])')
check "its blocks were recorded off the loop: debug/route matches $m >= 18000 blocks" [ "$m" -ge 18000 ]

code=$(curl -s -o "$TMP/r" -w '%{http_code}' "$G/v1/chat/completions" --data-binary "@$TMP/bad.json")
check "bad big body: 400 ($code)" [ "$code" = 400 ]
check "bad big body: param names the field" [ "$(json_get "$TMP/r" 'j["error"]["param"]')" = messages ]

# A client that gives up while its 20 MB body is parsed and routed.
curl -s -o /dev/null -m 0.3 "$G/v1/completions" --data-binary "@$TMP/huge.json"
curl -s -o /dev/null -m 0.6 "$G/v1/completions" --data-binary "@$TMP/huge.json"
inflight() { curl -s "$G/workers" | /usr/bin/python3 -c 'import json,sys; print(sum(w["in_flight"] for w in json.load(sys.stdin)["workers"]))'; }
n=1
for _ in $(seq 1 "$(scaled 100)"); do n=$(inflight); [ "$n" = 0 ] && break; sleep 0.2; done
check "clients gone mid-work: in-flight back to 0 ($n)" [ "$n" = 0 ]
check "clients gone mid-work: gateway alive" wait_http "$G/health" 5

# /health on the same (only) loop while a 20 MB request is being routed.
curl -s -o "$TMP/hr" -w '%{http_code}' "$G/v1/completions" --data-binary "@$TMP/huge.json" >"$TMP/hcode" &
BIG=$!
hc=000
for _ in $(seq 1 "$(scaled 50)"); do
  hc=$(curl -s -o /dev/null -w '%{http_code}' -m 30 "$G/health")
  [ "$hc" = 200 ] && break
  sleep 0.05
done
check "health answered while the 20 MB request is in flight" [ "$hc" = 200 ]
wait "$BIG"
check "the 20 MB request answered by the engine ($(cat "$TMP/hcode"))" [ "$(cat "$TMP/hcode")" != 000 ]
stop_all

# The request headers steer the pick off the loop as on it: a routing key
# sends a big request where a small one with the same key went.
start_sim "$S1" --model m || exit 1
start_sim "$S2" --model m || exit 1
GW2=$(free_port)
start_serve "$GW2" --threads 1 --policy consistent_hash --worker-urls "${URLS[@]}" || exit 1
wait_http "http://127.0.0.1:$GW2/readiness" 10 || exit 1
same=0
for k in alpha beta gamma delta; do
  a=$(curl -s -D - -o /dev/null "http://127.0.0.1:$GW2/v1/completions" -H "x-session-id: $k" \
    -d '{"model":"m","prompt":"hi","max_tokens":1}' | tr -d '\r' | awk -F': ' 'tolower($1)=="x-kvgate-worker"{print $2}')
  b=$(curl -s -D - -o /dev/null "http://127.0.0.1:$GW2/v1/completions" -H "x-session-id: $k" \
    --data-binary "@$TMP/big.json" | tr -d '\r' | awk -F': ' 'tolower($1)=="x-kvgate-worker"{print $2}')
  [ -n "$a" ] && [ "$a" = "$b" ] && same=$((same + 1))
done
check "routing key header honoured for big requests ($same/4)" [ "$same" = 4 ]
stop_all

# A big body is parsed and tokenized in one work item, before the key's
# model list and the priority header are checked on the loop: those checks
# still answer it (403, 400), and an allowed one is routed.
start_sim "$S1" --model m || exit 1
start_sim "$S2" --model m || exit 1
KM=sk-m-$RANDOM$RANDOM; KO=sk-other-$RANDOM$RANDOM
cat >"$TMP/keys.yaml" <<YAML
keys:
  - name: m-user
    hash: $("$KVG_BIN" keys hash "$KM")
    models: ["m"]
  - name: other-user
    hash: $("$KVG_BIN" keys hash "$KO")
    models: ["other"]
YAML
GW3=$(free_port)
start_serve "$GW3" --threads 1 --policy kv_aware --block-size 16 --keys "$TMP/keys.yaml" \
  --worker-urls "${URLS[@]}" || exit 1
G3=http://127.0.0.1:$GW3
wait_http "$G3/readiness" 10 || exit 1
big_req() { # key, extra curl args... -> status
  local k=$1
  shift
  curl -s -D "$TMP/h3" -o "$TMP/r3" -w '%{http_code}' "$G3/v1/completions" \
    -H "Authorization: Bearer $k" "$@" \
    --data-binary "@$TMP/big.json"
}
code=$(big_req "$KO")
check "big body, model the key may not use: 403 ($code)" [ "$code" = 403 ]
check "big body, 403 is an OpenAI error" json_get "$TMP/r3" 'j["error"]["message"]'
code=$(big_req "$KM" -H 'x-kvgate-priority: nonsense')
check "big body, bad priority header: 400 ($code)" [ "$code" = 400 ]
code=$(big_req "$KM")
w=$(tr -d '\r' <"$TMP/h3" | awk -F': ' 'tolower($1)=="x-kvgate-worker"{print $2}')
check "big body, allowed key: routed to an engine (status $code, worker $w)" [ -n "$w" ]
code=$(big_req sk-nobody)
check "big body, unknown key: 401 ($code)" [ "$code" = 401 ]
finish
