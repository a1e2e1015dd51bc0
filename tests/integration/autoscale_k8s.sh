#!/usr/bin/env bash
# The kubernetes actuator against a check server (no API server runs here):
# tests/fixtures/k8s/scale_server.py verifies each request as the API server
# documents it (method, path per kind, Bearer token, Content-Type
# application/merge-patch+json, body exactly {"spec":{"replicas":N}}) and
# answers 200 / 401 / 404 / 409 with Scale or Status objects.
# tests/tools/k8s_scale drives the actuator's apply() directly. Over HTTPS
# with the server's CA, then with a wrong CA; a rotated token is used at once.
source "$(dirname "$0")/lib.sh"
TOOL="$KVG_TOOLS/k8s_scale"
[ -x "$TOOL" ] || { echo "no $TOOL"; exit 1; }
FIX="$KVG_ROOT/tests/fixtures/k8s"
echo -n "tok-1" >"$TMP/token"

# start_api NAME ARGS...: the check server; its port in $API_PORT.
start_api() {
  local name=$1; shift
  /usr/bin/python3 "$FIX/scale_server.py" --port-file "$TMP/$name.port" --log "$TMP/$name.req" --token tok-1 \
    --object deployments/llm/vllm-agg=1 --object statefulsets/llm/sgl-decode=2 \
    --object leaderworkersets/llm/lws-prefill=1 "$@" >"$TMP/$name.log" 2>&1 &
  PIDS+=($!)
  for _ in $(seq 1 "$(scaled 50)"); do [ -f "$TMP/$name.port" ] && break; sleep 0.1; done
  API_PORT=$(cat "$TMP/$name.port" 2>/dev/null)
  [ -n "$API_PORT" ]
}
# conf FILE URL [CA]: an autoscale config with one pool per kind and a missing one.
conf() {
  cat >"$1" <<YAML
actuator: kubernetes
kubernetes:
  api_url: $2
  token_file: $TMP/token
  ca_file: ${3:-/nonexistent}
  timeout_ms: 2000
pools:
  - {name: agg, target: {kind: Deployment, namespace: llm, name: vllm-agg}}
  - {name: dec, target: {kind: StatefulSet, namespace: llm, name: sgl-decode}}
  - {name: pre, target: {kind: LeaderWorkerSet, namespace: llm, name: lws-prefill}}
  - {name: gone, target: {kind: Deployment, namespace: llm, name: nope}}
YAML
}
state() { curl -s -m 2 "http://127.0.0.1:$API_PORT/_ctl/state"; }
last_req() { tail -1 "$TMP/$1.req"; }

start_api api --conflict 1 || { bad "check server started"; finish; }
conf "$TMP/a.yaml" "http://127.0.0.1:$API_PORT"
out=$("$TOOL" "$TMP/a.yaml" agg 3)
check "409 Conflict is an error that says so" \
  eval '[[ $out == *"HTTP 409, conflict"*"has been modified"* ]]'
check "Deployment: PATCH apps/v1 .../deployments/NAME/scale, exact headers and body" \
  [ "$("$TOOL" "$TMP/a.yaml" agg 3)" = ok -a "$(last_req api)" = \
    'PATCH /apis/apps/v1/namespaces/llm/deployments/vllm-agg/scale auth=ok ctype=application/merge-patch+json body={"spec":{"replicas":3}} -> 200' ]
check "StatefulSet: .../statefulsets/NAME/scale" \
  [ "$("$TOOL" "$TMP/a.yaml" dec 0)" = ok -a "$(last_req api)" = \
    'PATCH /apis/apps/v1/namespaces/llm/statefulsets/sgl-decode/scale auth=ok ctype=application/merge-patch+json body={"spec":{"replicas":0}} -> 200' ]
check "LeaderWorkerSet: leaderworkerset.x-k8s.io/v1 .../leaderworkersets/NAME/scale" \
  [ "$("$TOOL" "$TMP/a.yaml" pre 5)" = ok -a "$(last_req api)" = \
    'PATCH /apis/leaderworkerset.x-k8s.io/v1/namespaces/llm/leaderworkersets/lws-prefill/scale auth=ok ctype=application/merge-patch+json body={"spec":{"replicas":5}} -> 200' ]
check "the objects now have those replicas" \
  [ "$(state)" = '{"deployments/llm/vllm-agg": 3, "statefulsets/llm/sgl-decode": 0, "leaderworkersets/llm/lws-prefill": 5}' ]
check "GET the scale subresource: spec and status replicas" \
  [ "$("$TOOL" "$TMP/a.yaml" pre get)" = "spec 5 status 5" ]
out=$("$TOOL" "$TMP/a.yaml" gone 2)
check "404: the workload and the API server's message are named" \
  eval '[[ $out == "error: Deployment llm/nope: HTTP 404, not found"*"deployments.apps \"nope\" not found"* ]]'
echo -n "tok-stale" >"$TMP/token"
out=$("$TOOL" "$TMP/a.yaml" agg 1)
check "401 with a refused token: said so, nothing changed" \
  eval '[[ $out == *"HTTP 401, unauthorized"* ]] && grep -q "\"deployments/llm/vllm-agg\": 3" <(state)'
echo -n "tok-1" >"$TMP/token"
check "the token file is re-read on every request (rotation)" [ "$("$TOOL" "$TMP/a.yaml" agg 1)" = ok ]
check "no request went out without the token but the stale one" \
  [ "$(grep -v _ctl "$TMP/api.req" | grep -c 'auth=bad')" = 1 ]
# standby: parked pods instead of removed ones (actuator_k8s_park.c): the
# pods are found by the Scale's selector and marked kvgate.io/park.
cat >"$TMP/p.yaml" <<YAML
actuator: kubernetes
kubernetes: {api_url: "http://127.0.0.1:$API_PORT", token_file: "$TMP/token", timeout_ms: 2000}
pools:
  - {name: agg, standby: 1, target: {kind: Deployment, namespace: llm, name: vllm-agg}}
  - {name: dec, standby: 2, target: {kind: StatefulSet, namespace: llm, name: sgl-decode}}
YAML
pods() { curl -s -m 2 "http://127.0.0.1:$API_PORT/_ctl/pods" >"$TMP/pods.json"; json_get "$TMP/pods.json" "$1"; }
# Each apply lists the pods before it acts: its answer shows that listing
# with this tick's marks.
check "standby, 1 -> 3: the one pod listed, none parked" \
  [ "$("$TOOL" "$TMP/p.yaml" agg 3)" = "ok vllm-agg-0=ready" -a \
    "$(pods "sorted(j['deployments/llm/vllm-agg'])")" = "['vllm-agg-0', 'vllm-agg-1', 'vllm-agg-2']" ]
check "... the pods were listed by the Scale's selector" \
  grep -q 'GET /api/v1/namespaces/llm/pods?labelSelector=app%3Dvllm-agg auth=ok' "$TMP/api.req"
check "3 -> 1: one pod parked (the lowest ordinal), one removed: 2 replicas kept" \
  [ "$("$TOOL" "$TMP/p.yaml" agg 1)" = "ok vllm-agg-0=parked vllm-agg-1=ready vllm-agg-2=ready" -a \
    "$(state | grep -o '"deployments/llm/vllm-agg": [0-9]*')" = '"deployments/llm/vllm-agg": 2' ]
check "... a merge PATCH of the pod's annotations, with a deletion cost" \
  grep -q 'PATCH /api/v1/namespaces/llm/pods/vllm-agg-0 auth=ok ctype=application/merge-patch+json body={"metadata":{"annotations":{"kvgate.io/park":"level1","controller.kubernetes.io/pod-deletion-cost":"1000"}}} -> 200' "$TMP/api.req"
check "... the scale-down removed an active pod, not the parked one" \
  [ "$(pods "sorted(j['deployments/llm/vllm-agg'])")" = "['vllm-agg-0', 'vllm-agg-1']" ]
check "the next tick at 1: converged, nothing more parked or removed" \
  [ "$("$TOOL" "$TMP/p.yaml" agg 1)" = "ok vllm-agg-0=parked vllm-agg-1=ready" -a \
    "$(state | grep -o '"deployments/llm/vllm-agg": [0-9]*')" = '"deployments/llm/vllm-agg": 2' ]
check "1 -> 2: the parked pod is woken (annotations removed, starting again), no new pod" \
  [ "$("$TOOL" "$TMP/p.yaml" agg 2)" = "ok vllm-agg-0=starting vllm-agg-1=ready" -a \
    "$(pods "j['deployments/llm/vllm-agg']")" = "{'vllm-agg-0': {}, 'vllm-agg-1': {}}" ]
check "2 -> 4: new pods once none is parked" \
  [ "$("$TOOL" "$TMP/p.yaml" agg 4)" = "ok vllm-agg-0=ready vllm-agg-1=ready" -a \
    "$(state | grep -o '"deployments/llm/vllm-agg": [0-9]*')" = '"deployments/llm/vllm-agg": 4' ]
"$TOOL" "$TMP/p.yaml" dec 4 >/dev/null
check "StatefulSet, standby 2, 4 -> 0: two parked, two removed (the highest ordinals)" \
  [ "$("$TOOL" "$TMP/p.yaml" dec 0)" = "ok sgl-decode-0=parked sgl-decode-1=parked sgl-decode-2=ready sgl-decode-3=ready" -a \
    "$(pods "sorted(j['statefulsets/llm/sgl-decode'])")" = "['sgl-decode-0', 'sgl-decode-1']" ]
check "... and at 0 they stay parked, 2 replicas kept" \
  [ "$("$TOOL" "$TMP/p.yaml" dec 0)" = "ok sgl-decode-0=parked sgl-decode-1=parked" -a \
    "$(state | grep -o '"statefulsets/llm/sgl-decode": [0-9]*')" = '"statefulsets/llm/sgl-decode": 2' ]
check "0 -> 1: one woken, one still parked" \
  [ "$("$TOOL" "$TMP/p.yaml" dec 1)" = "ok sgl-decode-0=starting sgl-decode-1=parked" ]
printf 'actuator: kubernetes\nkubernetes: {api_url: "http://127.0.0.1:%s", token_file: "%s", timeout_ms: 2000}\npools:\n  - {name: g, standby: 1, target: {kind: Deployment, namespace: llm, name: nope}}\n' \
  "$API_PORT" "$TMP/token" >"$TMP/pg.yaml"
out=$("$TOOL" "$TMP/pg.yaml" g 1)
check "standby on a missing workload: the 404 is named, nothing else asked" \
  eval '[[ $out == "error: Deployment llm/nope: HTTP 404, not found"* ]]'

# kvgate autoscale with no lease acts alone; a missing target's error is
# shown in /autoscale and counted, the good target is scaled.
cat >"$TMP/d.yaml" <<YAML
interval_secs: 0.5
actuator: kubernetes
kubernetes: {api_url: "http://127.0.0.1:$API_PORT", token_file: "$TMP/token", timeout_ms: 1000}
pools:
  - {name: ok, planner: static, static_replicas: 2, target: {kind: Deployment, namespace: llm, name: vllm-agg}}
  - {name: gone, planner: static, static_replicas: 2, target: {kind: StatefulSet, namespace: llm, name: nope}}
YAML
AP=$(free_port)
"$KVG_BIN" autoscale --config "$TMP/d.yaml" --port "$AP" --host 127.0.0.1 >"$TMP/as.out" 2>"$TMP/as.log" &
PIDS+=($!)
wait_http "http://127.0.0.1:$AP/health" 10
for _ in $(seq 1 "$(scaled 50)"); do grep -q 'sgl-decode\|nope' "$TMP/api.req" && grep -q 'vllm-agg/scale.*:2}} -> 200' "$TMP/api.req" && break; sleep 0.1; done
for _ in $(seq 1 "$(scaled 30)"); do
  curl -s -m 2 "http://127.0.0.1:$AP/autoscale" >"$TMP/as.json"
  [ "$(json_get "$TMP/as.json" "j['pools'][1]['actuation']['errors'] >= 1")" = True ] && break; sleep 0.1
done
check "kvgate autoscale without a lease acts: the Deployment is scaled to the plan" \
  grep -q '"deployments/llm/vllm-agg": 2' <(state)
check "a missing target's error is in /autoscale, naming it and the 404" \
  [ "$(json_get "$TMP/as.json" "'StatefulSet llm/nope: HTTP 404, not found' in j['pools'][1]['actuation']['error'] and j['pools'][0]['actuation']['error'] is None")" = True ]
check "... and counted by result" \
  curl -s -m 2 "http://127.0.0.1:$AP/metrics" -o "$TMP/as.prom"
check "... ok for one pool, error for the other" \
  eval 'grep -q "kvgate_autoscale_actuations_total{pool=\"ok\",result=\"ok\"} [1-9]" "$TMP/as.prom" && grep -q "kvgate_autoscale_actuations_total{pool=\"gone\",result=\"error\"} [1-9]" "$TMP/as.prom"'
check "... and logged" grep -q 'pool gone: kubernetes to 2 replicas failed: StatefulSet llm/nope: HTTP 404' "$TMP/as.log"
check "serve --autoscale leaves kubernetes to kvgate autoscale, and says so" \
  eval '[[ $("$KVG_BIN" serve --port 0 --worker-urls http://127.0.0.1:1 --autoscale "$TMP/d.yaml" 2>&1) == *"runs in kvgate autoscale"* ]]'

kill "${PIDS[0]}"; wait "${PIDS[0]}" 2>/dev/null
out=$("$TOOL" "$TMP/a.yaml" agg 2)
check "API server down: a clear connection error, no hang" eval '[[ $out == "error: PATCH 127.0.0.1:"* ]]'

if openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=kube-apiserver \
  -addext "subjectAltName=IP:127.0.0.1" -keyout "$TMP/key.pem" -out "$TMP/cert.pem" \
  >/dev/null 2>&1; then
  start_api tls --cert "$TMP/cert.pem" --key "$TMP/key.pem" || bad "TLS check server started"
  conf "$TMP/t.yaml" "https://127.0.0.1:$API_PORT" "$TMP/cert.pem"
  check "https with the service account CA: PATCH accepted" [ "$("$TOOL" "$TMP/t.yaml" dec 4)" = ok ]
  check "... and applied" grep -q '"statefulsets/llm/sgl-decode": 4' <(curl -sk -m 2 "https://127.0.0.1:$API_PORT/_ctl/state")
  openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=other \
    -keyout "$TMP/k2.pem" -out "$TMP/other.pem" >/dev/null 2>&1
  conf "$TMP/w.yaml" "https://127.0.0.1:$API_PORT" "$TMP/other.pem"
  n0=$(wc -l <"$TMP/tls.req")
  out=$("$TOOL" "$TMP/w.yaml" dec 1)
  check "https with a wrong CA: refused before any request" \
    eval '[[ $out == error:* ]] && [ "$(wc -l <"$TMP/tls.req")" = "$n0" ]'
else
  bad "openssl could not make a test certificate"
fi

# Configuration errors are reported, not guessed around.
printf 'actuator: kubernetes\nkubernetes: {api_url: "http://127.0.0.1:1"}\npools:\n  - {name: a}\n' >"$TMP/bad1.yaml"
check "actuator kubernetes without a target: refused" eval '[[ $("$TOOL" "$TMP/bad1.yaml" a 1) == *"needs target"* ]]'
printf 'pools:\n  - {name: a, target: {kind: DaemonSet, namespace: llm, name: x}}\n' >"$TMP/bad2.yaml"
check "an unknown kind: refused" eval '[[ $("$TOOL" "$TMP/bad2.yaml" a 1) == *"Deployment, StatefulSet or LeaderWorkerSet"* ]]'
printf 'pools:\n  - {name: a, target: {kind: Deployment, namespace: llm, name: "a/../b"}}\n' >"$TMP/bad3.yaml"
check "a name that is not a DNS name: refused" eval '[[ $("$TOOL" "$TMP/bad3.yaml" a 1) == *"a DNS name"* ]]'
printf 'actuator: kubernetes\npools:\n  - {name: a, target: {kind: Deployment, namespace: llm, name: x}}\n' >"$TMP/bad4.yaml"
check "no api_url outside a cluster: said so" \
  eval '[[ $(env -u KUBERNETES_SERVICE_HOST "$TOOL" "$TMP/bad4.yaml" a 1) == *"KUBERNETES_SERVICE_HOST"* ]]'
finish
