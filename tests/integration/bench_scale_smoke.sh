# kvgate bench --scenario diurnal-pd|diurnal on short stress days with fast
# start (--fast-share, --fast-ready-secs), parked replicas (--standby) and
# 30% batch (both days): the JSON has issue 38's per-planner fields with sane values
# (shares within 0..1, GPU-hours > 0, the batch fields null where a run has
# no batch requests), never its figures; bad values are usage errors.
. "$(dirname "$0")/lib.sh"

cd "$KVG_ROOT" || exit 1
DAY="--stress --day-secs 1800 --mean-rate 8 --bursts 2 --burst-secs 30 --quiet"
# shellcheck disable=SC2086 # DAY is words
timeout -k 5 300 "$KVG_BIN" bench --scenario diurnal-pd $DAY --planners kvgate,sla \
  --fast-share 0.5 --fast-ready-secs 20 --standby 2 --batch-share 0.3 \
  --json "$TMP/pd.json" >"$TMP/pd.out" 2>"$TMP/pd.log"
check "PD day with fast start, standby and batch exits 0" [ $? = 0 ]
# shellcheck disable=SC2086
timeout -k 5 300 "$KVG_BIN" bench --scenario diurnal $DAY --planners kvgate,sla --knee-rps 2 \
  --fast-share 1 --fast-ready-secs 10 --standby 1 --standby-cost 0.5 --batch-share 0.3 \
  --json "$TMP/agg.json" >"$TMP/agg.out" 2>"$TMP/agg.log"
check "aggregated day with fast start, standby and batch exits 0" [ $? = 0 ]
out=$(/usr/bin/python3 - "$TMP/pd.json" "$TMP/agg.json" <<'PY' 2>&1
import json, sys
share = lambda v: isinstance(v, (int, float)) and 0 <= v <= 1
for path, fast, ready, standby, cost in ((sys.argv[1], 0.5, 20, 2, 1), (sys.argv[2], 1, 10, 1, 0.5)):
    a = json.load(open(path))
    assert [o["planner"] for o in a] == ["kvgate", "sla"], a
    for o in a:
        for k in ("slo_attainment", "slo_attainment_interactive"):
            assert share(o[k]), (path, k, o[k])
        assert o["gpu_hours"] > 0 and o["parked_hours"] >= 0, o
        assert o["fast_share"] == fast and o["fast_ready_secs"] == ready, o
        assert o["standby"] == standby and o["standby_cost"] == cost, o
        assert isinstance(o["replicas_woken"], int) and o["replicas_woken"] >= 0, o
        for k in ("batch_dropped", "batch_rejected"):
            assert isinstance(o[k], int) and o[k] >= 0, (k, o)
        if o["batch_requests"]:
            assert share(o["slo_attainment_batch"]) and share(o["batch_deadline_met"]), o
        else:
            assert o["slo_attainment_batch"] is None and o["batch_deadline_met"] is None, o
    k, s = a
    assert k["classes"] and k["batch_requests"] > 0, k  # kvgate sees the classes
    assert not s["classes"] and s["batch_requests"] == 0, s  # sla runs without them
    assert s["slo_attainment_interactive"] == s["slo_attainment"], s
    if "pd" in path:
        for o in a:
            assert abs(o["parked_hours"] - o["prefill"]["parked_hours"] - o["decode"]["parked_hours"]) < 1e-9
            assert abs(o["gpu_hours"] - o["prefill"]["gpu_hours"] - o["decode"]["gpu_hours"]) < 1e-9
print("ok")
PY
)
check "JSON: the fast-start, standby and class fields, sane" [ "$out" = ok ]
[ "$out" = ok ] || echo "$out"
for bad in "--fast-share 1.5" "--fast-share -0.1" "--fast-ready-secs 0" "--standby-cost 2" \
  "--standby -1"; do
  # shellcheck disable=SC2086
  timeout -k 5 30 "$KVG_BIN" bench --scenario diurnal-pd $bad >"$TMP/bad.out" 2>"$TMP/bad.log"
  rc=$?
  check "bench $bad: usage error (2)" [ "$rc" = 2 ]
  check "bench $bad: the error names the flag" grep -q -- "${bad%% *}" "$TMP/bad.log"
done
finish
