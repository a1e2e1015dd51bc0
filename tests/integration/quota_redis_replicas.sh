#!/usr/bin/env bash
# Token quotas shared through Redis by separate processes: three "replicas"
# (tests/tools/gw_quota, each with its own loop and connection) hammer one
# scope at the same time and together admit exactly the budget; with Redis
# gone they answer at once, failing open or closed as configured.
source "$(dirname "$0")/lib.sh"
TOOL="$KVG_TOOLS/gw_quota"
[ -x "$TOOL" ] || { echo "no $TOOL"; exit 1; }

PORT=$(free_port)
start_redis "$PORT" || exit 1
URL="redis://127.0.0.1:$PORT"
SCOPE="key:replicas-$$"

# 3 processes x 200 requests of 10 tokens against 1000 tokens per minute.
# (If a minute boundary falls inside the run the sliding window lets a little
# more through; run right after a boundary so it cannot.)
sec=$(date +%S); sec=${sec#0}
if [ "$sec" -gt 50 ]; then sleep $((61 - sec)); fi
for i in 1 2 3; do
  timeout 60 "$TOOL" "$URL" "$SCOPE" 200 10 1000 closed >"$TMP/r$i.out" 2>"$TMP/r$i.log" &
  R[$i]=$!
done
for i in 1 2 3; do wait "${R[$i]}"; done
total=0 errors=0
for i in 1 2 3; do
  read -r _ a _ l _ e <"$TMP/r$i.out"
  total=$((total + a)); errors=$((errors + e))
done
check "three replicas admit exactly the shared budget (got $total)" [ "$total" = 100 ]
check "no store errors while redis is up" [ "$errors" = 0 ]
check "each replica saw refusals" grep -q 'limited [1-9]' "$TMP/r1.out"

kill -KILL "$REDIS_PID"
wait "$REDIS_PID" 2>/dev/null
start=$(date +%s)
timeout 30 "$TOOL" "$URL" "key:down-$$" 20 10 1000 open >"$TMP/open.out" 2>"$TMP/open.log"
timeout 30 "$TOOL" "$URL" "key:down-$$" 20 10 1000 closed >"$TMP/closed.out" 2>"$TMP/closed.log"
took=$(( $(date +%s) - start ))
check "redis down, fail open admits everything" grep -q '^admitted 20 limited 0 errors 20$' "$TMP/open.out"
check "redis down, fail closed refuses everything" grep -q '^admitted 0 limited 0 errors 20$' "$TMP/closed.out"
check "redis down never hangs (${took}s for 40 requests)" [ "$took" -lt 20 ]
check "one log line, not one per request" [ "$(grep -c 'unavailable' "$TMP/closed.log")" = 1 ]
finish
