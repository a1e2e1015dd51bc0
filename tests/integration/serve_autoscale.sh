# kvgate serve --autoscale FILE with the external actuator: GET /autoscale
# (signals, forecast, desired vs current, inferred starts with their expected
# ready times, decisions with reasons), GET /autoscale/metrics (KEDA
# metrics-api), the gauges in /metrics, the measured signals and the token
# series, --dry-run, and the refusals. Loads are tiny and nothing is timed: a
# small profile makes a few requests (their tokens measured, not the
# configured isl / osl) ask for more replicas than the two sims.
. "$(dirname "$0")/lib.sh"
S1=$(free_port); S2=$(free_port); GW=$(free_port); GD=$(free_port); GN=$(free_port)
start_sim "$S1" --model m || exit 1
start_sim "$S2" --model m || exit 1
W1=http://127.0.0.1:$S1; W2=http://127.0.0.1:$S2
cat >"$TMP/as.yaml" <<YAML
interval_secs: 0.3
actuator: external
pools:
  - name: agg
    model: qwen2.5-7b
    planner: kvgate
    interval_secs: 0.3
    min_replicas: 1
    max_replicas: 6
    ttft_secs: 1.0
    itl_secs: 0.05
    prefill_tokens_per_sec: 20
    decode_tokens_per_sec: 5
    node: warm
YAML
start_serve "$GW" --worker-urls "$W1" "$W2" --health-check-interval-secs 1 \
  --load-monitor-interval-ms 100 --autoscale "$TMP/as.yaml" || exit 1
G=http://127.0.0.1:$GW
json() { # file, python expression over j
  /usr/bin/python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print($2)" "$1" 2>/dev/null
}
# traffic URL: a dozen small completions at once (waits for them, not the servers).
traffic() {
  local cp=() i
  for i in $(seq 1 12); do
    curl -s -m 10 -o /dev/null "$1/v1/completions" -d '{"model":"m","prompt":"hello","max_tokens":4}' &
    cp+=($!)
  done
  wait "${cp[@]}"
}
# Some traffic, so the arrival rate is above zero for a few ticks (again,
# bounded, when a burst fell across two ticks' windows).
desired=0
for _ in 1 2 3 4 5; do
  traffic "$G"
  for _ in $(seq 1 "$(scaled 10)"); do
    curl -s -m 2 "$G/autoscale" >"$TMP/as.json"
    desired=$(json "$TMP/as.json" 'j["pools"][0]["desired"] or 0')
    [ "${desired:-0}" -gt 2 ] 2>/dev/null && break 2
    sleep 0.1
  done
done
check "GET /autoscale is JSON with the pool" [ "$(json "$TMP/as.json" 'j["pools"][0]["name"]')" = agg ]
check "actuator external, not a dry run" [ "$(json "$TMP/as.json" 'j["actuator"], j["dry_run"]')" = "external False" ]
check "planner and lead time (7B warm p90 75 s)" [ "$(json "$TMP/as.json" 'j["pools"][0]["planner"], round(j["pools"][0]["lead_time_s"])')" = "kvgate 75" ]
check "two ready replicas seen" [ "$(json "$TMP/as.json" 'j["pools"][0]["ready"]')" = 2 ]
check "traffic asks for more than two (desired $desired)" [ "${desired:-0}" -gt 2 ]
check "signals: an arrival rate was seen" [ "$(json "$TMP/as.json" 'j["pools"][0]["signals"]["arrival_rate"] >= 0')" = True ]
check "starts inferred with expected ready times" [ "$(json "$TMP/as.json" 'len(j["pools"][0]["starting"]) > 0 and j["pools"][0]["starting"][0]["expected_ready_at_s"] > j["pools"][0]["starting"][0]["asked_at_s"]')" = True ]
check "decisions carry reasons" [ "$(json "$TMP/as.json" 'len(j["pools"][0]["decisions"][0]["reason"]) > 10')" = True ]
check "forecast with its horizon" [ "$(json "$TMP/as.json" 'j["pools"][0]["forecast"]["horizon_s"] > 0')" = True ]
curl -s -m 2 "$G/autoscale/metrics" >"$TMP/keda.json"
check "KEDA metrics-api: pools.agg.desiredReplicas" [ "$(json "$TMP/keda.json" 'j["pools"]["agg"]["desiredReplicas"] > 2 and j["desiredReplicas"] == j["pools"]["agg"]["desiredReplicas"]')" = True ]
curl -s -m 2 "$G/metrics" >"$TMP/m"
check "gauge kvgate_autoscale_desired_replicas{pool}" grep -q '^kvgate_autoscale_desired_replicas{pool="agg"} [3-6]' "$TMP/m"
check "gauge kvgate_autoscale_ready_replicas{pool}" grep -q '^kvgate_autoscale_ready_replicas{pool="agg"} 2' "$TMP/m"
check "decisions are logged" grep -q 'autoscale: pool agg: 2 -> ' "$TMP/serve-$GW.log"

# Measured signals (autoscale/signals.h): a few streams give TTFT and ITL,
# the engine's usage ISL and OSL (not the configured 1000 / 100: a 25-byte
# prompt, at most 8 tokens out).
sp=()
for _ in 1 2 3 4; do
  curl -s -m 10 -o /dev/null "$G/v1/completions" \
    -d '{"model":"m","prompt":"hello there, how are you","max_tokens":8,"stream":true}' &
  sp+=($!)
done
wait "${sp[@]}"
for _ in $(seq 1 30); do
  curl -s -m 2 "$G/autoscale" >"$TMP/sig.json"
  [ "$(json "$TMP/sig.json" 'j["pools"][0]["signals"]["itl_mean_s"] is not None')" = True ] && break
  sleep 0.1
done
sig() { json "$TMP/sig.json" "j[\"pools\"][0][\"signals\"]$1"; }
check "signals: TTFT mean and p90 measured" [ "$(sig '["ttft_mean_s"] > 0 and j["pools"][0]["signals"]["ttft_p90_s"] > 0')" = True ]
check "signals: ITL mean and p90 measured" [ "$(sig '["itl_mean_s"] > 0 and j["pools"][0]["signals"]["itl_p90_s"] > 0')" = True ]
check "signals: ISL from the usage ($(sig '["isl"]'))" [ "$(sig '["isl"] > 0 and j["pools"][0]["signals"]["isl"] < 1000')" = True ]
check "signals: OSL from the usage ($(sig '["osl"]'))" [ "$(sig '["osl"] > 0 and j["pools"][0]["signals"]["osl"] <= 8')" = True ]
check "signals: SLO misses judged, per target within the share over either ($(sig '["slo_miss"]'), $(sig '["slo_miss_ttft"]'), $(sig '["slo_miss_itl"]'))" [ "$(json "$TMP/sig.json" '(lambda s: s["slo_miss"] >= 0 and 0 <= s["slo_miss_ttft"] <= s["slo_miss"] and 0 <= s["slo_miss_itl"] <= s["slo_miss"] and s["slo_miss"] <= s["slo_miss_ttft"] + s["slo_miss_itl"] + 1e-9)(j["pools"][0]["signals"])')" = True ]
curl -s -m 2 "$G/metrics" >"$TMP/m2"
mval() { awk -v k="$1" '$1 == k { print $2 }' "$TMP/m2"; }
check "kvgate_tokens_total{model=m,kind=completion} counted" [ "$(mval 'kvgate_tokens_total{model="m",kind="completion"}' | cut -d. -f1)" -gt 0 ]
check "kvgate_tokens_total{model=m,kind=prompt} counted" [ "$(mval 'kvgate_tokens_total{model="m",kind="prompt"}' | cut -d. -f1)" -gt 0 ]
check "kvgate_time_to_first_token_seconds{model=m}: the 4 streams" [ "$(mval 'kvgate_time_to_first_token_seconds_count{model="m"}')" = 4 ]
itl=$(mval 'kvgate_inter_token_latency_seconds_count{model="m"}')
check "kvgate_inter_token_latency_seconds{model=m}: the 4 streams' gaps (1..28: $itl)" [ "${itl:-0}" -ge 1 ] && [ "${itl:-0}" -le 28 ]

# True first token (proxy/obs.c's token clock, one for the signals and the
# histogram): a Responses stream sends response.created before the engine
# runs; a slow sim (--speed 0.05: a 948-token prompt's prefill about 0.5 s)
# makes its first output_text.delta come that much later. The signals' TTFT
# and ITL are the histograms' own, and the TTFT is at least half that
# prefill past the answer's head (never the created event's time).
ST=$(free_port); GT=$(free_port)
start_sim "$ST" --model m --speed 0.05 || exit 1
start_serve "$GT" --worker-urls "http://127.0.0.1:$ST" --health-check-interval-secs 1 \
  --autoscale "$TMP/as.yaml" --dry-run || exit 1
words=$(python3 -c 'print(" ".join("word%d" % i for i in range(130)))')
curl -s -N -m "$(scaled 30)" "http://127.0.0.1:$GT/v1/responses" \
  -d "{\"model\":\"m\",\"input\":\"$words\",\"max_output_tokens\":4,\"stream\":true}" >"$TMP/resp.sse"
check "Responses stream: created first, then the deltas" \
  [ "$(grep -o '^event: [a-z_.]*' "$TMP/resp.sse" | sed -n '1p;5p' | tr '\n' ' ')" = "event: response.created event: response.output_text.delta " ]
for _ in $(seq 1 "$(scaled 30)"); do
  curl -s -m 2 "http://127.0.0.1:$GT/autoscale" >"$TMP/sigt.json"
  [ "$(json "$TMP/sigt.json" 'j["pools"][0]["signals"]["itl_mean_s"] is not None')" = True ] && break
  sleep 0.1
done
curl -s -m 2 "http://127.0.0.1:$GT/metrics" >"$TMP/m2"
ttft=$(json "$TMP/sigt.json" 'j["pools"][0]["signals"]["ttft_mean_s"]')
itl=$(json "$TMP/sigt.json" 'j["pools"][0]["signals"]["itl_mean_s"]')
hist() { awk -v s="$(mval "$1_sum{model=\"m\"}")" -v c="$(mval "$1_count{model=\"m\"}")" 'BEGIN { if (c > 0) print s / c }'; }
check "signals' TTFT ($ttft s) is the histogram's ($(hist kvgate_time_to_first_token_seconds) s)" \
  awk -v a="${ttft:-x}" -v b="$(hist kvgate_time_to_first_token_seconds)" 'BEGIN { exit !(a > 0 && b > 0 && a - b < 0.001 && b - a < 0.001) }'
check "signals' ITL ($itl s) is the histogram's gaps' mean ($(hist kvgate_inter_token_latency_seconds) s)" \
  awk -v a="${itl:-x}" -v b="$(hist kvgate_inter_token_latency_seconds)" 'BEGIN { exit !(a > 0 && b > 0 && a - b < 0.001 && b - a < 0.001) }'
ttfb=$(grep -h '"path":"/v1/responses"' "$TMP/serve-$GT.out" "$TMP/serve-$GT.log" | tail -1 | sed 's/.*"ttfb_ms":\([0-9.]*\).*/\1/')
check "TTFT ($ttft s) is the first delta's: >= 0.25 s past the head and response.created (ttfb $ttfb ms)" \
  awk -v t="${ttft:-0}" -v b="${ttfb:-x}" 'BEGIN { exit !(b ~ /^[0-9.]+$/ && t - b / 1000 >= 0.25) }'

# --dry-run: the same plan, nothing inferred as starting.
start_serve "$GD" --worker-urls "$W1" "$W2" --health-check-interval-secs 1 \
  --autoscale "$TMP/as.yaml" --dry-run || exit 1
# Before any request: nothing measured, so null (never a configured stand-in).
for _ in $(seq 1 30); do
  curl -s -m 2 "http://127.0.0.1:$GD/autoscale" >"$TMP/sig0.json"
  [ "$(json "$TMP/sig0.json" '"signals" in j["pools"][0]')" = True ] && break
  sleep 0.1
done
check "signals before requests: TTFT and ITL null" [ "$(json "$TMP/sig0.json" '[j["pools"][0]["signals"][k] for k in ("ttft_mean_s", "ttft_p90_s", "itl_mean_s", "itl_p90_s")]')" = "[None, None, None, None]" ]
check "signals before requests: ISL, OSL, cache hit and SLO misses null (nothing assumed)" [ "$(json "$TMP/sig0.json" '[j["pools"][0]["signals"][k] for k in ("isl", "osl", "cache_hit", "slo_miss", "slo_miss_ttft", "slo_miss_itl")]')" = "[None, None, None, None, None, None]" ]
# Exactly what the engines said: three answers' usage is the window's
# ISL, OSL and cache hit (the only requests this gateway has seen).
for p in "one two three" "hello there, how are you today" "one two three"; do
  curl -s -m 10 "http://127.0.0.1:$GD/v1/completions" \
    -d "{\"model\":\"m\",\"prompt\":\"$p\",\"max_tokens\":6}" >>"$TMP/usage.jsonl"
  echo >>"$TMP/usage.jsonl"
done
want=$(python3 -c '
import json, sys
u = [json.loads(l)["usage"] for l in open(sys.argv[1]) if l.strip()]
p = sum(x["prompt_tokens"] for x in u); c = sum(x["completion_tokens"] for x in u)
k = sum((x.get("prompt_tokens_details") or {}).get("cached_tokens", 0) for x in u)
print("%.6f %.6f %.6f" % (p / len(u), c / len(u), k / p))' "$TMP/usage.jsonl")
got=
for _ in $(seq 1 "$(scaled 50)"); do
  curl -s -m 2 "http://127.0.0.1:$GD/autoscale" >"$TMP/sig1.json"
  got=$(json "$TMP/sig1.json" '"%.6f %.6f %.6f" % tuple(j["pools"][0]["signals"][k] or -1 for k in ("isl", "osl", "cache_hit"))')
  [ "$got" = "$want" ] && break
  sleep 0.1
done
check "signals: ISL, OSL, cache hit exactly the usage's ($got, the engines said $want)" [ "$got" = "$want" ]
for _ in 1 2 3 4 5; do
  traffic "http://127.0.0.1:$GD"
  for _ in $(seq 1 "$(scaled 10)"); do
    curl -s -m 2 "http://127.0.0.1:$GD/autoscale" >"$TMP/dry.json"
    [ "$(json "$TMP/dry.json" '(j["pools"][0]["desired"] or 0) > 2')" = True ] && break 2
    sleep 0.1
  done
done
check "dry run: reported as such" [ "$(json "$TMP/dry.json" 'j["dry_run"]')" = True ]
check "dry run: plans more replicas" [ "$(json "$TMP/dry.json" '(j["pools"][0]["desired"] or 0) > 2')" = True ]
check "dry run: no starts" [ "$(json "$TMP/dry.json" 'len(j["pools"][0]["starting"])')" = 0 ]

# Without --autoscale: 404; a bad file or a lone --dry-run: exit 2 with the reason.
start_serve "$GN" --worker-urls "$W1" || exit 1
check "no --autoscale: 404" [ "$(curl -s -o /dev/null -w '%{http_code}' -m 2 "http://127.0.0.1:$GN/autoscale")" = 404 ]
printf 'pools:\n  - name: a\n    planner: hpa\n' >"$TMP/bad.yaml"
rc=0; timeout 10 "$KVG_BIN" serve --port "$(free_port)" --worker-urls "$W1" --autoscale "$TMP/bad.yaml" \
  >"$TMP/bad.out" 2>&1 || rc=$?
check "unknown planner: exit 2 ($rc)" [ "$rc" = 2 ]
check "unknown planner: named" grep -q "planner 'hpa'" "$TMP/bad.out"
rc=0; timeout 10 "$KVG_BIN" serve --port "$(free_port)" --worker-urls "$W1" --dry-run \
  >"$TMP/bad2.out" 2>&1 || rc=$?
check "--dry-run alone: exit 2 ($rc)" [ "$rc" = 2 ]
finish
