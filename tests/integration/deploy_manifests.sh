# deploy/: every overlay renders with `kubectl kustomize` (offline) into the
# objects it promises; every flag in the gateway's container args and every
# key of its config file is one `kvgate serve --help` lists, and a real kvgate
# accepts them together; probes, drain, PDB, Service, ServiceMonitor, RBAC and
# KEDA objects fit each other; the Grafana dashboard's metric names are ones
# a real kvgate's /metrics exposes.
. "$(dirname "$0")/lib.sh"

if ! command -v kubectl >/dev/null 2>&1; then
  bad "kubectl (Debian's kubernetes-client) is installed"
  finish
fi
"$KVG_BIN" serve --help >"$TMP/help"
D="$KVG_ROOT/deploy"

for o in aggregated pd redis-quotas; do
  if kubectl kustomize "$D/overlays/$o" >"$TMP/$o.yaml" 2>"$TMP/$o.err"; then
    ok "$o: renders"
  else
    bad "$o: renders" "$(cat "$TMP/$o.err")"
  fi
done

# The checks on one rendered overlay: prints "ok NAME" / "FAIL NAME: why".
cat >"$TMP/check.py" <<'PY'
import json, re, sys, yaml
overlay, path, helpfile = sys.argv[1:4]
docs = [d for d in yaml.safe_load_all(open(path)) if d]
flags = set(re.findall(r"^  --([a-z0-9-]+)", open(helpfile).read(), re.M))
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

kinds = {(d["kind"], d["metadata"]["name"]) for d in docs}
want = {("ServiceAccount", "kvgate"), ("Role", "kvgate-discovery"), ("Role", "kvgate-autoscaler"),
        ("RoleBinding", "kvgate-discovery"), ("RoleBinding", "kvgate-autoscaler"),
        ("Deployment", "kvgate"), ("Service", "kvgate"), ("PodDisruptionBudget", "kvgate"),
        ("ServiceMonitor", "kvgate")}
want |= {"aggregated": {("ScaledObject", "llm-engine")},
         "pd": {("ScaledObject", "llm-prefill"), ("ScaledObject", "llm-decode")},
         "redis-quotas": {("ScaledObject", "llm-engine"), ("Deployment", "kvgate-redis"),
                          ("Service", "kvgate-redis")}}[overlay]
say("objects present", want <= kinds, sorted(want - kinds))
say("config, dashboard and keys generated",
    named("ConfigMap", "kvgate-config") and named("ConfigMap", "kvgate-dashboard")
    and named("Secret", "kvgate-keys"))
say("every object in namespace llm", all(d["metadata"].get("namespace") == "llm" for d in docs))

dep = one("Deployment", "kvgate")
pod = dep["spec"]["template"]
c = pod["spec"]["containers"][0]
args = c["args"]
say("container runs kvgate serve", args[0] == "serve", args[:1])
used = [a[2:].split("=")[0] for a in args if a.startswith("--")]
say("every arg flag is in kvgate serve --help", set(used) <= flags, sorted(set(used) - flags))
cfg = yaml.safe_load(named("ConfigMap", "kvgate-config")["data"]["kvgate.yaml"])
keys = [k.replace("_", "-") for k in cfg]
say("every config key is a flag", set(keys) <= flags, sorted(set(keys) - flags))
mounts = {m["name"]: m["mountPath"] for m in c["volumeMounts"]}
vols = {v["name"]: v for v in pod["spec"]["volumes"]}
say("config mounted where --config points",
    args[args.index("--config") + 1] == mounts["config"] + "/kvgate.yaml"
    and vols["config"]["configMap"]["name"] == named("ConfigMap", "kvgate-config")["metadata"]["name"])
say("keys mounted where --keys points",
    args[args.index("--keys") + 1] == mounts["keys"] + "/keys.yaml"
    and vols["keys"]["secret"]["secretName"] == named("Secret", "kvgate-keys")["metadata"]["name"])
say("liveness probe on /liveness", c["livenessProbe"]["httpGet"]["path"] == "/liveness")
say("readiness probe on /readiness", c["readinessProbe"]["httpGet"]["path"] == "/readiness")
drain = int(args[args.index("--drain-timeout") + 1])
pre = c["lifecycle"]["preStop"]["sleep"]["seconds"]
say("grace period covers preStop + --drain-timeout",
    pod["spec"]["terminationGracePeriodSeconds"] > pre + drain,
    (pod["spec"]["terminationGracePeriodSeconds"], pre, drain))
plabels = pod["metadata"]["labels"]
sel_ok = lambda sel: all(plabels.get(k) == v for k, v in sel.items())
say("Deployment selector matches its pods", sel_ok(dep["spec"]["selector"]["matchLabels"]))
svc = one("Service", "kvgate")
say("Service selects the gateway pods", sel_ok(svc["spec"]["selector"]))
cports = {p["name"] for p in c["ports"]}
say("Service targets the container's port", all(p["targetPort"] in cports for p in svc["spec"]["ports"]))
pdb = one("PodDisruptionBudget", "kvgate")
say("PDB selects the gateway pods", sel_ok(pdb["spec"]["selector"]["matchLabels"]))
sm = one("ServiceMonitor", "kvgate")
say("ServiceMonitor selects the Service and scrapes /metrics",
    all(svc["metadata"]["labels"].get(k) == v for k, v in sm["spec"]["selector"]["matchLabels"].items())
    and sm["spec"]["endpoints"][0]["path"] == "/metrics"
    and sm["spec"]["endpoints"][0]["port"] in {p["name"] for p in svc["spec"]["ports"]})
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
say("RBAC: scale subresource", allowed("apps", "deployments/scale", "update")
    and allowed("leaderworkerset.x-k8s.io", "leaderworkersets/scale", "patch"))
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
sel = {"aggregated": ["--selector"], "pd": ["--prefill-selector", "--decode-selector"],
       "redis-quotas": ["--selector"]}[overlay]
say("worker selectors " + " ".join(sel), all(s in args for s in sel))
if overlay == "redis-quotas":
    store = args[args.index("--quota-store") + 1]
    say("quota store is the Redis Service", store == "redis://kvgate-redis:%d" %
        one("Service", "kvgate-redis")["spec"]["ports"][0]["port"], store)
    say("several gateway replicas", dep["spec"]["replicas"] > 1)
# For the shell: the args, the config and the dashboard, to run and compare.
json.dump(args, open(path + ".args.json", "w"))
open(path + ".kvgate.yaml", "w").write(named("ConfigMap", "kvgate-config")["data"]["kvgate.yaml"])
auto = named("ConfigMap", "kvgate-config")["data"].get("autoscale.yaml")
if auto:
    open(path + ".autoscale.yaml", "w").write(auto)
    pools = [p["name"] for p in yaml.safe_load(auto)["pools"]]
    say("--autoscale names the mounted file",
        args[args.index("--autoscale") + 1] == mounts["config"] + "/autoscale.yaml")
    for so in [o for o in docs if o["kind"] == "ScaledObject"]:
        loc = so["spec"]["triggers"][0]["metadata"]["valueLocation"]
        say("ScaledObject %s reads a pool kvgate plans (%s)" % (so["metadata"]["name"], loc),
            loc.startswith("pools.") and loc.split(".")[1] in pools and
            loc.endswith(".desiredReplicas"))
open(path + ".dashboard.json", "w").write(named("ConfigMap", "kvgate-dashboard")["data"]["kvgate.json"])
PY

for o in aggregated pd redis-quotas; do
  [ -s "$TMP/$o.yaml" ] || continue
  /usr/bin/python3 "$TMP/check.py" "$o" "$TMP/$o.yaml" "$TMP/help" >"$TMP/$o.res" 2>&1 ||
    bad "$o: checks ran" "$(tail -3 "$TMP/$o.res")"
  while IFS= read -r line; do
    case "$line" in
      ok\ *) ok "${line#ok }" ;;
      FAIL\ *) bad "${line#FAIL }" ;;
    esac
  done <"$TMP/$o.res"
done

# A real kvgate takes the aggregated args and config together: run them with
# the paths made local and the address loopback. Flags parse before
# discovery looks for its cluster, so "not in a cluster" means all was taken.
if [ -s "$TMP/aggregated.yaml.args.json" ]; then
  printf 'keys: []\n' >"$TMP/keys.yaml"
  P=$(free_port)
  mapfile -t A < <(/usr/bin/python3 - "$TMP/aggregated.yaml.args.json" "$TMP" "$P" <<'PY'
import json, sys
args, tmp, port = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3]
sub = {"--config": tmp + "/aggregated.yaml.kvgate.yaml", "--keys": tmp + "/keys.yaml",
       "--autoscale": tmp + "/aggregated.yaml.autoscale.yaml",
       "--host": "127.0.0.1", "--port": port}
out = []
for i, a in enumerate(args[1:]):
    prev = args[i]
    out.append(sub.get(prev, a))
print("\n".join(out))
PY
)
  env -u KUBERNETES_SERVICE_HOST timeout 10 "$KVG_BIN" serve "${A[@]}" >"$TMP/args.out" 2>&1
  check "kvgate serve accepts the rendered args and config" grep -q "not in a cluster" "$TMP/args.out"
fi

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
