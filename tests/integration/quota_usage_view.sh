# GET /quota/usage (the status page's quota table) with the in-process
# store and with a real Redis: admin only; every scope of the keys file with
# what its limits see; the figures are what the requests used; and looking
# writes nothing: peeking many times neither charges a request nor leaves a
# key or a counter behind in Redis.
. "$(dirname "$0")/lib.sh"
E=$(free_port); RP=$(free_port)
start_sim "$E" --model m --speed 100 || exit 1
start_redis "$RP" || exit 1
KA=sk-admin-$RANDOM$RANDOM; KU=sk-user-$RANDOM$RANDOM; KT=sk-team-$RANDOM$RANDOM
HA=$("$KVG_BIN" keys hash "$KA"); HU=$("$KVG_BIN" keys hash "$KU"); HT=$("$KVG_BIN" keys hash "$KT")
cat >"$TMP/keys.yaml" <<YAML
keys:
  - name: ops
    hash: $HA
    admin: true
  - name: user
    hash: $HU
    tenant: team-a
    limits: {tokens_per_minute: 100000, requests_per_minute: 3, max_concurrent: 2}
  - name: teammate
    hash: $HT
    tenant: team-a
tenants:
  team-a:
    limits: {tokens_per_day: 1000000}
    models:
      "m*": {requests_per_hour: 500}
YAML

usage() { # port key -> status; body in $TMP/u
  curl -s -m 10 -o "$TMP/u" -w '%{http_code}' "http://127.0.0.1:$1/quota/usage" \
    ${2:+-H "authorization: Bearer $2"}
}
limit() { # scope kind window -> "used remaining limit" from $TMP/u
  json_get "$TMP/u" "' '.join(str(int(l[k])) for s in j['scopes'] if s['scope']=='$1' for l in s['limits'] if l['kind']=='$2' and str(l['window'])=='$3' for k in ('used','remaining','limit'))"
}
complete() { # port key -> status; body in $TMP/c
  curl -s -m 20 -o "$TMP/c" -w '%{http_code}' "http://127.0.0.1:$1/v1/completions" \
    -H "authorization: Bearer $2" -d '{"model":"m","prompt":"hello there","max_tokens":5,"ignore_eos":true}'
}

slots_become() { # port "used remaining limit": the user's slots get there (5 s at most)
  local i
  for i in $(seq 1 "$(scaled 50)"); do
    usage "$1" "$KA" >/dev/null
    [ "$(limit key:user concurrent None)" = "$2" ] && return 0
    sleep 0.1
  done
  return 1
}

run_store() { # label port [--quota-store URL]
  local lbl=$1 gw=$2; shift 2
  start_serve "$gw" --keys "$TMP/keys.yaml" --health-check-interval-secs 1 \
    --worker-urls "http://127.0.0.1:$E" "$@" || return 1
  wait_http "http://127.0.0.1:$gw/readiness" 10 || return 1
  local pid=$SERVE_PID
  check "$lbl: no key: 401" [ "$(usage "$gw")" = 401 ]
  check "$lbl: a key without admin: 403" [ "$(usage "$gw" "$KU")" = 403 ]
  check "$lbl: admin: 200" [ "$(usage "$gw" "$KA")" = 200 ]
  check "$lbl: every scope with limits is listed" [ "$(json_get "$TMP/u" "sorted(s['scope'] for s in j['scopes'])")" = "['key:user', 'model:team-a:m*', 'tenant:team-a']" ]
  check "$lbl: a tenant's scope names its keys" [ "$(json_get "$TMP/u" "[s['keys'] for s in j['scopes'] if s['scope']=='tenant:team-a'][0]")" = "['user', 'teammate']" ]
  check "$lbl: nothing used yet" [ "$(limit key:user requests minute)" = "0 3 3" ]

  local tok=0 i
  for i in 1 2; do
    check "$lbl: request $i: 200" [ "$(complete "$gw" "$KU")" = 200 ]
    tok=$((tok + $(json_get "$TMP/c" "j['usage']['total_tokens']")))
  done
  check "$lbl: teammate: 200" [ "$(complete "$gw" "$KT")" = 200 ]
  local ttok=$((tok + $(json_get "$TMP/c" "j['usage']['total_tokens']")))
  usage "$gw" "$KA" >/dev/null
  check "$lbl: requests used: 2 of 3" [ "$(limit key:user requests minute)" = "2 1 3" ]
  check "$lbl: tokens used = the answers' total_tokens ($tok)" [ "$(limit key:user tokens minute | cut -d' ' -f1)" = "$tok" ]
  check "$lbl: the tenant counts both keys' tokens ($ttok)" [ "$(limit tenant:team-a tokens day | cut -d' ' -f1)" = "$ttok" ]
  check "$lbl: the model pattern counts 3 requests" [ "$(limit 'model:team-a:m*' requests hour | cut -d' ' -f1)" = 3 ]
  check "$lbl: no request in flight" [ "$(limit key:user concurrent None)" = "0 2 2" ]

  # Looking is free: many peeks, then the third request still fits, the fourth not.
  if [ -n "${REDIS_URL_USED:-}" ]; then
    redis-cli -p "$RP" --scan | sort >"$TMP/keys.before"
    for k in $(cat "$TMP/keys.before"); do echo "$k $(redis-cli -p "$RP" --raw type "$k")"; done >"$TMP/types.before"
  fi
  for i in $(seq 1 20); do usage "$gw" "$KA" >/dev/null; done
  check "$lbl: 20 peeks later, still 2 of 3" [ "$(limit key:user requests minute)" = "2 1 3" ]
  if [ -n "${REDIS_URL_USED:-}" ]; then
    redis-cli -p "$RP" --scan | sort >"$TMP/keys.after"
    check "$lbl: peeks leave no key in Redis" cmp -s "$TMP/keys.before" "$TMP/keys.after"
  fi
  # The third request, a stream, holds a concurrency slot while it runs, and
  # the view shows it.
  curl -s -N -m 30 -o /dev/null "http://127.0.0.1:$gw/v1/completions" -H "authorization: Bearer $KU" \
    -d '{"model":"m","prompt":"x","max_tokens":1500,"ignore_eos":true,"stream":true}' &
  local cpid=$!
  PIDS+=($cpid)
  check "$lbl: the running stream holds 1 of 2 slots" slots_become "$gw" "1 1 2"
  check "$lbl: requests used: 3 of 3" [ "$(limit key:user requests minute)" = "3 0 3" ]
  kill "$cpid" 2>/dev/null; wait "$cpid" 2>/dev/null
  check "$lbl: fourth request: 429" [ "$(complete "$gw" "$KU")" = 429 ]
  check "$lbl: the slot is back once the client left" slots_become "$gw" "0 2 2"
  kill "$pid"; wait "$pid" 2>/dev/null
}

run_store memory "$(free_port)"
REDIS_URL_USED=1 run_store redis "$(free_port)" --quota-store "redis://127.0.0.1:$RP"

# Without keys there are no quotas to show: a clear 404.
NK=$(free_port)
start_serve "$NK" --worker-urls "http://127.0.0.1:$E" || exit 1
check "no keys: 404" [ "$(usage "$NK")" = 404 ]
check "no keys: OpenAI-style error" [ -n "$(json_get "$TMP/u" "j['error']['message']")" ]
finish
