# deploy/: every overlay renders with `kubectl kustomize` (offline) and no
# warning (no deprecated field) into the objects it promises: the overlays
# that need no CRD (aggregated, pd, redis-quotas) hold only built-in kinds,
# the CRD-dependent parts (KEDA ScaledObjects, the LeaderWorkerSets they
# scale, the ServiceMonitor) only the overlays named for them. For each
# gateway overlay: the Namespace, two or more replicas (a StatefulSet), a PDB
# that lets one go and keeps the rest, readiness on
# /readiness, a preStop pause within the grace period, the default policy,
# an example key in the Secret; every flag in the container's args and every
# key of its config file is one `kvgate serve --help` lists, and a real
# kvgate accepts them together; the serving mode is the one the overlay's
# name says, statically (the PD flag and the prefill/decode selectors) and
# live: the rendered args and config run with the discovery flags swapped
# for simulated engines of the same roles, the Secret's example key gets a
# 200 (no key a 401), and a long prompt is split into prefill and decode
# legs under pd* (never otherwise). The RBAC, Service, ServiceMonitor and
# KEDA objects fit each other; the Grafana dashboard's metric names exist
# in a real kvgate's /metrics. The replicas exchange routing history
# (docs/replicas.md): --peer-service is the StatefulSet's headless Service
# at the replicas' port (the Service selects them, publishes them unready
# too, and is no ServiceMonitor's), --peer-self the pod's own address
# (downward API) at that port, --peer-token the Secret's, every $(VAR) in
# the args one the container defines; live, with the Service's name
# standing for localhost, the gateway finds its peer by resolving it and
# takes a batch with the Secret's token only.
. "$(dirname "$0")/lib.sh"

if ! command -v kubectl >/dev/null 2>&1; then
  bad "kubectl (Debian's kubernetes-client) is installed"
  finish
fi
# The manifests use kustomize v5's fields (components, labels, patches):
# kubectl 1.27 and later embed it; Debian 12's kubernetes-client (1.20) does
# not, and would render none of them.
kver=$(kubectl version --client -o json 2>/dev/null |
  /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin).get("kustomizeVersion", ""))' 2>/dev/null)
case "$kver" in
  v[5-9]* | v[1-9][0-9]*) ;;
  *)
    skip "deploy/ renders" "kubectl's kustomize is '${kver:-unknown}', older than v5 (kubectl 1.27+ needed)"
    finish
    ;;
esac
"$KVG_BIN" serve --help >"$TMP/help"
D="$KVG_ROOT/deploy"
OVERLAYS=()
for d in "$D"/overlays/*/; do OVERLAYS+=("$(basename "$d")"); done
check "the overlays: ${OVERLAYS[*]}" [ "${#OVERLAYS[@]}" -ge 6 ]

for o in "${OVERLAYS[@]}"; do
  if kubectl kustomize "$D/overlays/$o" >"$TMP/$o.yaml" 2>"$TMP/$o.err"; then
    ok "$o: renders"
  else
    bad "$o: renders" "$(cat "$TMP/$o.err")"
  fi
  check "$o: no warning while rendering" [ ! -s "$TMP/$o.err" ]
  [ -s "$TMP/$o.err" ] && sed 's/^/#   /' "$TMP/$o.err"
done

# The checks on one rendered overlay: prints "ok NAME" / "FAIL NAME: why".
cat >"$TMP/check.py" <<'PY'
import base64, json, re, sys, yaml
overlay, path, helpfile, deploy = sys.argv[1:5]
docs = [d for d in yaml.safe_load_all(open(path)) if d]
helptext = open(helpfile).read()
flags = set(re.findall(r"^  --([a-z0-9-]+)", helptext, re.M))
def say(name, cond, why=""):
    print(("ok %s: %s" % (overlay, name)) if cond else ("FAIL %s: %s: %s" % (overlay, name, why)))
def objs(kind):
    return [d for d in docs if d["kind"] == kind]
def one(kind, name):
    m = [d for d in docs if d["kind"] == kind and d["metadata"]["name"] == name]
    return m[0] if m else None
def named(kind, prefix):  # generated names carry a hash suffix
    m = [d for d in docs if d["kind"] == kind and d["metadata"]["name"].startswith(prefix + "-")]
    return m[0] if m else None

builtin = {"v1", "apps/v1", "policy/v1", "rbac.authorization.k8s.io/v1"}
crd_kinds = {d["kind"] for d in docs if d["apiVersion"] not in builtin}
needs = {"aggregated-keda": {"ScaledObject"}, "pd-keda": {"ScaledObject"},
         "servicemonitor": {"ServiceMonitor"}}.get(overlay, set())
say("CRD kinds are the ones its name says (%s)" % (sorted(crd_kinds) or "none"), crd_kinds == needs,
    sorted(crd_kinds))
say("every namespaced object in namespace llm",
    all(d["metadata"].get("namespace") == "llm" for d in docs if d["kind"] != "Namespace"))

if overlay == "servicemonitor":
    # Against the Service every gateway overlay renders (the base's).
    base = [d for d in yaml.safe_load_all(open(deploy + "/base.yaml")) if d]
    svc = [d for d in base if d["kind"] == "Service" and d["metadata"]["name"] == "kvgate"][0]
    sm = one("ServiceMonitor", "kvgate")
    picked = [d["metadata"]["name"] for d in base if d["kind"] == "Service" and
              all(d["metadata"].get("labels", {}).get(k) == v
                  for k, v in sm["spec"]["selector"]["matchLabels"].items())]
    say("ServiceMonitor selects one Service of the gateway's (%s), one scrape per pod" % picked,
        picked == ["kvgate"], picked)
    say("ServiceMonitor selects the kvgate Service and scrapes /metrics on its port",
        sm is not None and all(svc["metadata"]["labels"].get(k) == v
                               for k, v in sm["spec"]["selector"]["matchLabels"].items())
        and sm["spec"]["endpoints"][0]["path"] == "/metrics"
        and sm["spec"]["endpoints"][0]["port"] in {p["name"] for p in svc["spec"]["ports"]})
    sys.exit(0)

kinds = {(d["kind"], d["metadata"]["name"]) for d in docs}
want = {("Namespace", "llm"), ("ServiceAccount", "kvgate"), ("Role", "kvgate-discovery"),
        ("Role", "kvgate-autoscaler"), ("RoleBinding", "kvgate-discovery"),
        ("RoleBinding", "kvgate-autoscaler"), ("StatefulSet", "kvgate"), ("Service", "kvgate"),
        ("Service", "kvgate-peers"), ("PodDisruptionBudget", "kvgate")}
want |= {"aggregated-keda": {("ScaledObject", "llm-engine")},
         "pd-keda": {("ScaledObject", "llm-prefill"), ("ScaledObject", "llm-decode")},
         "redis-quotas": {("Deployment", "kvgate-redis"), ("Service", "kvgate-redis")}}.get(overlay, set())
say("objects present", want <= kinds, sorted(want - kinds))
say("config, dashboard and keys generated",
    named("ConfigMap", "kvgate-config") and named("ConfigMap", "kvgate-dashboard")
    and named("Secret", "kvgate-keys"))

dep = one("StatefulSet", "kvgate")
pod = dep["spec"]["template"]
kvg = [c for c in pod["spec"]["containers"] if c["image"].split("/")[-1].split(":")[0] == "kvgate"]
say("one kvgate container", len(kvg) == 1, [c["image"] for c in pod["spec"]["containers"]])
c = kvg[0]
args = c["args"]
say("container runs kvgate serve", args[0] == "serve", args[:1])
used = [a[2:].split("=")[0] for a in args if a.startswith("--")]
say("every arg flag is in kvgate serve --help", set(used) <= flags, sorted(set(used) - flags))
cfg = yaml.safe_load(named("ConfigMap", "kvgate-config")["data"]["kvgate.yaml"])
keys = [k.replace("_", "-") for k in cfg]
say("every config key is a flag", set(keys) <= flags, sorted(set(keys) - flags))
default_policy = re.search(r"^  --policy NAME .*\(default: ([a-z_]+)\)", helptext, re.M).group(1)
say("the default policy (%s)" % default_policy, cfg.get("policy", default_policy) == default_policy
    and "--policy" not in args, cfg.get("policy"))
say("two or more gateway replicas", dep["spec"]["replicas"] >= 2, dep["spec"]["replicas"])

# The mode the overlay's name says: pd* in PD mode (vLLM's or SGLang's flag,
# or the config key), with prefill and decode selectors; the others not.
pd_flag = any(f in used for f in ("vllm-pd-disaggregation", "pd-disaggregation")) or \
    any(cfg.get(k) for k in ("vllm_pd_disaggregation", "pd_disaggregation"))
if overlay.startswith("pd"):
    say("PD mode on (--vllm-pd-disaggregation)", pd_flag)
    say("prefill and decode selectors, no plain one",
        "prefill-selector" in used and "decode-selector" in used and "selector" not in used)
else:
    say("aggregated: no PD flag", not pd_flag)
    say("aggregated: a worker selector, no prefill/decode ones",
        "selector" in used and "prefill-selector" not in used and "decode-selector" not in used)

mounts = {m["name"]: m["mountPath"] for m in c["volumeMounts"]}
vols = {v["name"]: v for v in pod["spec"]["volumes"]}
say("config mounted where --config points",
    args[args.index("--config") + 1] == mounts["config"] + "/kvgate.yaml"
    and vols["config"]["configMap"]["name"] == named("ConfigMap", "kvgate-config")["metadata"]["name"])
say("keys mounted where --keys points",
    args[args.index("--keys") + 1] == mounts["keys"] + "/keys.yaml"
    and vols["keys"]["secret"]["secretName"] == named("Secret", "kvgate-keys")["metadata"]["name"])
keys_text = base64.b64decode(named("Secret", "kvgate-keys")["data"]["keys.yaml"]).decode()
key_list = (yaml.safe_load(keys_text) or {}).get("keys") or []
say("the Secret holds a key (not keys: [])", len(key_list) >= 1, key_list)
example = re.findall(r"Bearer (sk-[A-Za-z0-9-]+)", keys_text)
say("its comment gives the example key and how to make more",
    len(example) == 1 and "kvgate keys new" in keys_text)
say("liveness probe on /liveness", c["livenessProbe"]["httpGet"]["path"] == "/liveness")
say("readiness probe on /readiness", c["readinessProbe"]["httpGet"]["path"] == "/readiness")
drain = int(args[args.index("--drain-timeout") + 1])
pre_stop = c["lifecycle"]["preStop"]
pre = pre_stop["sleep"]["seconds"] if "sleep" in pre_stop else int(pre_stop["exec"]["command"][-1])
say("preStop pauses before SIGTERM drains (%ss, then --drain-timeout %s)" % (pre, drain), pre > 0 and drain > 0)
say("grace period covers preStop + --drain-timeout",
    pod["spec"]["terminationGracePeriodSeconds"] > pre + drain,
    (pod["spec"]["terminationGracePeriodSeconds"], pre, drain))
sc = c.get("securityContext", {})
say("non-root, no privilege escalation, read-only root",
    pod["spec"]["securityContext"].get("runAsNonRoot") is True
    and sc.get("allowPrivilegeEscalation") is False and sc.get("readOnlyRootFilesystem") is True)
plabels = pod["metadata"]["labels"]
sel_ok = lambda sel: all(plabels.get(k) == v for k, v in sel.items())
say("StatefulSet selector matches its pods", sel_ok(dep["spec"]["selector"]["matchLabels"]))
svc = one("Service", "kvgate")
say("Service selects the gateway pods", sel_ok(svc["spec"]["selector"]))
cports = {p["name"] for p in c["ports"]}
say("Service targets the container's port", all(p["targetPort"] in cports for p in svc["spec"]["ports"]))
pdb = one("PodDisruptionBudget", "kvgate")
say("PDB selects the gateway pods", sel_ok(pdb["spec"]["selector"]["matchLabels"]))
n = dep["spec"]["replicas"]
mu, ma = pdb["spec"].get("maxUnavailable"), pdb["spec"].get("minAvailable")
say("PDB fits the %d replicas: one may go, some stay (maxUnavailable %s, minAvailable %s)" % (n, mu, ma),
    (isinstance(mu, int) and 1 <= mu < n and ma is None) or
    (isinstance(ma, int) and 1 <= ma < n and mu is None), pdb["spec"])

# The replicas' exchange. Kubernetes expands $(VAR) in args only for the
# container's own env: any other stays literal.
env = {e["name"]: e for e in c.get("env", [])}
refs = sorted({v for a in args for v in re.findall(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)", a)})
say("every $(VAR) in the args is the container's env (%s)" % refs, set(refs) <= set(env),
    sorted(set(refs) - set(env)))
def arg(flag):
    return args[args.index(flag) + 1] if flag in args else None
port = int(arg("--port"))
hl = one("Service", dep["spec"].get("serviceName", ""))
say("the StatefulSet's serviceName is a headless Service (%s)" % dep["spec"].get("serviceName"),
    hl is not None and hl["spec"].get("clusterIP") == "None")
say("the headless Service selects the gateway pods, unready ones too",
    hl is not None and sel_ok(hl["spec"]["selector"]) and hl["spec"].get("publishNotReadyAddresses") is True)
say("the replicas listen where the peer names point (--port %d, the container's port)" % port,
    any(p["containerPort"] == port for p in c["ports"]) and hl is not None
    and any(p["port"] == port for p in hl["spec"]["ports"]))
svc_name = hl["metadata"]["name"] if hl else "?"
service = arg("--peer-service") or ""
say("--peer-service is the headless Service at the replicas' port (%s)" % service,
    service.rstrip("/") == "http://%s:%d" % (svc_name, port) and "--peers" not in args, service)
self_arg = arg("--peer-self") or ""
m = re.fullmatch(r"http://\$\(([A-Za-z_0-9]+)\):%d" % port, self_arg)
say("--peer-self is the pod's own address, as the Service resolves to it (%s)" % self_arg,
    m is not None and env.get(m.group(1), {}).get("valueFrom", {}).get("fieldRef", {}).get("fieldPath")
    == "status.podIP", self_arg)
tok_arg = arg("--peer-token") or ""
m = re.fullmatch(r"\$\(([A-Za-z_0-9]+)\)", tok_arg)
ref = env.get(m.group(1), {}).get("valueFrom", {}).get("secretKeyRef") if m else None
sec = one("Secret", ref["name"]) if ref else None
token = base64.b64decode(sec["data"][ref["key"]]).decode() if sec and ref["key"] in sec.get("data", {}) else ""
say("--peer-token comes from a Secret of the render (%s)" % (ref and ref["name"]),
    bool(token) and ref["name"].startswith("kvgate-peer-token-"), tok_arg)
say("the peer token is one header value (no space or line break)", re.fullmatch(r"[!-~]+", token or " ") is not None)
# For the shell: the values the kubelet would give the $(VAR)s, on loopback.
vals = {}
for k, e in env.items():
    vf = e.get("valueFrom", {})
    if vf.get("fieldRef", {}).get("fieldPath") == "status.podIP":
        vals[k] = "127.0.0.1"
    elif vf.get("fieldRef", {}).get("fieldPath") == "metadata.name":
        vals[k] = dep["metadata"]["name"] + "-0"
    elif "secretKeyRef" in vf and vf["secretKeyRef"] is ref:
        vals[k] = token
    elif "value" in e:
        vals[k] = e["value"]
json.dump({"vars": vals, "token": token}, open(path + ".peers.json", "w"))
sa = pod["spec"]["serviceAccountName"]
def allowed(group, res, verb):
    for rb in objs("RoleBinding"):
        if not any(s["kind"] == "ServiceAccount" and s["name"] == sa for s in rb["subjects"]):
            continue
        role = one(rb["roleRef"]["kind"], rb["roleRef"]["name"])
        for r in (role or {}).get("rules", []):
            if group in r["apiGroups"] and res in r["resources"] and verb in r["verbs"]:
                return True
    return False
say("RBAC: list and watch endpointslices",
    allowed("discovery.k8s.io", "endpointslices", "list") and allowed("discovery.k8s.io", "endpointslices", "watch"))
say("RBAC: get pods (their labels)", allowed("", "pods", "get"))
say("RBAC: the kubernetes actuator's get and patch on every kind's scale",
    all(allowed(g, r, v) for g, r in (("apps", "deployments/scale"), ("apps", "statefulsets/scale"),
                                      ("leaderworkerset.x-k8s.io", "leaderworkersets/scale"))
        for v in ("get", "patch")))
ns_arg = args[args.index("--service-discovery-namespace") + 1] if "--service-discovery-namespace" in args else None
say("discovery on, in the RBAC's namespace", "--service-discovery" in args and ns_arg == dep["metadata"]["namespace"])
for so in objs("ScaledObject"):
    t = so["spec"]["triggers"][0]
    url = t["metadata"]["url"]
    say("ScaledObject %s reads kvgate's /autoscale/metrics" % so["metadata"]["name"],
        t["type"] == "metrics-api" and re.match(r"http://kvgate\.llm\.svc(:80)?/autoscale/metrics", url), url)
    kind = so["spec"]["scaleTargetRef"]["kind"]
    say("ScaledObject %s scales a %s" % (so["metadata"]["name"], kind),
        kind == ("LeaderWorkerSet" if overlay.startswith("pd") else "Deployment"))
if overlay == "redis-quotas":
    store = args[args.index("--quota-store") + 1]
    say("quota store is the Redis Service", store == "redis://kvgate-redis:%d" %
        one("Service", "kvgate-redis")["spec"]["ports"][0]["port"], store)
    say("several gateway replicas", dep["spec"]["replicas"] > 1)
# For the shell: the args, the config, the keys and the dashboard, to run and compare.
json.dump(args, open(path + ".args.json", "w"))
open(path + ".kvgate.yaml", "w").write(named("ConfigMap", "kvgate-config")["data"]["kvgate.yaml"])
open(path + ".keys.yaml", "w").write(keys_text)
open(path + ".key", "w").write(example[0] if example else "")
auto = named("ConfigMap", "kvgate-config")["data"].get("autoscale.yaml")
say("--autoscale and its file only where KEDA reads them", bool(auto) == ("--autoscale" in args) == bool(objs("ScaledObject")))
if auto:
    open(path + ".autoscale.yaml", "w").write(auto)
    pools = [p["name"] for p in yaml.safe_load(auto)["pools"]]
    say("--autoscale names the mounted file",
        args[args.index("--autoscale") + 1] == mounts["config"] + "/autoscale.yaml")
    for so in objs("ScaledObject"):
        loc = so["spec"]["triggers"][0]["metadata"]["valueLocation"]
        say("ScaledObject %s reads a pool kvgate plans (%s)" % (so["metadata"]["name"], loc),
            loc.startswith("pools.") and loc.split(".")[1] in pools and
            loc.endswith(".desiredReplicas"))
open(path + ".dashboard.json", "w").write(named("ConfigMap", "kvgate-dashboard")["data"]["kvgate.json"])
PY

kubectl kustomize "$D/base" >"$TMP/base.yaml" 2>/dev/null
for o in "${OVERLAYS[@]}"; do
  [ -s "$TMP/$o.yaml" ] || continue
  /usr/bin/python3 "$TMP/check.py" "$o" "$TMP/$o.yaml" "$TMP/help" "$TMP" >"$TMP/$o.res" 2>&1 ||
    bad "$o: checks ran" "$(tail -3 "$TMP/$o.res")"
  while IFS= read -r line; do
    case "$line" in
      ok\ *) ok "${line#ok }" ;;
      FAIL\ *) bad "${line#FAIL }" ;;
    esac
  done <"$TMP/$o.res"
done

# args_for OVERLAY PORT [drop-discovery]: the rendered args, one a line, with
# the files made local, the addresses loopback (Redis on $REDIS; the peers'
# Service is localhost at PORT: the replica finds itself, as each does in
# the cluster), each $(VAR) what the kubelet gives a pod, on loopback; with
# drop-discovery the discovery flags and their values left out (the caller
# adds workers).
REDIS=$(free_port)
args_for() {
  /usr/bin/python3 - "$TMP/$1.yaml" "$2" "$REDIS" "${3:-}" <<'PY'
import json, re, sys
path, port, redis, drop = sys.argv[1:5]
args = json.load(open(path + ".args.json"))
env = json.load(open(path + ".peers.json"))["vars"]
args = [re.sub(r"\$\(([A-Za-z_0-9]+)\)", lambda m: env.get(m.group(1), m.group(0)), a) for a in args]
args = [re.sub(r":8080$", ":" + port, a) if a.startswith("http://127.0.0.1:") else a for a in args]
# The quota store's Service name resolves in the cluster only: a loopback
# Redis stands for it (the live run below starts one there).
sub = {"--config": path + ".kvgate.yaml", "--keys": path + ".keys.yaml",
       "--autoscale": path + ".autoscale.yaml", "--host": "127.0.0.1", "--port": port,
       "--quota-store": "redis://127.0.0.1:" + redis, "--peer-service": "http://localhost:" + port}
discovery = {"--service-discovery", "--service-discovery-namespace", "--service-discovery-port",
             "--selector", "--prefill-selector", "--decode-selector"}
out, skipping = [], False
for i, a in enumerate(args[1:]):
    if a.startswith("--"):
        skipping = drop and a in discovery
    if skipping:
        continue
    prev = args[i]
    out.append(sub.get(prev, a))
print("\n".join(out))
PY
}

# A real kvgate takes each gateway overlay's args and config together.
# Flags parse before discovery looks for its cluster, so "not in a cluster"
# means all was taken.
GATEWAYS=()
for o in "${OVERLAYS[@]}"; do [ -s "$TMP/$o.yaml.args.json" ] && GATEWAYS+=("$o"); done
for o in "${GATEWAYS[@]}"; do
  mapfile -t A < <(args_for "$o" "$(free_port)")
  env -u KUBERNETES_SERVICE_HOST timeout "$(scaled 10)" "$KVG_BIN" serve "${A[@]}" >"$TMP/$o.args.out" 2>&1
  check "$o: kvgate serve accepts the rendered args and config" grep -q "not in a cluster" "$TMP/$o.args.out"
done

# Live, each gateway overlay in its mode: simulated engines in the roles its
# discovery would find (a server; or a prefill and a decode), the rendered
# args and config otherwise as they are, the Secret's example key.
LONG=$(printf 'the quick brown fox jumps over the lazy dog %.0s' $(seq 1 16)) # > --pd-threshold-tokens
SRV=$(free_port) PF=$(free_port) PFS=$(free_port) DC=$(free_port)
start_sim "$SRV" --model m --profile instant || bad "server sim started"
start_sim "$PF" --model m --profile instant --role prefill --side-channel-port "$PFS" || bad "prefill sim started"
start_sim "$DC" --model m --profile instant --role decode || bad "decode sim started"
for o in "${GATEWAYS[@]}"; do
  P=$(free_port)
  mapfile -t A < <(args_for "$o" "$P" drop)
  case "$o" in
    pd*) A+=(--prefill "http://127.0.0.1:$PF" none --decode "http://127.0.0.1:$DC") ;;
    *) A+=(--worker-urls "http://127.0.0.1:$SRV") ;;
  esac
  if [ "$o" = redis-quotas ]; then
    if ! command -v redis-server >/dev/null 2>&1; then
      skip "$o: live" "redis-server is not installed"
      continue
    fi
    start_redis "$REDIS" || bad "redis started"
  fi
  "$KVG_BIN" serve "${A[@]}" >"$TMP/$o.live.out" 2>"$TMP/$o.live.log" &
  GPID=$!
  PIDS+=($GPID)
  G=http://127.0.0.1:$P
  if ! wait_http "$G/readiness" 15; then
    bad "$o: live gateway ready" "$(tail -5 "$TMP/$o.live.log")"
    continue
  fi
  KEY=$(cat "$TMP/$o.yaml.key")
  body=$(printf '{"model":"m","prompt":"%s","max_tokens":4}' "$LONG")
  code=$(curl -s -m 10 -o /dev/null -w '%{http_code}' "$G/v1/completions" -d "$body")
  check "$o: live: without a key, 401 ($code)" [ "$code" = 401 ]
  code=$(curl -s -m 20 -o "$TMP/$o.answer" -w '%{http_code}' "$G/v1/completions" \
    -H "authorization: Bearer $KEY" -d "$body")
  check "$o: live: the Secret's example key is served ($code)" [ "$code" = 200 ]
  curl -s -m 5 "$G/metrics" -H "authorization: Bearer $KEY" >"$TMP/$o.metrics"
  # The replicas' exchange: the Service's name resolved, each address a
  # peer named as --peer-self names a replica (/workers needs an admin key:
  # /metrics names the peers too).
  PJ=$TMP/$o.yaml.peers.json
  for _ in $(seq 1 "$(scaled 50)"); do
    grep -q "^kvgate_peer_up{peer=\"http://127.0.0.1:$P\"} 1" "$TMP/$o.metrics" && break
    sleep 0.1
    curl -s -m 5 "$G/metrics" -H "authorization: Bearer $KEY" >"$TMP/$o.metrics"
  done
  check "$o: live: --peer-service's name resolved (localhost here): its address is a peer, up" \
    grep -q "^kvgate_peer_up{peer=\"http://127.0.0.1:$P\"} 1" "$TMP/$o.metrics"
  PTOK=$(json_get "$PJ" 'j["token"]')
  CT='content-type: application/x-kvgate-exchange'
  code=$(curl -s -m 5 -o /dev/null -w '%{http_code}' "$G/peers/batch" -H "$CT" --data-binary junk)
  check "$o: live: a batch without the peer token: 401 ($code)" [ "$code" = 401 ]
  code=$(curl -s -m 5 -o "$TMP/$o.batch" -w '%{http_code}' "$G/peers/batch" -H "$CT" \
    -H "authorization: Bearer $PTOK" --data-binary junk)
  check "$o: live: the Secret's peer token is taken (a junk batch then 400: $code)" [ "$code" = 400 ]
  split=$(prom_value 'kvgate_pd_decisions_total{decision="prefill_decode"}' <"$TMP/$o.metrics")
  case "$o" in
    pd*) check "$o: live: PD mode, the long prompt split into prefill and decode legs" [ "${split:-0}" = 1 ] ;;
    *) check "$o: live: aggregated, no prefill/decode split (${split:-none})" [ "${split:-0}" = 0 ] ;;
  esac
  kill -TERM "$GPID"
  for _ in $(seq 1 "$(scaled 100)"); do kill -0 "$GPID" 2>/dev/null || break; sleep 0.1; done
done

# The dashboard's metric names against a real kvgate's /metrics: a sim
# behind kvgate with a quota'd key and discovery (replayed API server), one
# request through it.
if [ -s "$TMP/aggregated.yaml.dashboard.json" ]; then
  S=$(free_port); GW=$(free_port)
  start_sim "$S" --model m1 || bad "sim started"
  /usr/bin/python3 "$KVG_ROOT/tests/fixtures/k8s/replay.py" --dir "$KVG_ROOT/tests/fixtures/k8s" \
    --port-file "$TMP/api.port" --log "$TMP/api.req" >"$TMP/api.log" 2>&1 &
  PIDS+=($!)
  for _ in $(seq 1 "$(scaled 50)"); do [ -f "$TMP/api.port" ] && break; sleep 0.1; done
  cat >"$TMP/qkeys.yaml" <<YAML
keys:
  - name: dash
    hash: $("$KVG_BIN" keys hash dash-key)
    admin: true
    limits:
      tokens_per_minute: 100000
YAML
  start_serve "$GW" --worker-urls "http://127.0.0.1:$S" --keys "$TMP/qkeys.yaml" \
    --service-discovery --selector app=llm --service-discovery-namespace llm \
    --service-discovery-port 8000 --service-discovery-api-url "http://127.0.0.1:$(cat "$TMP/api.port")" \
    --health-check-interval-secs 1 || bad "serve started"
  wait_http "http://127.0.0.1:$GW/readiness" 10
  curl -s -o /dev/null "http://127.0.0.1:$GW/v1/completions" -H 'authorization: Bearer dash-key' \
    -d '{"model":"m1","prompt":"hello","max_tokens":4}'
  for _ in $(seq 1 "$(scaled 50)"); do
    curl -s "http://127.0.0.1:$GW/metrics" -H 'authorization: Bearer dash-key' >"$TMP/metrics"
    grep -q '^kvgate_worker_engine_waiting' "$TMP/metrics" && grep -q '^kvgate_discovery_workers' "$TMP/metrics" && break
    sleep 0.2
  done
  missing=$(/usr/bin/python3 - "$TMP/aggregated.yaml.dashboard.json" "$TMP/metrics" <<'PY'
import json, re, sys
d = json.load(open(sys.argv[1]))
exprs = [t["expr"] for p in d["panels"] for t in p["targets"]]
exprs += [v.get("query", "") for v in d["templating"]["list"]]
used = {re.sub(r"_(bucket|sum|count)$", "", m) for e in exprs for m in re.findall(r"\bkvgate_[a-z0-9_]+", e)}
have = set(re.findall(r"^# TYPE (\S+)", open(sys.argv[2]).read(), re.M))
print(" ".join(sorted(used - have)) if used else "no metrics in the dashboard")
PY
)
  check "dashboard metric names exist in kvgate's /metrics${missing:+ (missing: $missing)}" [ -z "$missing" ]
fi
finish
