# kvgate autoscale's GET /autoscale is keyed as kvgate serve's: with --keys
# it needs a key with admin: true (401 without a key, 403 with another);
# KEDA's /autoscale/metrics, /metrics and /health stay open; without --keys
# a loopback client reads it as before; a bad keys file stops the start.
. "$(dirname "$0")/lib.sh"
SIM=$(free_port)
start_sim "$SIM" --model m || exit 1
cat >"$TMP/as.yaml" <<YAML
interval_secs: 1
actuator: external
pools:
  - name: qwen
    planner: queue
    min_replicas: 1
    max_replicas: 2
    engines: [http://127.0.0.1:$SIM]
YAML
KU=sk-user-$RANDOM$RANDOM; KA=sk-admin-$RANDOM$RANDOM
keys_yaml "$TMP/keys.yaml" "user:$KU" "ops:$KA:admin"
start_as() { # PORT [ARGS...]
  local port=$1; shift
  "$KVG_BIN" autoscale --config "$TMP/as.yaml" --dry-run --port "$port" --host 127.0.0.1 "$@" \
    >"$TMP/as-$port.out" 2>"$TMP/as-$port.log" &
  PIDS+=($!)
  wait_http "http://127.0.0.1:$port/health" 10
}
code() { curl -s -o "$TMP/b" -w '%{http_code}' -m 10 "$@"; }
AK=$(free_port); AN=$(free_port)
start_as "$AK" --keys "$TMP/keys.yaml" || exit 1
A=http://127.0.0.1:$AK
check "no key: GET /autoscale 401" [ "$(code "$A/autoscale")" = 401 ]
check "401 is OpenAI-style" grep -q '"code":"invalid_api_key"' "$TMP/b"
check "user key: GET /autoscale 403" [ "$(code -H "authorization: Bearer $KU" "$A/autoscale")" = 403 ]
check "403 names the admin role" grep -q '"code":"admin_required"' "$TMP/b"
check "admin key: GET /autoscale 200" [ "$(code -H "authorization: Bearer $KA" "$A/autoscale")" = 200 ]
check "the plan is there" grep -q '"qwen"' "$TMP/b"
check "/autoscale/metrics stays open (KEDA)" [ "$(code "$A/autoscale/metrics")" = 200 ]
check "/metrics stays open" [ "$(code "$A/metrics")" = 200 ]
check "/health stays open" [ "$(code "$A/health")" = 200 ]
check "an unknown path tells a keyless client nothing: 401" [ "$(code "$A/nope")" = 401 ]
start_as "$AN" || exit 1
check "no --keys: loopback reads GET /autoscale" [ "$(code "http://127.0.0.1:$AN/autoscale")" = 200 ]
echo "keys: [" >"$TMP/bad.yaml"
BAD=$(free_port)
timeout 20 "$KVG_BIN" autoscale --config "$TMP/as.yaml" --dry-run --port "$BAD" --host 127.0.0.1 \
  --keys "$TMP/bad.yaml" >"$TMP/bad.out" 2>"$TMP/bad.log"
check "a bad keys file: exit 1" [ $? = 1 ]
check "the reason names the file" grep -q "bad.yaml" "$TMP/bad.log"
finish
