# Data-parallel ranks and duplicate workers: URL@rank logical workers share
# one HTTP target and get their own slots and event endpoints (port + rank);
# a worker listed twice (flags or YAML) is a startup error, not a silent
# collapse to one; POST /workers of a present worker stays 409.
. "$(dirname "$0")/lib.sh"
S=$(free_port)
start_sim "$S" --model m --speed 20 || exit 1
U=http://127.0.0.1:$S

# A duplicate on the command line: kvgate refuses to start and says why.
GD=$(free_port)
timeout 10 "$KVG_BIN" serve --port "$GD" --worker-urls "$U" "$U" >"$TMP/dup.out" 2>"$TMP/dup.log"
rc=$?
check "duplicate worker URL: startup error (rc $rc)" [ "$rc" != 0 ] && [ "$rc" != 124 ]
check "duplicate worker URL: named in the error" grep -q "listed twice" "$TMP/dup.log"
cat >"$TMP/dup.yaml" <<YAML
policy: round_robin
workers:
  - url: $U
  - url: $U/
YAML
timeout 10 "$KVG_BIN" serve --port "$GD" --config "$TMP/dup.yaml" >"$TMP/dupy.out" 2>"$TMP/dupy.log"
rc=$?
check "duplicate worker in YAML: startup error (rc $rc)" [ "$rc" != 0 ] && [ "$rc" != 124 ]

# URL@0 and URL@1: two logical workers behind one engine URL.
GW=$(free_port)
start_serve "$GW" --policy round_robin --worker-urls "$U@0" "$U@1" \
  --health-check-interval-secs 1 || exit 1
G=http://127.0.0.1:$GW
wait_http "$G/readiness" 10 || exit 1
curl -s "$G/workers" >"$TMP/w"
check "two rank workers listed" [ "$(json_get "$TMP/w" 'sorted(w["url"] for w in j["workers"])')" = "['$U@0', '$U@1']" ]
for i in 1 2 3 4; do
  curl -s -o /dev/null "$G/v1/completions" -d '{"model":"m","prompt":"hello","max_tokens":1}'
done
curl -s "$G/workers" >"$TMP/w"
check "both ranks served (2 + 2)" [ "$(json_get "$TMP/w" 'sorted(w["processed"] for w in j["workers"])')" = "[2, 2]" ]
code=$(curl -s -o /dev/null -w '%{http_code}' "$G/workers" -H 'content-type: application/json' -d "{\"url\":\"$U@1\"}")
check "POST /workers of a present rank worker: 409 ($code)" [ "$code" = 409 ]
code=$(curl -s -o /dev/null -w '%{http_code}' "$G/workers" -H 'content-type: application/json' -d "{\"url\":\"$U@2\"}")
check "POST /workers of a new rank worker: 201 ($code)" [ "$code" = 201 ]
finish
