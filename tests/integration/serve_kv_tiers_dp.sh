# Memory tiers and data-parallel ranks end to end, with kvgate sim's CPU tier
# (--cpu-kv-capacity-tokens) and --dp-size: kv_aware prefers a GPU hit over
# a CPU-tier hit over a miss (/debug/route, and where requests go: the
# engine's cached_tokens and external-hit counter confirm the CPU hit); rank
# workers URL@0 and URL@1 of one --dp-size 2 engine each get their own events
# (port + rank); a SIGHUP reload naming a worker twice is refused and logged.
. "$(dirname "$0")/lib.sh"
words() { /usr/bin/python3 -c "import random; r=random.Random($1); print(' '.join(''.join(r.choice('abcdefghij') for _ in range($3)) for _ in range($2)))"; }
body() { echo "{\"model\":\"m\",\"prompt\":\"$1\",\"max_tokens\":1}"; }
direct() { curl -s -o "$TMP/r" "$1/v1/completions" -H "X-data-parallel-rank: ${3:-0}" -d "$(body "$2")"; }
worker_of() { curl -s -D - -o "$TMP/r" "$1/v1/completions" -d "$(body "$2")" | tr -d '\r' | awk -F': ' 'tolower($1)=="x-kvgate-worker"{print $2}'; }
# poll_route GW PROMPT EXPR VALUE: /debug/route until EXPR is VALUE (events are asynchronous).
poll_route() {
  for _ in $(seq 1 "$(scaled 50)"); do
    curl -s "$1/debug/route" -d "$(body "$2")" >"$TMP/d"
    [ "$(json_get "$TMP/d" "$3")" = "$4" ] && return 0
    sleep 0.1
  done
  return 1
}

# ---- Tiers: G holds the prefix on its GPU, C on its CPU tier only, M not at all.
declare -A URL EV
for n in G C M; do
  p=$(free_port); e=$(free_port)
  start_sim "$p" --model m --speed 20 --kv-events-endpoint "tcp://127.0.0.1:$e" \
    --cpu-kv-capacity-tokens 16384 || exit 1
  URL[$n]=http://127.0.0.1:$p; EV[$n]=tcp://127.0.0.1:$e
done
GW=$(free_port)
start_serve "$GW" --policy kv_aware --block-size 16 --worker-urls "${URL[G]}" "${URL[C]}" "${URL[M]}" \
  --kv-events-endpoints "${EV[G]}" "${EV[C]}" "${EV[M]}" --health-check-interval-secs 1 || exit 1
G=http://127.0.0.1:$GW
wait_http "$G/readiness" 10 || exit 1
sleep "$(scaled 0.3)" # the subscriptions settle before the first events
P=$(words 1 100 6)      # ~700 tokens: 43 full blocks
direct "${URL[C]}" "$P"
# Three ~1,750-token prompts fill C's 4,096-token GPU cache: P moves to its CPU tier.
for s in 11 12 13; do direct "${URL[C]}" "$(words $s 250 6)"; done
direct "${URL[G]}" "$P"
Q="$P and a question"
m_of() { echo "[w['matched_blocks'] for w in j['workers'] if w['url'] == '$1'][0]"; }
check "C holds the prefix (CPU tier) in kvgate's index" poll_route "$G" "$Q" "$(m_of "${URL[C]}") >= 40" True
check "G holds it (GPU)" poll_route "$G" "$Q" "$(m_of "${URL[G]}") >= 40" True
curl -s "${URL[C]}/metrics" >"$TMP/cm"
check "C's engine holds it on the CPU tier (external hits still 0)" grep -q '^vllm:external_prefix_cache_hits_total{model_name="m",engine="0"} 0' "$TMP/cm"
pb() { echo "[w['prefill_blocks'] for w in j['workers'] if w['url'] == '$1'][0]"; }
gp=$(json_get "$TMP/d" "$(pb "${URL[G]}")"); cp=$(json_get "$TMP/d" "$(pb "${URL[C]}")"); mp=$(json_get "$TMP/d" "$(pb "${URL[M]}")")
check "debug/route: prefill cost GPU hit < CPU hit < miss ($gp < $cp < $mp)" /usr/bin/python3 -c "import sys; sys.exit(not ($gp < $cp < $mp))"
check "debug/route: the GPU hit is chosen" [ "$(json_get "$TMP/d" 'j["chosen"]')" = "${URL[G]}" ]
check "the request goes to G" [ "$(worker_of "$G" "$Q")" = "${URL[G]}" ]
enc=$(/usr/bin/python3 -c "import urllib.parse,sys; print(urllib.parse.quote(sys.argv[1], safe=''))" "${URL[G]}")
check "DELETE G" [ "$(curl -s -o /dev/null -w '%{http_code}' -X DELETE "$G/workers/$enc")" = 200 ]
check "without G, the CPU-tier hit is preferred over the miss" [ "$(worker_of "$G" "$Q b")" = "${URL[C]}" ]
cached=$(json_get "$TMP/r" 'j["usage"]["prompt_tokens_details"]["cached_tokens"]')
check "C's engine served it from its CPU tier (cached_tokens $cached >= 640)" [ "$cached" -ge 640 ]
curl -s "${URL[C]}/metrics" >"$TMP/cm"
check "C counts the CPU-tier hit" [ "$(awk '/^vllm:external_prefix_cache_hits_total/{print ($2 >= 640)}' "$TMP/cm")" = 1 ]

# ---- Ranks: one engine with --dp-size 2, events of rank r on port + r.
for _ in $(seq 1 20); do
  E=$(free_port)
  /usr/bin/python3 -c "import socket,sys; s=socket.socket(); s.bind(('127.0.0.1',$E+1))" 2>/dev/null && break
done
D=$(free_port)
start_sim "$D" --model m --speed 20 --dp-size 2 --kv-events-endpoint "tcp://127.0.0.1:$E" || exit 1
U=http://127.0.0.1:$D
curl -s "$U/metrics" >"$TMP/dm"
check "dp sim: metrics per rank (engine=\"0\", engine=\"1\")" [ "$(grep -c '^vllm:num_requests_running{' "$TMP/dm")" = 2 ]
code=$(curl -s -o /dev/null -w '%{http_code}' "$U/v1/completions" -H 'X-data-parallel-rank: 2' -d "$(body x)")
check "dp sim: a rank it does not have is a 400 ($code)" [ "$code" = 400 ]
GR=$(free_port)
start_serve "$GR" --policy kv_aware --block-size 16 --worker-urls "$U@0" "$U@1" \
  --kv-events-endpoints "tcp://127.0.0.1:$E" "tcp://127.0.0.1:$E" --health-check-interval-secs 1 || exit 1
R=http://127.0.0.1:$GR
wait_http "$R/readiness" 10 || exit 1
sleep "$(scaled 0.3)"
A=$(words 2 100 6); B=$(words 3 60 6)
direct "$U" "$A" 0
direct "$U" "$B" 1
kvb() { echo "[w['kv_index_blocks'] for w in j['workers'] if w['url'] == '$1'][0]"; }
poll_workers() {
  for _ in $(seq 1 "$(scaled 50)"); do
    curl -s "$R/workers" >"$TMP/w"
    [ "$(json_get "$TMP/w" "$(kvb "$U@0")") $(json_get "$TMP/w" "$(kvb "$U@1")")" = "$1" ] && return 0
    sleep 0.1
  done
  return 1
}
check "GET /workers: each rank worker has its own blocks (43 and 26)" poll_workers "43 26"
check "A is matched on rank 0 only" poll_route "$R" "$A" "[(w['url'], w['matched_blocks']) for w in j['workers'] if w['matched_blocks']]" "[('$U@0', 43)]"
check "B is matched on rank 1 only" poll_route "$R" "$B" "[(w['url'], w['matched_blocks']) for w in j['workers'] if w['matched_blocks']]" "[('$U@1', 26)]"
check "a request for B goes to rank 1" [ "$(worker_of "$R" "$B")" = "$U@1" ]
cached=$(json_get "$TMP/r" 'j["usage"]["prompt_tokens_details"]["cached_tokens"]')
check "rank 1 of the engine had it cached ($cached = 416)" [ "$cached" = 416 ]
check "no batch of a wrong rank" bash -c "! grep -q 'sent a batch of' '$TMP/serve-$GR.log'"

# ---- SIGHUP with a worker listed twice: refused, logged, the workers stay.
cat >"$TMP/w.yaml" <<YAML
policy: round_robin
workers:
  - url: ${URL[C]}
  - url: ${URL[M]}
YAML
GH=$(free_port)
start_serve "$GH" --config "$TMP/w.yaml" --health-check-interval-secs 1 || exit 1
H=http://127.0.0.1:$GH
nworkers() { curl -s "$H/workers" | /usr/bin/python3 -c 'import json,sys; print(len(json.load(sys.stdin)["workers"]))'; }
cat >"$TMP/w.yaml" <<YAML
policy: round_robin
workers:
  - url: ${URL[C]}
  - url: ${URL[C]}/
YAML
kill -HUP "$SERVE_PID"
LOG=$TMP/serve-$GH.log
for _ in $(seq 1 "$(scaled 50)"); do grep -q "reload refused" "$LOG" && break; sleep 0.1; done
check "SIGHUP with a duplicate: refused and logged" grep -q "SIGHUP: reload refused, keeping the current workers: worker '${URL[C]}/' is listed twice" "$LOG"
check "SIGHUP with a duplicate: both workers stay" [ "$(nworkers)" = 2 ]
cat >"$TMP/w.yaml" <<YAML
policy: round_robin
workers:
  - url: ${URL[C]}
YAML
kill -HUP "$SERVE_PID"
for _ in $(seq 1 "$(scaled 50)"); do [ "$(nworkers)" = 1 ] && break; sleep 0.1; done
check "a later valid SIGHUP applies" [ "$(nworkers)" = 1 ]
finish
