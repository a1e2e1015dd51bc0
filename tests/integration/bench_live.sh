# kvgate bench --mode live --spawn-sims 2 end to end on a tiny workload: the
# bench starts two `kvgate sim` and a `kvgate serve` per policy, drives them
# over HTTP, writes its JSON, markdown and SVGs, and leaves no process behind,
# also when interrupted with SIGINT midway.
. "$(dirname "$0")/lib.sh"

if ! "$KVG_BIN" bench --help >/dev/null 2>&1; then
  bad "kvgate has a bench subcommand" "src/main.c must dispatch 'bench' to kvg_cmd_bench_main"
  finish
fi

# Every process the bench starts inherits this variable: how we find
# leftovers without trusting names or the bench's own bookkeeping.
MARK="kvgbench_$$_$RANDOM"
export KVG_BENCH_LOGDIR=$TMP
leftovers() { marked_count "$MARK"; }

# 1. A complete run: two policies, fresh engines for each.
KVG_BENCH_TEST_MARK=$MARK timeout -k 5 90 "$KVG_BIN" bench --scenario smoke --mode live \
  --spawn-sims 2 --policies random,precise --stages 20x2,40x4 --warmup-stages 1 \
  --json "$TMP/live.json" --svg "$TMP/plot" --markdown "$TMP/live.md" --quiet \
  >"$TMP/bench.out" 2>"$TMP/bench.log"
rc=$?
check "live run exits 0" [ "$rc" = 0 ]
[ "$rc" = 0 ] || tail -20 "$TMP/bench.log"
check "JSON: one object per policy" [ "$(json_get "$TMP/live.json" 'len(j)')" = 2 ]
check "JSON: policies in order" [ "$(json_get "$TMP/live.json" '",".join(o["policy"] for o in j)')" = "random,precise" ]
check "JSON: mode live" [ "$(json_get "$TMP/live.json" 'set(o["mode"] for o in j)')" = "{'live'}" ]
check "every request answered, none failed" \
  [ "$(json_get "$TMP/live.json" 'all(o["requests"] > 50 and o["completed"] == o["requests"] and o["errors"] == 0 for o in j)')" = True ]
check "TTFT and throughput measured" \
  [ "$(json_get "$TMP/live.json" 'all(0 < o["ttft_p50_s"] <= o["ttft_p90_s"] < 5 and o["output_tokens_per_s"] > 0 for o in j)')" = True ]
check "16 tokens per request streamed" \
  [ "$(json_get "$TMP/live.json" 'all(o["output_tokens"] == 16 * o["requests"] for o in j)')" = True ]
check "engine usage reports cache hits" \
  [ "$(json_get "$TMP/live.json" 'j[1]["cached_tokens"] > 0 and j[1]["cache_hit_ratio"] > 0.5')" = True ]
check "engine queue and KV sampled" [ "$(json_get "$TMP/live.json" 'all(o["kv_usage_max_pct"] > 0 for o in j)')" = True ]
check "markdown table printed" grep -q '^| precise |' "$TMP/bench.out"
check "markdown file written" grep -q '^| random |' "$TMP/live.md"
for f in "$TMP/plot-ttft.svg" "$TMP/plot-throughput.svg"; do
  check "$(basename "$f") parses as SVG" /usr/bin/python3 -c \
    'import sys,xml.etree.ElementTree as E; r=E.parse(sys.argv[1]).getroot(); sys.exit(0 if r.tag.endswith("svg") else 1)' "$f"
done
check "each policy had its own engines and gateway" [ "$(ls "$TMP"/serve-*.log | wc -l)" = 2 -a "$(ls "$TMP"/sim-*.log | wc -l)" = 4 ]
check "no process left after the run" [ "$(leftovers)" = 0 ]

# 2. SIGINT while the load runs: children stopped, bench exits non-zero.
rm -f "$TMP"/serve-*.log
KVG_BENCH_TEST_MARK=$MARK "$KVG_BIN" bench --scenario smoke --mode live --spawn-sims 2 \
  --policies random --stages 10x60 --quiet >"$TMP/int.out" 2>"$TMP/int.log" &
BPID=$!
PIDS+=("$BPID")
for _ in $(seq 1 "$(scaled 200)"); do
  [ "$(leftovers)" -ge 4 ] && break # bench + 2 sims + serve
  sleep 0.1
done
check "cluster started" [ "$(leftovers)" -ge 4 ]
sleep 1
kill -INT "$BPID"
for _ in $(seq 1 "$(scaled 200)"); do kill -0 "$BPID" 2>/dev/null || break; sleep 0.1; done
wait "$BPID"
irc=$?
check "interrupted bench exits non-zero" [ "$irc" != 0 -a "$irc" -lt 128 ]
check "interrupted: said so" grep -q 'interrupted' "$TMP/int.log"
check "no process left after SIGINT" [ "$(leftovers)" = 0 ]

# 3. --retries as the openai SDK: requests refused while the endpoint is not
# up yet are sent again and complete; a 503 is retried until the retries run
# out; a 200 stream that breaks midway is not retried but counted apart.
fields() { json_get "$1" '"%d %d %d %d %d" % tuple(j[0][k] for k in ("requests", "completed", "errors", "retried", "lost_in_flight"))'; }
P1=$(free_port)
"$KVG_BIN" bench --mode live --target "http://127.0.0.1:$P1" --scenario smoke --policies x \
  --stages 10x2 --retries 5 --quiet --json "$TMP/retry-refused.json" >/dev/null 2>"$TMP/retry1.log" &
BPID=$!
PIDS+=("$BPID")
sleep "$(scaled 1)" # the first requests meet a closed port
start_sim "$P1" --model kvgate-sim --log-level warn
wait "$BPID"
read -r n done errs retried lost <<<"$(fields "$TMP/retry-refused.json")"
check "refused, then up: every request completes after retries ($n $done $errs $retried)" \
  [ "$n" -gt 0 -a "$done" = "$n" -a "$errs" = 0 -a "$retried" -gt 0 ]
P2=$(free_port)
start_sim "$P2" --model kvgate-sim --log-level warn --fail-rate 1 --fail-status 503
"$KVG_BIN" bench --mode live --target "http://127.0.0.1:$P2" --scenario smoke --policies x \
  --stages 10x1 --retries 1 --quiet --json "$TMP/retry-503.json" >/dev/null 2>"$TMP/retry2.log"
read -r n done errs retried lost <<<"$(fields "$TMP/retry-503.json")"
check "503: each request retried once, then failed ($n $done $errs $retried $lost)" \
  [ "$n" -gt 0 -a "$errs" = "$n" -a "$retried" = "$n" -a "$lost" = 0 ]
P3=$(free_port)
start_sim "$P3" --model kvgate-sim --log-level warn --disconnect-after-tokens 2
"$KVG_BIN" bench --mode live --target "http://127.0.0.1:$P3" --scenario smoke --policies x \
  --stages 10x1 --retries 2 --quiet --json "$TMP/retry-cut.json" >/dev/null 2>"$TMP/retry3.log"
read -r n done errs retried lost <<<"$(fields "$TMP/retry-cut.json")"
check "a stream cut after its 200: not retried, lost in flight ($n $done $errs $retried $lost)" \
  [ "$n" -gt 0 -a "$errs" = "$n" -a "$retried" = 0 -a "$lost" = "$n" ]

finish
