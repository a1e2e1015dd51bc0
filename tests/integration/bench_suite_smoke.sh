# kvgate bench --suite routing --smoke: every workload of the routing suite,
# tiny, against a few policies; checks the structure of its JSON and markdown
# (one object per workload and policy with the documented fields, the
# summary and verdict sections), never its figures.
. "$(dirname "$0")/lib.sh"

cd "$KVG_ROOT" || exit 1
timeout -k 5 120 "$KVG_BIN" bench --suite routing --smoke --seeds 2 \
  --policies random,precise,prefix_affinity,session_affinity,predicted_latency \
  --json "$TMP/suite.json" --markdown "$TMP/suite.md" --quiet >"$TMP/suite.out" 2>"$TMP/suite.log"
rc=$?
check "suite smoke exits 0" [ "$rc" = 0 ]
check "markdown has the summary" grep -q "^### p90 TTFT against the best" "$TMP/suite.md"
check "markdown has the verdicts" grep -q "^### The default rule" "$TMP/suite.md"
check "markdown has per-workload tables" grep -q "^### agentic" "$TMP/suite.md"
check "stdout is the report" grep -q "kvgate bench --suite routing" "$TMP/suite.out"
out=$(/usr/bin/python3 - "$TMP/suite.json" <<'PY' 2>&1
import json, sys
a = json.load(open(sys.argv[1]))
want = {"llmd-73", "chat", "chat-overload", "agentic", "agentic-responses", "agentic-messages", "mixed", "hetero-fast", "hetero-kv",
        "bursts", "trace", "multi-lora", "salted-tenants"}
pols = ["random", "precise", "prefix_affinity", "session_affinity", "predicted_latency"]
seen = {(o["workload"], o["policy"]) for o in a}
assert seen == {(w, p) for w in want for p in pols}, sorted(seen)
for o in a:
    assert o["status"] == "ok", o
    for k in ("ttft_p90_s", "ttft_p99_s", "itl_p90_s", "output_tokens_per_s", "cache_hit_ratio"):
        assert isinstance(o[k], (int, float)) and o[k] >= 0, (k, o)
    assert len(o["seed_ttft_p90_s"]) == 2 and len(o["seed_output_tokens_per_s"]) == 2, o
    assert isinstance(o["meets_default_rule"], bool)
    assert o["smoke"] is True
for w in want:
    assert sum(o["best_p90"] for o in a if o["workload"] == w) == 1, w
print("ok")
PY
)
check "JSON: every workload x policy with the documented fields" [ "$out" = ok ]
[ "$out" = ok ] || echo "$out"
# The LoRA and salt workloads alone, with the LoRA term off through
# --bench-flags: they run, the command shown carries the flags, adapter loads
# are reported (a count, not a figure checked).
timeout -k 5 60 "$KVG_BIN" bench --suite routing --smoke --seeds 1 \
  --workloads multi-lora,salted-tenants --policies kv_aware,precise,prefix_affinity \
  --bench-flags "--router-lora-load-cost 0 --router-lora-max-workers 0" \
  --json "$TMP/lora.json" --quiet >"$TMP/lora.md" 2>"$TMP/lora.log"
check "LoRA/salt workloads alone exit 0" [ $? = 0 ]
check "the command shown has the extra flags" grep -q -- "--lora-adapters 8 .*--router-lora-max-workers 0" "$TMP/lora.md"
out=$(/usr/bin/python3 - "$TMP/lora.json" <<'PY' 2>&1
import json, sys
a = json.load(open(sys.argv[1]))
seen = {(o["workload"], o["policy"]) for o in a}
assert seen == {(w, p) for w in ("multi-lora", "salted-tenants")
                for p in ("kv_aware", "precise", "prefix_affinity")}, sorted(seen)
for o in a:
    assert o["status"] == "ok" and o["requests"] > 0, o
    assert isinstance(o["lora_loads"], (int, float)) and o["lora_loads"] >= 0, o
    if o["workload"] == "salted-tenants":
        assert o["lora_loads"] == 0, o
print("ok")
PY
)
check "JSON: both workloads x 3 policies, adapter loads counted" [ "$out" = ok ]
[ "$out" = ok ] || echo "$out"
# Several routers (--routers, --balancer) on two workloads: every row says
# how many, with its load spread (>= 1) and herd ratio (a share); the shown
# command carries them; past the maximum is a usage error.
timeout -k 5 60 "$KVG_BIN" bench --suite routing --smoke --seeds 1 --workloads llmd-73,chat \
  --policies prefix_affinity,random --routers 3 --balancer random \
  --json "$TMP/fleet.json" --quiet >"$TMP/fleet.md" 2>"$TMP/fleet.log"
check "three routers exit 0" [ $? = 0 ]
check "the command shown has the routers" grep -q -- "--routers 3 --balancer random" "$TMP/fleet.md"
out=$(/usr/bin/python3 - "$TMP/fleet.json" "$TMP/lora.json" <<'PY' 2>&1
import json, sys
a = json.load(open(sys.argv[1]))
assert {(o["workload"], o["policy"]) for o in a} == {
    (w, p) for w in ("llmd-73", "chat") for p in ("prefix_affinity", "random")}, a
for o in a:
    assert o["status"] == "ok" and o["requests"] > 0, o
    assert o["routers"] == 3, o
    assert o["max_load_ratio_10s"] >= 1, o
    assert 0 < o["herd_ratio"] < 1, o
for o in json.load(open(sys.argv[2])):
    assert o["routers"] == 1 and o["herd_ratio"] == 0, o
print("ok")
PY
)
check "JSON: routers, max_load_ratio_10s and herd_ratio in every row" [ "$out" = ok ]
[ "$out" = ok ] || echo "$out"
"$KVG_BIN" bench --routers 65 >/dev/null 2>&1
check "--routers past 64 is a usage error" [ $? = 2 ]
"$KVG_BIN" bench --workload chat --mode live --spawn-sims 1 --lora-adapters 2 >/dev/null 2>&1
check "adapters in a live run are a usage error" [ $? = 2 ]
"$KVG_BIN" bench --workload shared_prefix --lora-adapters 2 >/dev/null 2>&1
check "adapters outside chat are refused" [ $? != 0 ]
"$KVG_BIN" bench --suite routing --seeds 0 >/dev/null 2>&1
check "a bad --seeds is a usage error" [ $? = 2 ]
"$KVG_BIN" bench --suite nope >/dev/null 2>&1
check "an unknown suite is a usage error" [ $? = 2 ]
finish
