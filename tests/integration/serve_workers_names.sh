# POST /workers with a host name: the name is resolved off the serving loop
# (net/resolve.h) and kept as the worker's URL; the worker is health-checked
# and serves; a name that does not resolve is a 400 naming it; the loop
# answers other requests meanwhile (one loop thread, requests in parallel).
. "$(dirname "$0")/lib.sh"
S1=$(free_port); S2=$(free_port); GW=$(free_port)
start_sim "$S1" --model m --speed 200 || exit 1
start_sim "$S2" --model m --speed 200 || exit 1
start_serve "$GW" --threads 1 --health-check-interval-secs 1 \
  --worker-urls "http://127.0.0.1:$S1" || exit 1
G=http://127.0.0.1:$GW
code() { curl -s -o "$TMP/b" -w '%{http_code}' -m 20 "$@"; }
add() { code "$G/workers" -H 'content-type: application/json' -d "{\"url\":\"$1\"}"; }
check "a host name: 201" [ "$(add "http://localhost:$S2")" = 201 ]
check "listed by its name" grep -q "\"url\":\"http://localhost:$S2\"" <(curl -s -m 10 "$G/workers")
check "the same name again: 409" [ "$(add "http://localhost:$S2")" = 409 ]
check "a rank worker by name: 201" [ "$(add "http://localhost:$S2@1")" = 201 ]
check "a name that does not resolve: 400" [ "$(add "http://no-such-host.invalid:$S2")" = 400 ]
check "the answer names it" grep -q 'cannot add worker http://no-such-host.invalid' "$TMP/b"
check "a bad port: 400" [ "$(add "http://localhost:0")" = 400 ]
check "https: 400" [ "$(add "https://localhost:$S2")" = 400 ]
# Several adds and reads at once on the one loop: every one is answered.
jobs_=()
for i in 1 2 3 4; do
  curl -s -o /dev/null -w '%{http_code}\n' -m 20 "$G/workers" -H 'content-type: application/json' \
    -d "{\"url\":\"http://localhost:$S1/p$i\"}" >"$TMP/par-add-$i" &
  jobs_+=($!)
  curl -s -o /dev/null -w '%{http_code}\n' -m 20 "$G/health" >"$TMP/par-health-$i" &
  jobs_+=($!)
done
wait "${jobs_[@]}" # each curl is bounded by -m
check "parallel adds: all 201" [ "$(cat "$TMP"/par-add-* | sort -u)" = 201 ]
check "reads meanwhile: all 200" [ "$(cat "$TMP"/par-health-* | sort -u)" = 200 ]
# The named worker is checked and serves: remove the others, then ask.
for u in "http://127.0.0.1:$S1" "http://localhost:$S2@1" "http://localhost:$S1/p1" \
  "http://localhost:$S1/p2" "http://localhost:$S1/p3" "http://localhost:$S1/p4"; do
  enc=$(/usr/bin/python3 -c 'import sys,urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=""))' "$u")
  curl -s -o /dev/null -m 10 -X DELETE "$G/workers/$enc"
done
served=0
for _ in $(seq 1 "$(scaled 50)"); do
  if [ "$(code "$G/v1/completions" -H 'content-type: application/json' \
    -d '{"model":"m","prompt":"hello","max_tokens":2}')" = 200 ]; then served=1; break; fi
  sleep 0.1
done
check "the worker added by name serves" [ "$served" = 1 ]
check "it is the only one" [ "$(curl -s -m 10 "$G/workers" | grep -o '"url":' | wc -l)" = 1 ]
finish
