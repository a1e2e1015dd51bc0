#!/usr/bin/env bash
# Smoke of the PD live miniature (bench/pd/live.sh) on a short run: it starts
# kvgate serve with sims aggregated and in roles, drives both over HTTP and
# appends its section; every request is answered, the 1P:1D run's PD
# counters agree with its requests, and no process it started is left.
# Structure only: no timing is asserted.
. "$KVG_ROOT/tests/integration/lib.sh"

MARK="kvgpdlive_$$_$RANDOM"
leftovers() { marked_count "$MARK"; }
printf '# existing\n' >"$TMP/pd.md"
KVG_BENCH_TEST_MARK=$MARK OUT="$TMP/pd.md" SECS=3 RATE=2 WORKDIR="$TMP/live" \
  timeout -k 5 90 bash "$KVG_ROOT/bench/pd/live.sh" >"$TMP/live.out" 2>"$TMP/live.err"
rc=$?
check "live miniature exits 0" test "$rc" = 0
[ "$rc" = 0 ] || tail -20 "$TMP/live.err"
check "the section is appended, the file kept" \
  bash -c "head -1 '$TMP/pd.md' | grep -q '# existing' && grep -q '^## Live miniature over HTTP' '$TMP/pd.md'"
check "a row per setup" bash -c "grep -q '^| aggregated |' '$TMP/pd.md' && grep -q '^| 1P:1D |' '$TMP/pd.md'"
for s in aggregated 1P:1D; do
  check "$s: every request answered, none failed" test "$(json_get "$TMP/live/$s.json" \
    'j[0]["requests"] > 0 and j[0]["completed"] == j[0]["requests"] and j[0]["errors"] == 0')" = True
  check "$s: TTFT and ITL measured" test "$(json_get "$TMP/live/$s.json" \
    'j[0]["ttft_p50_s"] > 0 and j[0]["itl_mean_s"] > 0')" = True
done
N=$(json_get "$TMP/live/1P:1D.json" 'j[0]["requests"]')
metric() { prom_value "$1" <"$TMP/live/pd-metrics.txt"; }
check "1P:1D: every request prefilled then decoded" \
  test "$(metric 'kvgate_pd_decisions_total{decision="prefill_decode"}')" = "$N"
check "1P:1D: a KV transfer per request" test "$(metric kvgate_pd_kv_transfer_seconds_count)" = "$N"
check "1P:1D: no prefill failed" test "$(metric kvgate_pd_prefill_failures_total)" = 0
check "no process left" test "$(leftovers)" = 0
finish
