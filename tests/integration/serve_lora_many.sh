# A worker serving many LoRA adapters (vLLM serves hundreds): a sim lists 20
# adapters, one with a 200-byte name, next to a sim serving the base model
# alone. kvgate learns the whole list from /v1/models and routes requests
# for the 20th adapter and the long-named one to the sim that serves them
# (200 through kvgate, as direct); nothing was left out of the list. A
# /v1/models answer past what kvgate reads is said to be unread, once.
. "$(dirname "$0")/lib.sh"
S1=$(free_port); S2=$(free_port); GW=$(free_port)
LONG=$(/usr/bin/python3 -c "print('long-adapter-' + 'x' * 187)")
ADAPTERS=$(/usr/bin/python3 -c "import sys; a = ['lora-%d' % i for i in range(1, 21)]; a[9] = sys.argv[1]; print(','.join(a))" "$LONG")
start_sim "$S1" --model m --speed 20 --lora-adapters "$ADAPTERS" || exit 1
start_sim "$S2" --model m --speed 20 || exit 1
W1=http://127.0.0.1:$S1
start_serve "$GW" --worker-urls "$W1" "http://127.0.0.1:$S2" --health-check-interval-secs 0.3 || exit 1
G=http://127.0.0.1:$GW
check "the long name is 200 bytes" [ "${#LONG}" = 200 ]
direct=$(curl -s -m 10 -o /dev/null -w '%{http_code}' "$W1/v1/completions" -d "{\"model\":\"lora-20\",\"prompt\":\"hi\",\"max_tokens\":2}")
check "the sim serves the 20th adapter directly ($direct)" [ "$direct" = 200 ]
# nmodels URL: how many models kvgate lists for the worker URL.
nmodels() {
  curl -s -m 2 "$G/workers" >"$TMP/w.json" &&
    json_get "$TMP/w.json" "[len(w['models']) for w in j['workers'] if w['url'] == '$1'][0]"
}
n=0
for _ in $(seq 1 "$(scaled 100)"); do # the models are read after the first health check
  n=$(nmodels "$W1")
  [ "${n:-0}" -ge 21 ] && break
  sleep 0.1
done
check "kvgate lists all 21 models of the adapters' sim ($n)" [ "$n" = 21 ]
check "kvgate's /v1/models lists the long name" bash -c "curl -s -m 2 '$G/v1/models' | grep -q '\"$LONG\"'"
# send MODEL: through kvgate; prints "status worker".
send() {
  local code w
  code=$(curl -s -m 10 -D "$TMP/h" -o "$TMP/r" -w '%{http_code}' "$G/v1/completions" \
    -d "{\"model\":\"$1\",\"prompt\":\"hello there\",\"max_tokens\":2}")
  w=$(tr -d '\r' <"$TMP/h" | awk -F': ' 'tolower($1)=="x-kvgate-worker"{print $2}')
  echo "$code $w"
}
for m in lora-20 "$LONG" lora-9; do
  ok=0
  for _ in 1 2 3 4; do [ "$(send "$m")" = "200 $W1" ] && ok=$((ok + 1)); done
  check "requests for ${m:0:20}... are routed to the sim serving it (200, $ok of 4)" [ "$ok" = 4 ]
done
check "a model no worker lists is still refused (404)" [ "$(send lora-21 | cut -d' ' -f1)" = 404 ]
curl -s -m 2 "$G/metrics" >"$TMP/m"
dropped=$(awk -v u="$W1" 'index($0, "kvgate_worker_models_dropped_total{") == 1 && index($0, u) {print $2}' "$TMP/m")
check "nothing was left out of its list (kvgate_worker_models_dropped_total $dropped)" [ "$dropped" = 0 ]

# A /v1/models answer past what kvgate reads (8 MB: far more than 4096
# models) is not read, and that is said once, not at every health check.
S3=$(free_port); GW2=$(free_port)
/usr/bin/python3 -c '
import http.server, json, sys
big = json.dumps({"object": "list", "data": [{"id": "m-%d" % i, "root": "r" * 200} for i in range(40000)]}).encode()
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_GET(self):
        b = big if self.path == "/v1/models" else b"{}"
        self.send_response(200); self.send_header("content-length", str(len(b))); self.end_headers(); self.wfile.write(b)
    def log_message(self, *a): pass
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
' "$S3" >"$TMP/big.out" 2>&1 &
PIDS+=($!)
wait_http "http://127.0.0.1:$S3/health" 10 || exit 1
start_serve "$GW2" --worker-urls "http://127.0.0.1:$S3" --health-check-interval-secs 0.2 || exit 1
check "an over-long /v1/models is said to be unread" wait_grep "its /v1/models answer is over 8388608 bytes: not read" "$TMP/serve-$GW2.log"
sleep "$(scaled 1)" # a few more health checks (0.2 s apart)
check "and said once ($(grep -c 'its /v1/models answer is over' "$TMP/serve-$GW2.log"))" [ "$(grep -c 'its /v1/models answer is over' "$TMP/serve-$GW2.log")" = 1 ]
finish
