# The offline/live agreement machinery on a tiny day (issue 38, item 1's
# test; bench/results/autoscale-agreement.md has the real runs): `kvgate
# bench --scenario diurnal --arrivals-out` writes a header and one
# well-formed line per request of the day it runs (as many as its JSON
# counts), and on the PD day its two pools with the run's per-role
# profile; bench/autoscale/agree_replay.py replays the first 3 s of it
# against `kvgate serve --autoscale` with sims started by the local
# actuator (5 s start-ups), every stream answered and ended; and
# agree_compare.py reads both. No figures are asserted (the machine is
# shared); nothing is left running.
. "$(dirname "$0")/lib.sh"

cd "$KVG_ROOT" || exit 1
MARK="kvgagree_$$_$RANDOM"


DAY="--scenario diurnal --day-secs 120 --mean-rate 2 --knee-rps 2.5 --startup-secs 5
  --startup-scale 0.015 --cold-share 0 --min-replicas 2 --max-replicas 3
  --forecast-window-secs 30 --down-hold-secs 30 --planners kvgate-noprewarm --quiet"
# shellcheck disable=SC2086 # DAY is words
timeout -k 5 60 "$KVG_BIN" bench $DAY --arrivals-out "$TMP/arr.jsonl" --json "$TMP/off.json" \
  --timeline "$TMP/off.csv" --out "$TMP/off.md" >"$TMP/off.out" 2>"$TMP/off.log"
check "bench with --arrivals-out exits 0" [ $? = 0 ]
out=$(/usr/bin/python3 - "$TMP/arr.jsonl" "$TMP/off.json" <<'PY' 2>&1
import json, sys
lines = open(sys.argv[1]).read().splitlines()
h = json.loads(lines[0])
for k in ("day_secs", "seed", "profile", "startup_secs", "startup_scale", "first_replicas", "tick_secs"):
    assert k in h["day"], k
for k in ("min_replicas", "max_replicas", "ttft_secs", "itl_secs", "prefill_tokens_per_sec",
          "decode_tokens_per_sec", "ttft_idle_secs", "itl_idle_secs", "down_hold_secs"):
    assert k in h["pool"], k
assert h["day"]["startup_secs"] == 5 and h["pool"]["max_replicas"] == 3, h
reqs = [json.loads(l) for l in lines[1:]]
off = json.load(open(sys.argv[2]))[0]
assert len(reqs) == h["day"]["requests"] == off["requests"] > 100, (len(reqs), off["requests"])
last = 0
for r in reqs:
    assert set(r) == {"t", "prompt_tokens", "output_tokens", "prefix", "prefix_tokens", "client", "class"}, r
    assert last <= r["t"] < 120 and r["prompt_tokens"] > r["prefix_tokens"] > 0, r
    assert r["output_tokens"] >= 1 and 0 <= r["prefix"] < h["day"]["groups"], r
    last = r["t"]
print("ok")
PY
)
check "the export: a header and one well-formed line per request of the run" [ "$out" = ok ]
[ "$out" = ok ] || echo "$out"

timeout -k 5 60 "$KVG_BIN" bench --scenario diurnal-pd --day-secs 120 --mean-rate 2 \
  --min-replicas 2 --planners kvgate --arrivals-out "$TMP/pd.jsonl" --json "$TMP/pd.json" \
  --out "$TMP/pd.md" --quiet >"$TMP/pd.out" 2>"$TMP/pd.log"
check "--arrivals-out on the PD day exits 0" [ $? = 0 ]
out=$(/usr/bin/python3 - "$TMP/pd.jsonl" "$TMP/pd.json" <<'PY' 2>&1
import json, sys
lines = open(sys.argv[1]).read().splitlines()
h = json.loads(lines[0])
off = json.load(open(sys.argv[2]))[0]
assert h["day"]["scenario"] == "diurnal-pd" and "pool" not in h, h
assert [p["role"] for p in h["pools"]] == ["prefill", "decode"], h["pools"]
for p in h["pools"]:
    assert p["first_replicas"] >= p["min_replicas"] == 2, p
    for k, v in (("prefill_tokens_per_sec", "profile_prefill_tps"),
                 ("decode_tokens_per_sec", "profile_decode_tps")):
        assert abs(p[k] - off[v]) <= 1e-9 * off[v], (p, off)
reqs = [json.loads(l) for l in lines[1:]]
assert len(reqs) == h["day"]["requests"] == off["requests"] > 100, (len(reqs), off["requests"])
print("ok")
PY
)
check "the PD day's export: its two pools with the run's per-role profile, its requests" \
  [ "$out" = ok ]
[ "$out" = ok ] || { echo "$out"; tail -3 "$TMP/pd.log"; }

KVG_BENCH_TEST_MARK=$MARK timeout -k 5 "$(scaled 60)" /usr/bin/python3 \
  bench/autoscale/agree_replay.py "$KVG_BIN" "$TMP/arr.jsonl" "$TMP/live.json" \
  --limit-secs 3 --max-tokens 8 >"$TMP/live.out" 2>"$TMP/live.log"
check "the replay of the first 3 s exits 0" [ $? = 0 ]
out=$(/usr/bin/python3 - "$TMP/live.json" "$TMP/arr.jsonl" <<'PY' 2>&1
import json, os, sys
o = json.load(open(sys.argv[1]))
reqs = [json.loads(l) for l in open(sys.argv[2]).read().splitlines()[1:] if json.loads(l)["t"] < 3]
assert o["requests"] == o["answered"] == len(reqs) > 0, (o["requests"], o["answered"], len(reqs))
assert o["ready_at_start"] >= o["first_replicas"], o
for r, q in zip(o["results"], reqs):
    assert r["status"] == 200 and r["done"], r
    assert r["tokens"] == min(8, q["output_tokens"]), (r, q)
    assert r["ttft"] is not None and r["itl"] is not None, r
assert 0 <= o["slo_attainment"] <= 1, o
assert any("desired" in s for s in o["samples"]), o["samples"]
assert o["tmp"].startswith("/tmp/kvg-agree-") and not os.path.exists(o["tmp"]), o["tmp"]
print("ok")
PY
)
check "the replay: every request answered 200, ended, its tokens counted; its folder removed" \
  [ "$out" = ok ]
[ "$out" = ok ] || { echo "$out"; tail -5 "$TMP/live.log"; }

/usr/bin/python3 bench/autoscale/agree_compare.py "$TMP/off.csv" "$TMP/off.json" \
  "$TMP/live.json" --interval 1 --day-secs 120 >"$TMP/cmp.out" 2>"$TMP/cmp.log"
check "the comparer exits 0" [ $? = 0 ]
out=$(head -1 "$TMP/cmp.out" | /usr/bin/python3 -c '
import json, sys
c = json.loads(sys.stdin.read())
assert c["intervals"] == 3 and 0 <= c["within_one_share"] <= 1, c
assert c["slo_offline"] == json.load(open(sys.argv[1]))[0]["slo_attainment"] or \
    abs(c["slo_offline"] - json.load(open(sys.argv[1]))[0]["slo_attainment"]) < 1e-4, c
print("ok")' "$TMP/off.json" 2>&1)
check "the comparer: 3 intervals of 1 s, shares within 0..1" [ "$out" = ok ]
[ "$out" = ok ] || { echo "$out"; cat "$TMP/cmp.out" "$TMP/cmp.log"; }

n=0
for _ in $(seq 1 "$(scaled 20)"); do
  n=$(marked_count "$MARK")
  [ "$n" = 0 ] && break
  sleep 0.25
done
check "no gateway or sim left running" [ "$n" = 0 ]
finish
