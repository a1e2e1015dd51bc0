# Engines as they really are: no /metrics (404), no KV figure (current
# llama.cpp), the queue gauge alone, and metrics that stop mid-run (500, or
# an HTML page after a good sample). No request waits for a missing metric:
# standard and sheddable requests are answered at once, not after the queue
# timeout (60 s); each failing scrape is logged once (warn), counted in
# /metrics and shown in GET /workers.
. "$(dirname "$0")/lib.sh"
CASES="nometrics nokv waitonly error garbage"
declare -A SIM_ARGS=(
  [nometrics]="--metrics-mode none"
  [nokv]="--flavor llamacpp --metrics-mode no-kv"
  [waitonly]="--metrics-mode waiting-only"
  [error]="--metrics-fail-after 1:error"
  [garbage]="--metrics-fail-after 1:garbage"
)
declare -A GW
for c in $CASES; do
  s=$(free_port)
  # shellcheck disable=SC2086
  start_sim "$s" --model m ${SIM_ARGS[$c]} || exit 1
  g=$(free_port)
  start_serve "$g" --worker-urls "http://127.0.0.1:$s" --load-monitor-interval-ms 100 \
    --metrics-staleness-ms 1000 --health-check-interval-secs 1 || exit 1
  GW[$c]=http://127.0.0.1:$g
  echo "$g" >"$TMP/port-$c"
done
# Field of the only worker in GET /workers.
wfield() { curl -s -m 2 "$1/workers" | /usr/bin/python3 -c "import json,sys; w=json.load(sys.stdin)['workers'][0]; print($2)"; }
# The metrics that stop: wait (bounded) until the last good sample is stale.
for c in error garbage; do
  for _ in $(seq 1 "$(scaled 60)"); do
    [ "$(wfield "${GW[$c]}" "w['scrape']['state'] != 'ok' and w['engine'].get('age_ms', 0) > 1200")" = True ] && break
    sleep 0.1
  done
done
sleep 0.3 # a few scrapes of every other case
for c in $CASES; do
  G=${GW[$c]}
  for prio in standard sheddable critical; do
    code=$(curl -s -o "$TMP/r-$c-$prio" -w '%{http_code}' -m 10 "$G/v1/completions" \
      -H "x-kvgate-priority: $prio" -d '{"model":"m","prompt":"hello","max_tokens":4}')
    check "$c: a $prio request is answered at once (200, not held)" [ "$code" = 200 ]
  done
done
check "nokv: /workers shows waiting from requests_deferred" [ "$(wfield "${GW[nokv]}" "w['engine']['waiting']")" = 0 ]
check "nokv: /workers shows kv_usage unknown (null)" [ "$(wfield "${GW[nokv]}" "w['engine']['kv_usage']")" = None ]
check "nokv: scrape ok" [ "$(wfield "${GW[nokv]}" "w['scrape']['state']")" = ok ]
check "waitonly: running unknown (null)" [ "$(wfield "${GW[waitonly]}" "w['engine']['running']")" = None ]
declare -A STATE=([nometrics]=http_error [error]=http_error [garbage]=bad_body)
for c in nometrics error garbage; do
  G=${GW[$c]}
  port=$(cat "$TMP/port-$c")
  log="$TMP/serve-$port.log"
  check "$c: /workers scrape state ${STATE[$c]}" [ "$(wfield "$G" "w['scrape']['state']")" = "${STATE[$c]}" ]
  check "$c: /workers counts scrape errors" [ "$(wfield "$G" "w['scrape']['errors'] > 0")" = True ]
  check "$c: scrape errors in /metrics" bash -c "curl -s '$G/metrics' | grep -q '^kvgate_worker_scrape_errors_total{worker=\"http://127.0.0.1:[0-9]*\"} [1-9]'"
  n=$(grep -c 'WARN.*/metrics scrape failed' "$log")
  check "$c: the failure logged once as a warning (got $n)" [ "$n" = 1 ]
done
grep -q 'WARN' "$TMP/serve-$(cat "$TMP/port-nokv").log" && bad "nokv: no warning for a known dialect" || ok "nokv: no warning for a known dialect"
finish
