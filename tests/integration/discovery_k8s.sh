# Kubernetes discovery against a replaying API server (no API server runs
# here): tests/fixtures/k8s/replay.py serves recorded EndpointSlice lists,
# watch streams and pods. The scenario: a first list that fails (backoff),
# a list, a watch that makes a pod ready, then not ready, then drops; a
# watch resumed from the last resourceVersion that relabels a pod and ends
# in a 410 Gone; a relist where a pod is gone. The pool is read through
# GET /workers, the reasons through /metrics. Then the same over HTTPS with
# the right CA, and with a wrong one. The workers' addresses are TEST-NET
# (192.0.2.x) and never dialled: health checks and scrapes are off.
. "$(dirname "$0")/lib.sh"

FIX="$KVG_ROOT/tests/fixtures/k8s"
echo -n "sekret-token" >"$TMP/token"

# start_api NAME ARGS...: the replaying server; its port in $API_PORT.
start_api() {
  local name=$1; shift
  /usr/bin/python3 "$FIX/replay.py" --dir "$FIX" --port-file "$TMP/$name.port" \
    --log "$TMP/$name.req" --token sekret-token "$@" >"$TMP/$name.log" 2>&1 &
  PIDS+=($!)
  for _ in $(seq 1 "$(scaled 50)"); do [ -f "$TMP/$name.port" ] && break; sleep 0.1; done
  API_PORT=$(cat "$TMP/$name.port" 2>/dev/null)
  [ -n "$API_PORT" ]
}

# workers PORT: "url role" lines, sorted.
workers() {
  curl -s -m 2 "http://127.0.0.1:$1/workers" |
    /usr/bin/python3 -c 'import json,sys; [print(w["url"], w["role"]) for w in sorted(json.load(sys.stdin)["workers"], key=lambda w: w["url"])]'
}
# wait_workers PORT EXPECTED: until workers PORT prints EXPECTED (10 s).
wait_workers() {
  local i
  for i in $(seq 1 "$(scaled 100)"); do
    [ "$(workers "$1")" = "$2" ] && return 0
    sleep 0.1
  done
  echo "workers: got [$(workers "$1")], want [$2]" >&2
  return 1
}
metric() { # metric PORT 'name{labels}' -> value or empty
  curl -s -m 2 "http://127.0.0.1:$1/metrics" | awk -v k="$2" '$1 == k {print $2}'
}
fails() { ! "$@"; }
next_step() { curl -s -m 2 "http://127.0.0.1:$API_PORT/_ctl/next" >/dev/null; }

start_api api --fail-first-list || { bad "replay server started"; finish; }
GW=$(free_port)
start_serve "$GW" --service-discovery --selector app=llm --prefill-selector app=llm-prefill \
  --service-discovery-namespace llm --service-discovery-port 8000 \
  --service-discovery-api-url "http://127.0.0.1:$API_PORT" \
  --service-discovery-token-file "$TMP/token" \
  --disable-health-check --load-monitor-interval-ms 0 --threads 1 || { bad "serve started"; finish; }

W10="http://192.0.2.10:8000"; W20="http://192.0.2.20:8000"; W40="http://192.0.2.40:8000"
# After the list (the first one failed) and the watch's first event: the
# leader of group 0, the prefill leader, and srv-1 that became ready. Not
# srv-0-1 (member 1), enc-0 (encode), other-0 (no selector matches).
check "list + first watch event: leaders of server and prefill groups" \
  wait_workers "$GW" "$W10 regular
$W20 regular
$W40 prefill"
check "a failing list is retried (errors counted)" [ "$(metric "$GW" kvgate_discovery_errors_total)" -ge 1 ]
check "the first list was answered 500, the second used" [ "$(grep -c 'endpointslices?limit=500 auth' "$TMP/api.req")" = 2 ]
check "requests carry the service account token" [ "$(grep -c noauth "$TMP/api.req")" = 0 ]
check "pods read for their labels" grep -q 'GET /api/v1/namespaces/llm/pods/srv-0 ' "$TMP/api.req"
check "subordinate and encode pods are not read as candidates... but srv-0-1 was read" \
  grep -q 'pods/srv-0-1 ' "$TMP/api.req"
check "not-ready srv-1 was not read before it was ready" [ "$(grep -c 'pods/srv-1 ' "$TMP/api.req")" = 1 ]
check "watch from the list's resourceVersion with bookmarks" \
  grep -q 'watch=1&allowWatchBookmarks=true&resourceVersion=100&' "$TMP/api.req"

# srv-0 turns not ready; then the watch is cut.
next_step
check "not ready: srv-0 leaves" wait_workers "$GW" "$W20 regular
$W40 prefill"
check "deregistration counted as not_ready" [ "$(metric "$GW" 'kvgate_discovery_deregistrations_total{reason="not_ready"}')" = 1 ]
check "its worker series are gone" [ -z "$(curl -s "http://127.0.0.1:$GW/metrics" | grep "worker=\"$W10\"")" ]
next_step # the drop
for _ in $(seq 1 "$(scaled 50)"); do grep -q 'resourceVersion=106&' "$TMP/api.req" && break; sleep 0.1; done
check "a dropped watch resumes from the last resourceVersion (106), no relist" \
  grep -q 'watch=1&allowWatchBookmarks=true&resourceVersion=106&' "$TMP/api.req"
check "... without listing again" [ "$(grep -c 'endpointslices?limit=500' "$TMP/api.req")" = 2 ]
# pf-0 was relabelled and its slice modified: its labels are read again.
check "relabelled pod leaves" wait_workers "$GW" "$W20 regular"
check "deregistration counted as selector_changed" \
  [ "$(metric "$GW" 'kvgate_discovery_deregistrations_total{reason="selector_changed"}')" = 1 ]
# The watch ends in ERROR 410: relist; srv-0 is ready again, srv-1 is gone.
next_step
check "410 Gone: relisted; srv-1 deleted, srv-0 back" wait_workers "$GW" "$W10 regular"
check "deregistration counted as pod_deleted" \
  [ "$(metric "$GW" 'kvgate_discovery_deregistrations_total{reason="pod_deleted"}')" = 1 ]
check "relists counted" [ "$(metric "$GW" kvgate_discovery_relists_total)" = 1 ]
check "registrations: srv-0, srv-1, pf-0, srv-0 again" [ "$(metric "$GW" kvgate_discovery_registrations_total)" = 4 ]
check "workers gauge" [ "$(metric "$GW" kvgate_discovery_workers)" = 1 ]
for _ in $(seq 1 "$(scaled 50)"); do grep -q 'resourceVersion=200&' "$TMP/api.req" && break; sleep 0.1; done
check "watch again from the relist's resourceVersion" grep -q 'resourceVersion=200&' "$TMP/api.req"
check "no series of removed workers" \
  [ -z "$(curl -s "http://127.0.0.1:$GW/metrics" | grep -e "worker=\"$W20\"" -e "worker=\"$W40\"")" ]
kill -TERM "$SERVE_PID"
for _ in $(seq 1 "$(scaled 50)"); do kill -0 "$SERVE_PID" 2>/dev/null || break; sleep 0.1; done
check "SIGTERM stops serve while a watch is open" fails kill -0 "$SERVE_PID" 2>/dev/null

# --encode-selector: the encode pod becomes an encode worker (the encode
# stage's only; it is never picked to answer), the rest as before.
start_api enc || bad "second replay server started"
GWE=$(free_port)
start_serve "$GWE" --service-discovery --selector app=llm --prefill-selector app=llm-prefill \
  --encode-selector modeldeployment.gpustack.ai/role-kind=encode \
  --service-discovery-namespace llm --service-discovery-port 8000 \
  --service-discovery-api-url "http://127.0.0.1:$API_PORT" \
  --service-discovery-token-file "$TMP/token" \
  --disable-health-check --load-monitor-interval-ms 0 --threads 1
check "--encode-selector: enc-0 discovered as an encode worker" wait_workers "$GWE" "$W10 regular
$W20 regular
http://192.0.2.30:8000 encode
$W40 prefill"
check "--encode-selector needs --service-discovery" \
  fails "$KVG_BIN" serve --encode-selector a=b --port 0 2>/dev/null

# HTTPS: a certificate for 127.0.0.1, as the API server's names its IP.
if openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=kube-apiserver \
  -addext "subjectAltName=IP:127.0.0.1" -keyout "$TMP/key.pem" -out "$TMP/cert.pem" \
  >/dev/null 2>&1; then
  start_api tls --cert "$TMP/cert.pem" --key "$TMP/key.pem" || bad "TLS replay server started"
  GW2=$(free_port)
  start_serve "$GW2" --service-discovery --selector app=llm --service-discovery-namespace llm \
    --service-discovery-port 8000 --service-discovery-api-url "https://127.0.0.1:$API_PORT" \
    --service-discovery-ca-file "$TMP/cert.pem" --service-discovery-token-file "$TMP/token" \
    --disable-health-check --load-monitor-interval-ms 0 --threads 1
  check "https with the API server's CA: discovered" wait_workers "$GW2" "$W10 regular
$W20 regular"
  openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=other \
    -keyout "$TMP/k2.pem" -out "$TMP/other.pem" >/dev/null 2>&1
  GW3=$(free_port)
  start_serve "$GW3" --service-discovery --selector app=llm --service-discovery-namespace llm \
    --service-discovery-port 8000 --service-discovery-api-url "https://127.0.0.1:$API_PORT" \
    --service-discovery-ca-file "$TMP/other.pem" --service-discovery-token-file "$TMP/token" \
    --disable-health-check --load-monitor-interval-ms 0 --threads 1
  for _ in $(seq 1 "$(scaled 50)"); do [ "$(metric "$GW3" kvgate_discovery_errors_total)" ] && break; sleep 0.1; done
  check "https with a wrong CA: refused, counted, no workers" \
    [ "$(metric "$GW3" kvgate_discovery_errors_total)" -ge 1 -a -z "$(workers "$GW3")" ]
else
  bad "openssl could not make a test certificate"
fi

# Models by a pod label (docs/models.md): `models:` lists no workers, each
# pod's kvgate.io/model label names its model; the port is each slice's
# own (--service-discovery-port 0), so real simulated engines on 127.0.0.1
# answer. Pods of two models appear (a list, then a watch event), one moves
# from m1 to m2 (relabelled, its slice modified), one disappears (its
# slice deleted): routing follows. A pod without the label, and one whose
# label names no model, are logged and serve nothing; a SIGHUP that adds
# that model makes its pod serve it without rediscovery. m2 also lists
# static workers: MS, and M2, which is a pod too (one worker, never
# removed by discovery when its pod goes).
M1=$(free_port); M12=$(free_port); M2=$(free_port); MX=$(free_port); MN=$(free_port); MS=$(free_port)
start_sim "$M1" --model m1 --profile instant || exit 1
start_sim "$M12" --served-model-name m1,m2 --profile instant || exit 1
start_sim "$M2" --model m2 --profile instant || exit 1
start_sim "$MS" --model m2 --profile instant || exit 1
mkdir -p "$TMP/k8sm"
/usr/bin/python3 - "$TMP/k8sm" "$M1" "$M12" "$M2" "$MX" "$MN" <<'PY'
import json, sys
d, ports = sys.argv[1], dict(zip(["a1", "a2", "b1", "x", "n"], map(int, sys.argv[2:])))
models = {"a1": "m1", "a2": "m1", "b1": "m2", "x": "nope", "n": None}
def pod(name, model):
    labels = {"app": "llm"}
    if model: labels["kvgate.io/model"] = model
    return {"kind": "Pod", "apiVersion": "v1", "metadata": {"name": name, "namespace": "llm",
            "uid": "uid-" + name, "labels": labels}}
def slice_(name, rv):
    return {"kind": "EndpointSlice", "apiVersion": "discovery.k8s.io/v1",
            "metadata": {"name": "s-" + name, "namespace": "llm", "resourceVersion": rv},
            "addressType": "IPv4", "ports": [{"name": "http", "protocol": "TCP", "port": ports[name]}],
            "endpoints": [{"addresses": ["127.0.0.1"], "conditions": {"ready": True},
                           "targetRef": {"kind": "Pod", "namespace": "llm", "name": name, "uid": "uid-" + name}}]}
def w(f, o): json.dump(o, open(d + "/" + f, "w"))
w("pods.json", {n: pod(n, m) for n, m in models.items()})
w("pods_moved.json", {"a2": pod("a2", "m2")})
w("list1.json", {"kind": "EndpointSliceList", "apiVersion": "discovery.k8s.io/v1",
                 "metadata": {"resourceVersion": "100"},
                 "items": [slice_(n, "100") for n in ("a1", "b1", "x", "n")]})
ev = lambda t, o: json.dumps({"type": t, "object": o})
open(d + "/watch1.jsonl", "w").write("\n".join([
    ev("ADDED", slice_("a2", "101")), "#wait", "#pods pods_moved.json",
    ev("MODIFIED", slice_("a2", "102")), "#wait", ev("DELETED", slice_("b1", "103"))]) + "\n")
PY
start_api models --dir "$TMP/k8sm" || bad "replay server (models) started"
GWM=$(free_port)
cat >"$TMP/models.yaml" <<YAML
models:
  - name: m1
    aliases: [gpt-4o]
  - name: m2
    workers: [http://127.0.0.1:$M2, http://127.0.0.1:$MS]
YAML
start_serve "$GWM" --config "$TMP/models.yaml" --service-discovery --selector app=llm \
  --model-label kvgate.io/model --service-discovery-namespace llm --service-discovery-port 0 \
  --service-discovery-api-url "http://127.0.0.1:$API_PORT" --service-discovery-token-file "$TMP/token" \
  --health-check-interval-secs 0.2 --threads 1 || { bad "serve (models) started"; finish; }
MLOG=$TMP/serve-$GWM.log
model_workers() { # PORT: "port=model" of each worker, sorted (its label's value when no model)
  curl -s -m 2 "http://127.0.0.1:$1/workers" | /usr/bin/python3 -c '
import json, sys
print(" ".join(sorted("%s=%s" % (w["url"].rsplit(":", 1)[1], w["model"] or "(" + w.get("model_label", "") + ")")
                      for w in json.load(sys.stdin)["workers"])))'
}
wait_model_workers() { # PORT EXPECTED (10 s)
  local i want
  want=$(echo "$2" | tr ' ' '\n' | sort | tr '\n' ' ' | sed 's/ $//')
  for i in $(seq 1 "$(scaled 100)"); do
    [ "$(model_workers "$1")" = "$want" ] && return 0
    sleep 0.1
  done
  echo "model workers: got [$(model_workers "$1")], want [$want]" >&2
  return 1
}
# served MODEL N: N chats for MODEL, each a new prompt; the ports of the
# workers that answered them, sorted and unique (the status of any non-200).
served() {
  local i code
  for i in $(seq 1 "$2"); do
    code=$(curl -s -m 10 -o /dev/null -D "$TMP/h" -w '%{http_code}' "http://127.0.0.1:$GWM/v1/chat/completions" \
      -d "{\"model\":\"$1\",\"max_tokens\":2,\"messages\":[{\"role\":\"user\",\"content\":\"prompt $RANDOM $i\"}]}")
    [ "$code" = 200 ] || echo "status-$code"
    grep -i '^x-kvgate-worker' "$TMP/h" | tr -d '\r' | sed 's/.*://'
  done | sort -u | tr '\n' ' ' | sed 's/ $//'
}
check "model label: pods of m1 and m2 join their models (list, then a watch event)" \
  wait_model_workers "$GWM" "$M1=m1 $M12=m1 $M2=m2 $MS=m2 $MX=(nope)"
check "  ... a pod without the label is logged, never used" \
  grep -q "pod llm/n matches a selector but has no usable label kvgate.io/model" "$MLOG"
check "  ... a label naming no model is logged" \
  grep -q "127.0.0.1:$MX: its pod's label kvgate.io/model names 'nope', which is no model" "$MLOG"
sorted() { printf '%s\n' "$@" | sort | tr '\n' ' ' | sed 's/ $//'; }
healthy() { # PORT...: every one of these workers healthy
  curl -s -m 2 "http://127.0.0.1:$GWM/workers" | /usr/bin/python3 -c '
import json, sys
h = {w["url"].rsplit(":", 1)[1] for w in json.load(sys.stdin)["workers"] if w["healthy"]}
sys.exit(0 if set(sys.argv[1:]) <= h else 1)' "$@"
}
for _ in $(seq 1 "$(scaled 100)"); do healthy "$M1" "$M12" "$M2" "$MS" && break; sleep 0.1; done
check "  ... m1 routed to m1's pods only, both" [ "$(served m1 12)" = "$(sorted "$M1" "$M12")" ]
check "  ... its alias gpt-4o too" sh -c "for p in $(served gpt-4o 4); do [ \$p = $M1 ] || [ \$p = $M12 ] || exit 1; done"
check "  ... m2 to its pod and its static worker (one worker at the pod's URL)" \
  [ "$(served m2 12)" = "$(sorted "$M2" "$MS")" ]
check "  ... an unknown model: 404" [ "$(curl -s -m 5 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$GWM/v1/chat/completions" -d '{"model":"nope","messages":[{"role":"user","content":"hi"}]}')" = 404 ]
next_step
check "a pod relabelled from m1 to m2 moves" wait_model_workers "$GWM" "$M1=m1 $M12=m2 $M2=m2 $MS=m2 $MX=(nope)"
for _ in $(seq 1 "$(scaled 100)"); do healthy "$M12" && break; sleep 0.1; done # it joined again
check "  ... m1 now routed to its one pod" [ "$(served m1 8)" = "$M1" ]
check "  ... m2 to both of its pods and its static worker" \
  [ "$(served m2 18)" = "$(sorted "$M12" "$M2" "$MS")" ]
next_step
# The deletion is the watch's last event: once discovery watches again,
# it was applied.
watches() { grep -c 'watch=' "$TMP/models.req"; }
for _ in $(seq 1 "$(scaled 100)"); do [ "$(watches)" -ge 2 ] && break; sleep 0.1; done
check "a deleted pod's slice was read (the watch resumed)" [ "$(watches)" -ge 2 ]
check "  ... a static worker at its URL stays: discovery never removed it" wait_model_workers "$GWM" "$M1=m1 $M12=m2 $M2=m2 $MS=m2 $MX=(nope)"
check "  ... m2 routed to all three" [ "$(served m2 18)" = "$(sorted "$M12" "$M2" "$MS")" ]
cat >>"$TMP/models.yaml" <<YAML
  - name: nope
YAML
kill -HUP "$SERVE_PID"
check "SIGHUP under discovery reloads the models" \
  wait_grep 'SIGHUP: models reloaded (3 models, 4 names); workers follow Kubernetes discovery' "$MLOG"
check "  ... the pod whose label names the new model serves it, not rediscovered" \
  wait_model_workers "$GWM" "$M1=m1 $M12=m2 $M2=m2 $MS=m2 $MX=nope"
sed -i "s|, http://127.0.0.1:$MS]|]|" "$TMP/models.yaml"
kill -HUP "$SERVE_PID"
check "  ... a changed static workers: list under discovery is refused (a restart applies it)" \
  wait_grep "reload refused, keeping the current models: .*static workers: changed" "$MLOG"
check "  ... the static worker stays" wait_model_workers "$GWM" "$M1=m1 $M12=m2 $M2=m2 $MS=m2 $MX=nope"
check "  ... models: with --service-discovery needs --model-label" \
  fails "$KVG_BIN" serve --config "$TMP/models.yaml" --service-discovery --selector app=llm --port 0 2>/dev/null

# Flags: discovery without a selector, a selector without discovery.
check "--service-discovery needs a selector" fails "$KVG_BIN" serve --service-discovery --port 0 2>/dev/null
check "--selector needs --service-discovery" fails "$KVG_BIN" serve --selector a=b --port 0 2>/dev/null
check "a selector term must be key=value" fails "$KVG_BIN" serve --service-discovery --selector nope --port 0 2>/dev/null
finish
