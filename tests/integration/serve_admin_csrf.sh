# The admin API against a web page the operator's browser opens
# (gateway/guard.h): a cross-site form, a JSON body sent as text/plain, a
# URL in the query string, a foreign Host (DNS rebinding) and, with keys,
# the status page's Basic login are refused; curl's JSON calls still work,
# and --admin-hosts names the hosts the API answers for.
. "$(dirname "$0")/lib.sh"
S1=$(free_port); S2=$(free_port); S3=$(free_port); GW=$(free_port); GK=$(free_port)
GH=$(free_port)
start_sim "$S1" --model m --speed 200 || exit 1
start_sim "$S2" --model m --speed 200 || exit 1
start_sim "$S3" --model m --speed 200 || exit 1
start_serve "$GW" --worker-urls "http://127.0.0.1:$S1" || exit 1
G=http://127.0.0.1:$GW
code() { curl -s -o "$TMP/b" -w '%{http_code}' -m 10 "$@"; }
has_worker() { # GATEWAY PORT [CURL ARGS...]: the pool lists 127.0.0.1:PORT
  local g=$1 p=$2; shift 2
  curl -s -m 10 "$@" "$g/workers" | grep -q "\"url\":\"http://127.0.0.1:$p\""
}
lacks_worker() { # the same, answered and without it
  local g=$1 p=$2; shift 2
  curl -s -m 10 "$@" "$g/workers" >"$TMP/w" && grep -q '"workers"' "$TMP/w" &&
    ! grep -q "\"url\":\"http://127.0.0.1:$p\"" "$TMP/w"
}
err_code() { /usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["error"]["code"])' "$TMP/b" 2>/dev/null; }
JSON=(-H 'content-type: application/json')

# 1. Without --keys: the browser is a loopback client like curl.
# A form on http://evil.example posting to the gateway.
check "cross-site form POST /workers: 403" [ "$(code "$G/workers" -H 'origin: http://evil.example' \
  -H 'sec-fetch-site: cross-site' --data-urlencode "url=http://127.0.0.1:$S2")" = 403 ]
check "refused as cross-site" [ "$(err_code)" = cross_site_request ]
check "Origin alone is enough: 403" [ "$(code "$G/workers" -H 'origin: http://evil.example' \
  "${JSON[@]}" -d "{\"url\":\"http://127.0.0.1:$S2\"}")" = 403 ]
check "Sec-Fetch-Site alone is enough: 403" [ "$(code "$G/workers" -H 'sec-fetch-site: same-site' \
  "${JSON[@]}" -d "{\"url\":\"http://127.0.0.1:$S2\"}")" = 403 ]
check "Origin null (a sandboxed page): 403" [ "$(code "$G/workers" -H 'origin: null' \
  "${JSON[@]}" -d "{\"url\":\"http://127.0.0.1:$S2\"}")" = 403 ]
# An old browser's form sends no Origin, but can only send form content
# types: a JSON body as text/plain is still a form.
check "JSON body as text/plain: 415" [ "$(code "$G/workers" -H 'content-type: text/plain' \
  -d "{\"url\":\"http://127.0.0.1:$S2\"}")" = 415 ]
check "refused as the wrong media type" [ "$(err_code)" = unsupported_media_type ]
check "URL-encoded form, no Origin: 415" [ "$(code "$G/workers" --data-urlencode "url=http://127.0.0.1:$S2")" = 415 ]
check "URL in the query string: 400" [ "$(code -X POST "$G/workers?url=http%3A%2F%2F127.0.0.1%3A$S2" "${JSON[@]}")" = 400 ]
check "refused for its query" [ "$(err_code)" = query_not_allowed ]
check "the query is refused even with a JSON body" [ "$(code "$G/workers?x=1" "${JSON[@]}" \
  -d "{\"url\":\"http://127.0.0.1:$S2\"}")" = 400 ]
check "none of them added the worker" lacks_worker "$G" "$S2"
check "cross-site DELETE: 403" [ "$(code -X DELETE -H 'origin: http://evil.example' \
  "$G/workers/http%3A%2F%2F127.0.0.1%3A$S1")" = 403 ]
check "DELETE with a query: 400" [ "$(code -X DELETE "$G/workers/http%3A%2F%2F127.0.0.1%3A$S1?x=1")" = 400 ]
check "the worker stays" has_worker "$G" "$S1"
check "cross-site POST /debug/route: 403" [ "$(code "$G/debug/route" -H 'origin: http://evil.example' \
  "${JSON[@]}" -d '{"model":"m","prompt":"x"}')" = 403 ]
# DNS rebinding: evil.example resolves to 127.0.0.1, the page reads its own origin.
check "GET /workers for Host evil.example: 403" [ "$(code -H 'host: evil.example' "$G/workers")" = 403 ]
check "refused for its host" [ "$(err_code)" = host_not_allowed ]
check "with a port too: 403" [ "$(code -H "host: evil.example:$GW" "$G/workers")" = 403 ]
check "GET /ui/state for Host evil.example: 403" [ "$(code -H 'host: evil.example' "$G/ui/state")" = 403 ]
check "the API is not an admin endpoint: /v1/models for any Host" [ "$(code -H 'host: evil.example' "$G/v1/models")" = 200 ]
# What the operator does.
check "curl's JSON POST /workers: 201" [ "$(code "$G/workers" "${JSON[@]}" -d "{\"url\":\"http://127.0.0.1:$S2\"}")" = 201 ]
check "the worker is added" has_worker "$G" "$S2"
check "GET /workers for Host localhost: 200" [ "$(code -H "host: localhost:$GW" "$G/workers")" = 200 ]
check "same-origin page DELETE: 200" [ "$(code -X DELETE -H "origin: $G" -H 'sec-fetch-site: same-origin' \
  "$G/workers/http%3A%2F%2F127.0.0.1%3A$S2")" = 200 ]
check "the worker is gone" lacks_worker "$G" "$S2"
check "same-origin page POST /debug/route: 200" [ "$(code "$G/debug/route" -H "origin: $G" \
  -H 'sec-fetch-site: same-origin' "${JSON[@]}" -d '{"model":"m","prompt":"x"}')" = 200 ]

# 2. --admin-hosts: the names the operator reaches the admin API by.
start_serve "$GH" --worker-urls "http://127.0.0.1:$S1" --admin-hosts gw.internal || exit 1
H=http://127.0.0.1:$GH
check "--admin-hosts: its name answers" [ "$(code -H "host: GW.internal:$GH" "$H/workers")" = 200 ]
check "--admin-hosts: 127.0.0.1 no longer does" [ "$(code "$H/workers")" = 403 ]
check "--admin-hosts: /health for any Host" [ "$(code "$H/health")" = 200 ]

# 3. With --keys: the status page's Basic login reads, it does not change.
KA=sk-admin-$RANDOM$RANDOM
keys_yaml "$TMP/keys.yaml" "ops:$KA:admin"
start_serve "$GK" --keys "$TMP/keys.yaml" --worker-urls "http://127.0.0.1:$S1" || exit 1
K=http://127.0.0.1:$GK
check "Basic login: GET /ui 200" [ "$(code -u "ops:$KA" "$K/ui")" = 200 ]
check "Basic login: GET /workers 200" [ "$(code -u "ops:$KA" "$K/workers")" = 200 ]
check "Basic login: POST /workers refused (401)" [ "$(code -u "ops:$KA" "$K/workers" "${JSON[@]}" \
  -d "{\"url\":\"http://127.0.0.1:$S3\"}")" = 401 ]
check "refused for its scheme" [ "$(err_code)" = bearer_required ]
check "Basic login: DELETE refused (401)" [ "$(code -u "ops:$KA" -X DELETE \
  "$K/workers/http%3A%2F%2F127.0.0.1%3A$S1")" = 401 ]
check "nothing changed" has_worker "$K" "$S1" -H "authorization: Bearer $KA"
check "nor was a worker added" lacks_worker "$K" "$S3" -H "authorization: Bearer $KA"
check "Bearer admin key, JSON: 201" [ "$(code "$K/workers" -H "authorization: Bearer $KA" "${JSON[@]}" \
  -d "{\"url\":\"http://127.0.0.1:$S3\"}")" = 201 ]
check "Bearer admin key, form: 415" [ "$(code "$K/workers" -H "authorization: Bearer $KA" \
  --data-urlencode "url=http://127.0.0.1:$S3")" = 415 ]
check "Bearer admin key, foreign Host: 403" [ "$(code -H 'host: evil.example' \
  -H "authorization: Bearer $KA" "$K/workers")" = 403 ]
finish
