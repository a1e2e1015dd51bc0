# Engine load in kvgate's own /metrics: per worker, the engine's waiting,
# running and KV usage and the age of its sample (kvgate_worker_engine_*),
# and failed scrapes (kvgate_worker_scrape_errors_total). A value the engine
# does not report is absent, never 0; the text passes promtool clean.
. "$(dirname "$0")/lib.sh"
if ! command -v promtool >/dev/null; then
  bad "promtool is installed"
  finish
fi
S1=$(free_port); S2=$(free_port); S3=$(free_port); GW=$(free_port)
start_sim "$S1" --model m || exit 1
start_sim "$S2" --model m --flavor llamacpp --metrics-mode no-kv || exit 1
start_sim "$S3" --model m --metrics-mode error || exit 1
W1=http://127.0.0.1:$S1; W2=http://127.0.0.1:$S2; W3=http://127.0.0.1:$S3
start_serve "$GW" --worker-urls "$W1" "$W2" "$W3" --load-monitor-interval-ms 100 \
  --health-check-interval-secs 1 --policy round_robin || exit 1
G=http://127.0.0.1:$GW
# Long requests on every worker, so "running" is not just 0.
CP=()
for i in 1 2 3; do
  curl -s -m 30 -o /dev/null "$G/v1/completions" \
    -d '{"model":"m","prompt":"x","max_tokens":1500,"ignore_eos":true}' &
  CP+=($!)
done
for _ in $(seq 1 "$(scaled 50)"); do
  curl -s -m 2 "$G/metrics" >"$TMP/m"
  grep -q "^kvgate_worker_engine_running{worker=\"$W1\"} [1-9]" "$TMP/m" &&
    grep -q "^kvgate_worker_engine_running{worker=\"$W2\"} [1-9]" "$TMP/m" && break
  sleep 0.1
done
has() { grep -q "$1" "$TMP/m"; }
hasnt() { ! grep -q "$1" "$TMP/m"; }
rc=0; timeout 30 promtool check metrics <"$TMP/m" >"$TMP/prom.out" 2>&1 || rc=$?
check "promtool clean (rc $rc)" [ "$rc" = 0 ] || cat "$TMP/prom.out"
for f in waiting running kv_usage sample_age_seconds; do
  check "TYPE kvgate_worker_engine_$f gauge" has "^# TYPE kvgate_worker_engine_$f gauge"
done
check "TYPE scrape errors counter" has '^# TYPE kvgate_worker_scrape_errors_total counter'
check "vllm worker: running from its engine" has "^kvgate_worker_engine_running{worker=\"$W1\"} [1-9]"
check "vllm worker: waiting" has "^kvgate_worker_engine_waiting{worker=\"$W1\"} 0"
check "vllm worker: kv usage above 0" has "^kvgate_worker_engine_kv_usage{worker=\"$W1\"} 0\.[0-9]*[1-9]"
check "vllm worker: sample age" has "^kvgate_worker_engine_sample_age_seconds{worker=\"$W1\"} [0-9]"
check "llama.cpp worker: running from requests_processing" has "^kvgate_worker_engine_running{worker=\"$W2\"} [1-9]"
check "llama.cpp worker: waiting from requests_deferred" has "^kvgate_worker_engine_waiting{worker=\"$W2\"} 0"
check "llama.cpp worker: no KV figure, no kv_usage series (not 0)" hasnt "^kvgate_worker_engine_kv_usage{worker=\"$W2\"}"
check "failing worker: no waiting series" hasnt "^kvgate_worker_engine_waiting{worker=\"$W3\"}"
check "failing worker: no sample, no age series" hasnt "^kvgate_worker_engine_sample_age_seconds{worker=\"$W3\"}"
check "failing worker: scrape errors counted" has "^kvgate_worker_scrape_errors_total{worker=\"$W3\"} [1-9]"
check "good worker: 0 scrape errors" has "^kvgate_worker_scrape_errors_total{worker=\"$W1\"} 0"
kill "${CP[@]}" 2>/dev/null
finish
