#!/usr/bin/env bash
# Each model its own serving mode (docs/models.md, serving:): one kvgate
# serves model agg aggregated and model pdm as vLLM prefill/decode pairs
# (sims in roles). A request to each takes its own path: agg's goes to its
# one worker with no PD leg, pdm's prefills on its prefill and decodes on
# its decode with the pulled KV; both answers intact and naming their
# model. pdm2 (PD, no live worker) falls back to agg; /debug/route shows
# each model's own PD decision. SIGHUP applies a changed serving section
# (pdm's threshold: its next request goes decode_only) and refuses a
# hostile one with file:line, as startup refuses PD with no prefill worker.
. "$KVG_ROOT/tests/integration/lib.sh"

GW=$(free_port) A=$(free_port) P=$(free_port) PS=$(free_port) D=$(free_port)
X1=$(free_port) X2=$(free_port) # never started: pdm2 has no live worker
PROMPT=$(printf 'the quick brown fox jumps over the lazy dog %.0s' $(seq 1 6)) # ~265 tokens
start_sim "$A" --model agg --profile instant || exit 1
start_sim "$P" --model pdm --role prefill --side-channel-port "$PS" --profile instant || exit 1
start_sim "$D" --model pdm --role decode --profile instant || exit 1
cfg() { # PDM_SERVING
  cat <<YAML
models:
  - name: agg
    workers: [http://127.0.0.1:$A]
  - name: pdm
    serving: $1
    workers:
      - {url: http://127.0.0.1:$P, role: prefill}
      - {url: http://127.0.0.1:$D, role: decode}
  - name: pdm2
    serving: {mode: vllm-pd}
    fallbacks: [agg]
    workers:
      - {url: http://127.0.0.1:$X1, role: prefill}
      - {url: http://127.0.0.1:$X2, role: decode}
YAML
}
cfg '{mode: vllm-pd, pd_threshold_tokens: 16}' >"$TMP/kvgate.yaml"
start_serve "$GW" --config "$TMP/kvgate.yaml" --health-check-interval-secs 0.2 || exit 1
G=http://127.0.0.1:$GW
LOG=$TMP/serve-$GW.log
metric() { curl -s -m 2 "$G/metrics" | prom_value "$1"; }
legs() { metric "kvgate_pd_requests_total{worker=\"http://127.0.0.1:$1\",leg=\"$2\"}"; }
ask() { # MODEL NAME: the answer in $TMP/NAME, its head in $TMP/NAME.h
  curl -s -m 20 -D "$TMP/$2.h" -o "$TMP/$2" "$G/v1/completions" \
    -d "{\"model\":\"$1\",\"prompt\":\"$PROMPT\",\"max_tokens\":3,\"ignore_eos\":true}"
}
healthy() { # N: until N workers are healthy
  local i
  for i in $(seq 1 "$(scaled 80)"); do
    curl -s -m 1 "$G/workers" >"$TMP/w.json" 2>/dev/null &&
      [ "$(json_get "$TMP/w.json" "sum(1 for w in j['workers'] if w['healthy'])")" = "$1" ] &&
      return 0
    sleep 0.1
  done
  return 1
}
answered() { # FILE MODEL: 200 with 3 completion tokens, naming MODEL
  [ "$(json_get "$1" "(j['model'], j['usage']['completion_tokens'])")" = "('$2', 3)" ]
}
route() { # MODEL EXPR
  curl -s -m 5 "$G/debug/route" -H 'content-type: application/json' \
    -d "{\"model\":\"$1\",\"prompt\":\"$PROMPT\"}" >"$TMP/route.json" && json_get "$TMP/route.json" "$2"
}
check "agg's and pdm's workers healthy" healthy 3

ask agg a1
check "agg: answered whole, naming agg" answered "$TMP/a1" agg
check "agg: served by its own worker" grep -qi "x-kvgate-worker: http://127.0.0.1:$A" "$TMP/a1.h"
check "agg: no PD leg anywhere" test "$(legs "$P" prefill)$(legs "$D" decode)" = 00
ask pdm p1
check "pdm: answered whole, naming pdm" answered "$TMP/p1" pdm
check "pdm: decoded on its decode" grep -qi "x-kvgate-worker: http://127.0.0.1:$D" "$TMP/p1.h"
check "pdm: its prefill ran the prefill leg" test "$(legs "$P" prefill)" = 1
check "pdm: the decode pulled the prefill's KV" \
  test "$(json_get "$TMP/p1" "j['usage']['prompt_tokens_details']['cached_tokens'] >= j['usage']['prompt_tokens'] - 1")" = True
# Per model in /metrics (docs/observability.md): pdm's PD series, agg's none.
curl -s -m 5 "$G/metrics" >"$TMP/m1.txt"
mm() { prom_value "$1" <"$TMP/m1.txt"; }
check "/metrics: pdm's decision, transfer and legs under model=pdm" test \
  "$(mm 'kvgate_pd_decisions_total{model="pdm",decision="prefill_decode"}') $(mm 'kvgate_pd_kv_transfer_seconds_count{model="pdm"}') $(mm 'kvgate_pd_leg_outcomes_total{model="pdm",leg="prefill",outcome="ok"}') $(mm 'kvgate_pd_leg_outcomes_total{model="pdm",leg="decode",outcome="ok"}')" = "1 1 1 1"
check "  ... none under model=agg (served whole, no PD router)" \
  sh -c "! grep -q '^kvgate_pd_[a-z_]*{model=\"agg\"' '$TMP/m1.txt'"
check "  ... each worker's PD legs and routing mode under its model" test \
  "$(mm "kvgate_pd_requests_total{worker=\"http://127.0.0.1:$P\",model=\"pdm\",leg=\"prefill\"}") $(grep -c "^kvgate_worker_routing_mode{worker=\"http://127.0.0.1:$A\",model=\"agg\"," "$TMP/m1.txt")" = "1 4"
check "  ... the exposition passes promtool" bash -c "promtool check metrics <'$TMP/m1.txt' >/dev/null 2>&1"

ask pdm2 f1
check "pdm2 (no live pair): served by its fallback agg" answered "$TMP/f1" agg
check "pdm2: on agg's worker" grep -qi "x-kvgate-worker: http://127.0.0.1:$A" "$TMP/f1.h"
check "pdm2: the access log says the fallback" \
  grep -q '"model":"pdm2","served_model":"agg","fallback_from":"pdm2","fallback_reason":"no_healthy_worker"' "$LOG"

check "/debug/route pdm: its own PD decision" \
  test "$(route pdm "(j['pd']['mode'], j['pd']['decision'], j['pd']['threshold_tokens'], j['pd']['prefill'], j['chosen'])")" \
  = "('vllm-pd', 'prefill_decode', 16, 'http://127.0.0.1:$P', 'http://127.0.0.1:$D')"
check "/debug/route agg: no PD" test "$(route agg "('pd' in j, j['chosen'])")" = "(False, 'http://127.0.0.1:$A')"
check "/debug/route pdm2: agg, by fallback" \
  test "$(route pdm2 "(j['model']['served'], j['model']['fallback']['reason'], 'pd' in j)")" = "('agg', 'no_healthy_worker', False)"

# SIGHUP: pdm's serving section changed is applied (no prefill under the new threshold).
cfg '{mode: vllm-pd, pd_threshold_tokens: 100000}' >"$TMP/kvgate.yaml"
kill -HUP "$SERVE_PID"
check "SIGHUP: the models reloaded" wait_grep "SIGHUP: models reloaded" "$LOG"
ask pdm p2
check "pdm after SIGHUP: answered whole" answered "$TMP/p2" pdm
check "pdm after SIGHUP: decode_only (no new prefill leg)" test "$(legs "$P" prefill)" = 1
check "/debug/route pdm after SIGHUP: the new threshold" \
  test "$(route pdm "(j['pd']['decision'], j['pd']['threshold_tokens'])")" = "('decode_only', 100000)"
cfg '{mode: aggregated}' >"$TMP/kvgate.yaml"
kill -HUP "$SERVE_PID"
check "SIGHUP: pdm aggregated with prefill/decode workers refused with file:line" \
  wait_grep "reload refused.*$TMP/kvgate.yaml:4: models\[1\] 'pdm': serving aggregated: prefill and decode workers need a PD serving mode" "$LOG"
ask pdm p3
check "pdm after the refused reload: still served" answered "$TMP/p3" pdm

# Startup: a PD model without a prefill worker.
cat >"$TMP/bad.yaml" <<YAML
models:
  - name: lone
    serving: {mode: vllm-pd}
    workers: [http://127.0.0.1:$X1] # regular: no prefill, no decode
YAML
"$KVG_BIN" serve --port 0 --config "$TMP/bad.yaml" 2>"$TMP/bad.err"
check "PD with no prefill worker: exit 2" test $? = 2
check "PD with no prefill worker: file:line and why" \
  grep -q "bad.yaml:2: models\[0\] 'lone': serving vllm-pd: no prefill worker" "$TMP/bad.err"
finish
