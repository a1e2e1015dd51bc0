#!/usr/bin/env bash
# kvgate autoscale as its own process: two replicas share a lease in a real
# Redis and act through the kubernetes actuator on the check server
# (tests/fixtures/k8s/scale_server.py; no API server runs here). Signals
# come over HTTP from a sim engine (/health, /metrics) and a kvgate serve in
# front of it (/metrics). Checked: only the lease holder PATCHes; killed by
# SIGKILL, the other takes over once the key expires (within one interval
# plus the ttl) and PATCHes; a renew that finds the key taken stops acting;
# SIGTERM releases the key so a third replica takes over before the ttl;
# Redis gone stops actuation; a dry run PATCHes nothing and takes no lease.
# Per model with SLO misses: the gateway serves model-a and model-b (a sim
# each) and counts finished requests against --slo-ttft-secs /
# --slo-itl-secs, model-b against its own models: targets (issue 38); a
# dry-run daemon's pools of model-a (named by its alias) and model-b read
# their model's series alone and show measured SLO-miss shares (model-b's
# exact at its own targets), a pool of the whole gateway with other
# targets the TTFT share alone, a pool of a model the gateway does not
# serve nothing (and GET /autoscale says why); with model-a's one engine
# slot taken, its requests held in the gateway queue are model-a's pool's
# queue alone; a pool naming a split is refused with the split's models.
source "$(dirname "$0")/lib.sh"
FIX="$KVG_ROOT/tests/fixtures/k8s"
INTERVAL=1 TTL_MS=3000
echo -n "sa-token" >"$TMP/token"

RP=$(free_port)
start_redis "$RP" || { bad "redis started"; finish; }
/usr/bin/python3 "$FIX/scale_server.py" --port-file "$TMP/api.port" --log "$TMP/api.req" \
  --token sa-token --object deployments/llm/vllm-qwen=1 >"$TMP/api.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 1 "$(scaled 50)"); do [ -f "$TMP/api.port" ] && break; sleep 0.1; done
API=$(cat "$TMP/api.port")
SIM=$(free_port) SIM2=$(free_port)
start_sim "$SIM" --model model-a --speed 0.25 --max-num-seqs 1 || { bad "sim started"; finish; }
start_sim "$SIM2" --model model-b || { bad "sim B started"; finish; }
cat >"$TMP/models.yaml" <<YAML
models:
  - {name: model-a, aliases: [a-alias], workers: [http://127.0.0.1:$SIM]}
  - {name: model-b, slo_ttft_secs: 5, slo_itl_secs: 30, workers: [http://127.0.0.1:$SIM2]}
  - {name: ab, split: {model-a: 50, model-b: 50}}
YAML
GW=$(free_port)
# Every stream misses the gateway's TTFT target (1 ms: model-a's sim runs at a
# quarter of its pace, its tiny profile's first token comes after 3 ms at full
# pace), none the ITL one (30 s); model-b's own (5 s) none. A request waits in
# the gateway queue once its model's engine has one waiting.
start_serve "$GW" --config "$TMP/models.yaml" --slo-ttft-secs 0.001 --slo-itl-secs 30 --threads 1 \
  --critical-max-waiting 1 --load-monitor-interval-ms 100 || { bad "serve started"; finish; }

cat >"$TMP/as.yaml" <<YAML
interval_secs: $INTERVAL
actuator: kubernetes
kubernetes: {api_url: "http://127.0.0.1:$API", token_file: "$TMP/token", timeout_ms: 1000}
lease: {redis: "redis://127.0.0.1:$RP", key: "kvgate-test:$$", ttl_ms: $TTL_MS}
gateways: [http://127.0.0.1:$GW]
pools:
  - name: qwen
    planner: queue
    min_replicas: 2
    max_replicas: 4
    engines: [http://127.0.0.1:$SIM]
    target: {kind: Deployment, namespace: llm, name: vllm-qwen}
YAML

# start_as NAME [ARGS...]: a kvgate autoscale; its port in PORT_NAME, pid in PID_NAME.
start_as() {
  local name=$1 port; shift
  port=$(free_port)
  "$KVG_BIN" autoscale --config "$TMP/as.yaml" --port "$port" --host 127.0.0.1 --id "$name" "$@" \
    >"$TMP/as-$name.out" 2>"$TMP/as-$name.log" &
  PIDS+=($!)
  eval "PID_$name=$! PORT_$name=$port"
  wait_http "http://127.0.0.1:$port/health" 10
}
metric() { # metric NAME 'series' -> value or 0
  local p; eval "p=\$PORT_$1"
  curl -s -m 2 "http://127.0.0.1:$p/metrics" | awk -v k="$2" '$1 == k {v=$2} END {print v ? v : 0}'
}
acts() { metric "$1" 'kvgate_autoscale_actuations_total{pool="qwen",result="ok"}'; }
leader() { metric "$1" kvgate_autoscale_leader; }
patches() { grep -c '^PATCH ' "$TMP/api.req" 2>/dev/null || true; }
holder() { redis-cli -p "$RP" GET "kvgate-test:$$"; }
# until SECONDS CMD...: CMD true within SECONDS (bounded poll).
until_true() {
  local secs=$1 i; shift
  for i in $(seq 1 $((secs * 10))); do "$@" && return 0; sleep 0.1; done
  return 1
}
is() { [ "$($1 "$2")" = "$3" ]; }
fails() { ! "$@"; }

start_as A || bad "A started"
until_true "$(scaled 5)" is leader A 1
start_as B || bad "B started"
start_as D --dry-run || bad "dry run D started"
until_true "$(scaled 5)" is acts A 1
sleep $((INTERVAL * 3)) # a few ticks of all three
check "A holds the lease (Redis says A)" [ "$(holder)" = A ]
check "A acts, B and the dry run stand by" [ "$(leader A)$(leader B)$(leader D)" = 100 ]
check "only the leader PATCHed: the server's PATCHes are A's ($(patches) = $(acts A))" \
  [ "$(patches)" -ge 1 -a "$(patches)" = "$(acts A)" -a "$(acts B)" = 0 -a "$(acts D)" = 0 ]
check "the PATCH is the planner's count (min_replicas 2)" \
  grep -q '^PATCH /apis/apps/v1/namespaces/llm/deployments/vllm-qwen/scale auth=ok ctype=application/merge-patch+json body={"spec":{"replicas":2}} -> 200$' "$TMP/api.req"
# B's pool has signals once its first tick read the sim (a loaded machine
# may take longer than the ticks slept above): polled, bounded.
b_planned() {
  curl -s -m 2 "http://127.0.0.1:$PORT_B/autoscale" >"$TMP/b.json" &&
    [ "$(json_get "$TMP/b.json" "(j['standby'], j['lease']['holder'], j['lease']['held'], j['pools'][0].get('signals', {}).get('ready'), j['pools'][0]['desired'])")" = "(True, 'A', False, 1, 2)" ]
}
check "B's /autoscale: standby, the holder is A, it still plans from the sim" until_true "$(scaled 5)" b_planned
curl -s -m 2 "http://127.0.0.1:$PORT_D/autoscale" >"$TMP/d.json"
check "D's /autoscale: dry run, no lease key, nothing actuated" \
  [ "$(json_get "$TMP/d.json" "(j['dry_run'], j['lease']['key'], j['pools'][0]['actuation']['ok'])")" = "(True, None, 0)" ]
check "the gateway's /metrics is read (no source error)" \
  [ "$(json_get "$TMP/b.json" "j['pools'][0]['signals']['queued']")" = 0 ]

# Per model, with the gateway's SLO series (a dry run of its own file).
cat >"$TMP/slo.yaml" <<YAML
interval_secs: 0.5
gateways: [http://127.0.0.1:$GW]
pools:
  - {name: pa, model: a-alias, planner: queue, ttft_secs: 0.001, itl_secs: 30, signal_window_secs: 60, engines: [http://127.0.0.1:$SIM]}
  - {name: pb, model: model-b, planner: queue, ttft_secs: 5, itl_secs: 30, signal_window_secs: 60, engines: [http://127.0.0.1:$SIM2]}
  - {name: pall, planner: queue, signal_window_secs: 60}
  - {name: pz, model: model-z, planner: queue}
YAML
SP=$(free_port)
"$KVG_BIN" autoscale --config "$TMP/slo.yaml" --dry-run --port "$SP" --host 127.0.0.1 >"$TMP/as-S.out" 2>"$TMP/as-S.log" &
PIDS+=($!) PID_S=$!
slo() { curl -s -m 2 "http://127.0.0.1:$SP/autoscale" >"$TMP/s.json" && json_get "$TMP/s.json" "$1"; }
readies() { [ "$(slo "[p['signals']['ready'] for p in j['pools']]")" = "[1, 1, 0, 0]" ]; }
# Its first tick has read the gateway (the counters' base) once the engines are seen.
check "the per-model daemon reads its sources" until_true "$(scaled 5)" readies
for i in 1 2 3; do # model-a streamed (each misses TTFT), model-b whole answers (no TTFT: none missed)
  curl -s -m 10 -o /dev/null "http://127.0.0.1:$GW/v1/completions" \
    -d '{"model":"model-a","prompt":"a longer prompt for model a, streamed","max_tokens":6,"stream":true}'
  curl -s -m 10 -o /dev/null "http://127.0.0.1:$GW/v1/completions" -d '{"model":"model-b","prompt":"b","max_tokens":3}'
done
# A stream of model-b: over the gateway's 1 ms, within model-b's own 5 s.
curl -s -m 10 -o /dev/null "http://127.0.0.1:$GW/v1/completions" -d '{"model":"model-b","prompt":"b","max_tokens":3,"stream":true}'
shares() { echo "[(p['signals']['slo_miss'], p['signals']['slo_miss_ttft'], p['signals']['slo_miss_itl']) for p in j['pools'] if p['name'] == '$1'][0]"; }
settled() { [ "$(slo "$(shares pa)")" = "(1, 1, 0)" ] && [ "$(slo "$(shares pb)")" = "(0, 0, 0)" ]; }
check "the requests reach the daemon's windows" until_true "$(scaled 5)" settled
check "pa (a-alias: model-a's series): every request over TTFT, none over ITL: (1, 1, 0)" [ "$(slo "$(shares pa)")" = "(1, 1, 0)" ]
check "  ... its served_model the one the alias resolves to" [ "$(slo "[p['served_model'] for p in j['pools']][:2]")" = "['model-a', 'model-b']" ]
check "pb (model-b's series, at its own targets): exact, nothing missed: (0, 0, 0)" [ "$(slo "$(shares pb)")" = "(0, 0, 0)" ]
check "pall (every model, targets not the gateway's): the TTFT share from the histogram, the rest null" \
  [ "$(slo "$(shares pall)")" = "(None, 0, None)" ]
check "each pool reads its own model's prompts (pa's ISL over pb's); the whole gateway's arrivals are their sum" \
  [ "$(json_get "$TMP/s.json" "(lambda a, b, w: a['isl'] > b['isl'] and abs(w['arrival_rate'] - a['arrival_rate'] - b['arrival_rate']) < 1e-9)(*[p['signals'] for p in j['pools']][:3])")" = True ]
check "pz (a model the gateway does not serve): said so, nothing measured" \
  [ "$(slo "(\"model 'model-z' is in no series\" in j['sources_error'], $(shares pz), [p for p in j['pools'] if p['name'] == 'pz'][0]['signals']['arrival_rate'])")" = "(True, (None, None, None), 0)" ]
curl -s -m 2 "http://127.0.0.1:$GW/metrics" >"$TMP/gw.txt"
check "the gateway's SLO series pass promtool" bash -c "promtool check metrics <'$TMP/gw.txt' >/dev/null 2>&1"
check "  ... model-a's 3 streams as ttft_missed" grep -q '^kvgate_slo_requests_total{model="model-a",result="ttft_missed"} 3$' "$TMP/gw.txt"
check "  ... model-b's stream met its own targets (4 met, none missed)" sh -c "
  grep -q '^kvgate_slo_requests_total{model=\"model-b\",result=\"met\"} 4\$' '$TMP/gw.txt' &&
  grep -q '^kvgate_slo_requests_total{model=\"model-b\",result=\"ttft_missed\"} 0\$' '$TMP/gw.txt'"
check "  ... the targets per model, the gateway's as model \"\"" sh -c "
  grep -q '^kvgate_slo_target_seconds{model=\"model-b\",latency=\"ttft\"} 5\$' '$TMP/gw.txt' &&
  grep -q '^kvgate_slo_target_seconds{model=\"model-a\",latency=\"ttft\"} 0.001\$' '$TMP/gw.txt' &&
  grep -q '^kvgate_slo_target_seconds{model=\"\",latency=\"ttft\"} 0.001\$' '$TMP/gw.txt'"
check "  ... the alias and the split in kvgate_model_alias_info" sh -c "
  grep -q '^kvgate_model_alias_info{alias=\"a-alias\",kind=\"alias\",model=\"model-a\"} 1\$' '$TMP/gw.txt' &&
  [ \$(grep -c '^kvgate_model_alias_info{alias=\"ab\",kind=\"split\",model=\"model-[ab]\"} 1\$' '$TMP/gw.txt') = 2 ]"
# The queue per model: model-a's one slot taken and one request waiting in its
# engine, then two more of model-a wait in the gateway queue.
gwm() { curl -s -m 2 "http://127.0.0.1:$GW/metrics" | awk -v k="$1" '$1 == k {print $2}'; }
QP=()
for i in 1 2; do
  curl -s -m 30 -o /dev/null "http://127.0.0.1:$GW/v1/completions" \
    -d '{"model":"model-a","prompt":"x","max_tokens":2000,"ignore_eos":true}' &
  QP+=($!)
  until_true "$(scaled 5)" eval '[ "$(gwm "kvgate_worker_engine_running{worker=\"http://127.0.0.1:$SIM\"}")" = 1 ]'
done
check "model-a's engine: one running, one waiting" until_true "$(scaled 5)" eval \
  '[ "$(gwm "kvgate_worker_engine_waiting{worker=\"http://127.0.0.1:$SIM\"}")" = 1 ]'
for i in 1 2; do
  curl -s -m 30 -o /dev/null "http://127.0.0.1:$GW/v1/completions" -d '{"model":"a-alias","prompt":"y","max_tokens":2}' &
  QP+=($!)
done
check "the gateway queue: model-a's 2, model-b's 0, and the unlabelled gauge 2" until_true "$(scaled 5)" eval \
  '[ "$(gwm "kvgate_admission_queue_model_waiting{model=\"model-a\"}")$(gwm "kvgate_admission_queue_model_waiting{model=\"model-b\"}")$(gwm kvgate_admission_queue_waiting)" = 202 ]'
queues() { [ "$(slo "[p['signals']['queued'] for p in j['pools']]")" = "[2, 0, 2, 0]" ]; }
check "the daemon: pa (a-alias) queued 2, pb 0, pall (every model) 2, pz 0" until_true "$(scaled 5)" queues
curl -s -m 2 "http://127.0.0.1:$GW/metrics" >"$TMP/gwq.txt"
check "  ... the gateway's /metrics with a queue passes promtool" bash -c "promtool check metrics <'$TMP/gwq.txt' >/dev/null 2>&1"
kill "${QP[@]}" 2>/dev/null; wait "${QP[@]}" 2>/dev/null
kill "$PID_S"; wait "$PID_S" 2>/dev/null
# A pool naming a split: one model per pool, so said, with the split's models.
printf 'interval_secs: 0.5\ngateways: [http://127.0.0.1:%s]\npools:\n  - {name: ps, model: ab, planner: queue}\n' "$GW" >"$TMP/split.yaml"
SP=$(free_port)
"$KVG_BIN" autoscale --config "$TMP/split.yaml" --dry-run --port "$SP" --host 127.0.0.1 >"$TMP/as-X.out" 2>"$TMP/as-X.log" &
PIDS+=($!) PID_X=$!
split_said() { slo "'is a split in the gateway (of model-a, model-b)' in (j['sources_error'] or '')" | grep -q True; }
check "a pool naming the split ab: sources_error names its models" until_true "$(scaled 5)" split_said
kill "$PID_X"; wait "$PID_X" 2>/dev/null

# The leader dies without releasing: B takes over once the key expires.
n0=$(patches)
kill -KILL "$PID_A"; wait "$PID_A" 2>/dev/null
bound=$((INTERVAL + TTL_MS / 1000 + 3))
check "A killed: B takes over within interval + ttl (+3 s slack)" until_true "$bound" is leader B 1
check "B PATCHes as the new leader" until_true $((INTERVAL + 3)) is acts B 1
check "Redis says B" [ "$(holder)" = B ]
check "the new PATCHes are B's" [ "$(( $(patches) - n0 ))" = "$(acts B)" ]
check "the dry run never PATCHed nor held" [ "$(acts D)$(leader D)" = 00 ]

# Someone else takes the key: B's next renew finds it gone and stops acting.
redis-cli -p "$RP" SET "kvgate-test:$$" intruder PX 4000 >/dev/null
check "key taken: B stops acting within one interval (+1 s)" until_true $((INTERVAL + 1)) is leader B 0
n1=$(patches)
sleep $((INTERVAL * 2))
check "... and PATCHes nothing more" [ "$(patches)" = "$n1" ]
check "B reacquires once the intruder's key expires" until_true $((TTL_MS / 1000 + 4)) is leader B 1

# SIGTERM releases the key: C takes over before the ttl could expire it.
start_as C || bad "C started"
until_true "$(scaled 3)" is leader C 0
nb=$(acts B) # B is a steady leader here: it pushes again only on a new plan
kill -TERM "$PID_B"
for _ in $(seq 1 "$(scaled 50)"); do kill -0 "$PID_B" 2>/dev/null || break; sleep 0.1; done
check "B stopped on SIGTERM" fails kill -0 "$PID_B" 2>/dev/null
check "B released the lease on exit (logged)" grep -q 'lease kvgate-test:.* released' "$TMP/as-B.log"
check "C holds it next" until_true $((INTERVAL + 2)) eval '[ "$(holder)" = C ]'
check "C acts" until_true $((INTERVAL + 2)) is acts C 1

# Redis gone: C cannot renew and stops acting within one interval.
kill -KILL "$REDIS_PID"; wait "$REDIS_PID" 2>/dev/null
check "Redis unreachable: C stops acting within one interval (+1 s)" until_true $((INTERVAL + 1)) is leader C 0
n2=$(patches)
sleep $((INTERVAL * 2))
check "... and PATCHes nothing more" [ "$(patches)" = "$n2" ]
curl -s -m 2 "http://127.0.0.1:$PORT_C/autoscale" >"$TMP/c.json"
check "C's /autoscale says why" [ "$(json_get "$TMP/c.json" "j['lease']['error'] is not None and not j['lease']['held']")" = True ]
check "every PATCH the server got was a leader's: A's, B's, C's ($(patches) = $n0 + $nb + $(acts C))" \
  [ "$(patches)" = "$((n0 + nb + $(acts C)))" ]

# Bad invocations.
check "--config is required" fails "$KVG_BIN" autoscale --port 0 2>/dev/null
check "an unknown option is refused" fails "$KVG_BIN" autoscale --config "$TMP/as.yaml" --nope 2>/dev/null
printf 'pools:\n  - {name: a}\nlease: {redis: "redis://127.0.0.1:1", ttl_ms: 5}\n' >"$TMP/bad.yaml"
check "a bad lease is refused with the reason" \
  eval '"$KVG_BIN" autoscale --config "$TMP/bad.yaml" --port 0 2>&1 | grep -q "lease ttl_ms"'
finish
