# Cache salts and LoRA adapters end to end: kvgate serve (kv_aware, precise)
# in front of three `kvgate sim` engines serving adapters sql and chat and
# publishing KV events with lora_name and extra_keys salts, as vLLM does.
# Salted tenants never match each other's blocks (nor unsalted ones);
# requests for an adapter match only that adapter's blocks and follow them;
# the engine's own cached_tokens confirms each hit.
. "$(dirname "$0")/lib.sh"
N=3
URLS=(); EVS=()
for i in $(seq 1 $N); do
  p=$(free_port); e=$(free_port)
  start_sim "$p" --model m --speed 20 --lora-adapters sql,chat \
    --kv-events-endpoint "tcp://127.0.0.1:$e" || exit 1
  URLS+=("http://127.0.0.1:$p"); EVS+=("tcp://127.0.0.1:$e")
done
GW=$(free_port)
start_serve "$GW" --threads 2 --policy kv_aware --block-size 16 --worker-urls "${URLS[@]}" \
  --kv-events-endpoints "${EVS[@]}" --health-check-interval-secs 1 || exit 1
G=http://127.0.0.1:$GW
wait_http "$G/readiness" 10 || exit 1
# The adapters are learned from /v1/models (bounded wait).
for _ in $(seq 1 "$(scaled 50)"); do
  curl -s "$G/v1/models" | grep -q '"sql"' && break
  sleep 0.1
done

P=$(/usr/bin/python3 -c "import random; r=random.Random(5); print(''.join(r.choice('abcdefghij') for _ in range(800)))")
# body MODEL [SALT]
body() { printf '{"model":"%s","prompt":"%s","max_tokens":2%s}' "$1" "$P" "${2:+,\"cache_salt\":\"$2\"}"; }
# best_match MODEL [SALT]: the most blocks any worker matches for the prompt.
best_match() {
  curl -s "$G/debug/route" -d "$(body "$@")" >"$TMP/d"
  json_get "$TMP/d" 'int(max((w["matched_blocks"] or 0) for w in j["workers"]))'
}
# send MODEL [SALT]: routes it; prints "worker cached_tokens".
send() {
  local w
  w=$(curl -s -D - -o "$TMP/r" "$G/v1/completions" -d "$(body "$@")" | tr -d '\r' | awk -F': ' 'tolower($1)=="x-kvgate-worker"{print $2}')
  echo "$w $(json_get "$TMP/r" 'j["usage"]["prompt_tokens_details"]["cached_tokens"]')"
}
# wait_match EXPECTED MODEL [SALT]: until the index shows it (events are async).
wait_match() {
  local want=$1 got=0; shift
  for _ in $(seq 1 "$(scaled 50)"); do got=$(best_match "$@"); [ "$got" -ge "$want" ] && break; sleep 0.1; done
  echo "$got"
}

# Tenant a stores the prompt salted.
read -r WA _ <<<"$(send m tenant-a)"
check "tenant a: its own salt matches (>= 40 blocks)" [ "$(wait_match 40 m tenant-a)" -ge 40 ]
check "tenant b: 0 blocks of tenant a's" [ "$(best_match m tenant-b)" = 0 ]
check "unsalted: 0 blocks of tenant a's" [ "$(best_match m)" = 0 ]
read -r w c <<<"$(send m tenant-a)"
check "tenant a again: same worker ($w = $WA), engine hit ($c >= 640)" [ "$w" = "$WA" ] && [ "$c" -ge 640 ]
read -r w c <<<"$(send m tenant-b)"
check "tenant b: the engine shares nothing either (cached $c)" [ "$c" -lt 16 ]

# The same prompt on adapter sql: its own blocks, not the base model's.
P=$(/usr/bin/python3 -c "import random; r=random.Random(9); print(''.join(r.choice('abcdefghij') for _ in range(800)))")
read -r WS _ <<<"$(send sql)"
check "adapter sql: its blocks match (>= 40)" [ "$(wait_match 40 sql)" -ge 40 ]
check "base model: 0 blocks of the adapter's" [ "$(best_match m)" = 0 ]
check "adapter chat: 0 blocks of sql's" [ "$(best_match chat)" = 0 ]
curl -s "$G/debug/route" -d "$(body sql)" >"$TMP/d"
check "debug/route: the holder pays no LoRA cost" [ "$(json_get "$TMP/d" '[w["lora_cost"] for w in j["workers"] if w["url"] == "'"$WS"'"][0]')" = 0 ]
for i in 1 2 3; do
  read -r w c <<<"$(send sql)"
  check "adapter sql request $i follows its cache ($w = $WS, cached $c >= 640)" [ "$w" = "$WS" ] && [ "$c" -ge 640 ]
done
# The engines' metrics say which adapters ran (vllm:lora_requests_info).
curl -s "${URLS[0]}/metrics" >"$TMP/m"
check "sim exports vllm:lora_requests_info" grep -q '^vllm:lora_requests_info{max_lora="2"' "$TMP/m"
finish
