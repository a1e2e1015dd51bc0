#!/usr/bin/env bash
# Head-of-line (issue 19): the latency of short requests through the gateway
# alone, and while 30k- and 100k-token requests keep its work threads busy.
#
# Short requests are a latency probe, not a load: 2 connections, each waiting
# PACE ms between requests (wrk's delay()), so their p99 is the time one
# request takes, not a queue. They go to their own engine (model s); the long
# ones (8 connections of 30k and 8 of 100k, closed loop) go to four others
# (model m), all `kvgate sim --profile instant` with the byte tokenizer,
# behind one `kvgate serve --policy prefix_affinity` with the Qwen3 tokenizer
# (the gateway tokenizes, the engines do not). In a fleet the engines and the
# clients of the long traffic run on machines of their own; here they share
# the 2 cores with the gateway, so they run at nice 19 (the gateway, the short
# probe and its engine at 0): what is left is the gateway's own head-of-line,
# its loops against its work threads (--tokenizer-nice, default 10). GET
# /health at 1 paced connection is the loop alone (no engine). A control
# phase sends the same long traffic through a second gateway process while
# the probe (and the /health client) go through the first: the machine as
# busy, the probe's own gateway not, so loaded over control is kvgate's own
# head-of-line.
#
# Each configuration (binary x --tokenizer-threads) is measured REPS times,
# configurations interleaved. Writes bench/results/gateway-hol.md.
#   bash bench/gateway/hol.sh [SECONDS per phase, default 5] [REPS, default 3]
#   KVG_HOL_BASE_BIN=path adds that binary's rows (a before/after in one run);
#   KVG_HOL_THREADS the --tokenizer-threads values (default "4 1");
#   KVG_HOL_POLICY the policy (default prefix_affinity, the default's);
#   KVG_HOL_OUT the result file.
set -euo pipefail
cd "$(dirname "$0")/../.."
DUR=${1:-5}
REPS=${2:-3}
PACE=5
BIN=${KVG_BIN:-build/release/kvgate}
BASE=${KVG_HOL_BASE_BIN:-}
TH=${KVG_HOL_THREADS:-"4 1"}
POL=${KVG_HOL_POLICY:-prefix_affinity}
OUT=${KVG_HOL_OUT:-bench/results/gateway-hol.md}
[ -x "$BIN" ] || make -s -j2 BUILD=release build/release/kvgate
. bench/gateway/common.sh
python3 bench/gateway/workloads.py "$W/wl"
KVG_WL_MODEL=s python3 bench/gateway/workloads.py "$W/wls"

URLS=()
for i in 1 2 3 4; do
  p=$(port)
  nice -n 19 "$BIN" sim --port "$p" --model m --profile instant --log-level warn & PIDS+=($!)
  URLS+=("http://127.0.0.1:$p")
done
# The probe's engine and clients ask for a short slice (short_slice.py, as
# --loop-slice-us 100 does for the gateway's loops): on these 2 shared cores they otherwise waited for a CPU
# behind the long traffic (sched trace: the probe client's p99 wait 1.6-9 ms),
# which then showed as the gateway's latency in every phase alike.
SS=(python3 bench/gateway/short_slice.py 100)
p=$(port)
"${SS[@]}" "$BIN" sim --port "$p" --model s --profile instant --log-level warn & PIDS+=($!)
URLS+=("http://127.0.0.1:$p")
for u in "${URLS[@]}"; do wait_url "$u/health"; done

start_gw() { # binary tokenizer-threads
  GWP=$(port)
  "$1" serve --port "$GWP" --threads 1 --policy "$POL" --worker-urls "${URLS[@]}" \
    "${TOK[@]}" --block-size 16 --no-access-log --log-level warn --tokenizer-threads "$2" \
    >/dev/null & GWPID=$!
  wait_url "http://127.0.0.1:$GWP/readiness"
}
probe() { # seconds -> RESULT line of the paced short requests
  PACE_MS=$PACE BODIES="$W/wls/short.tsv" "${SS[@]}" wrk -t1 -c2 -d"${1}s" --timeout 30s \
    -s bench/gateway/body.lua "http://127.0.0.1:$GWP" | grep '^RESULT' ||
    echo "RESULT reqs=0 secs=1 errs=1 p50=nan p99=nan"
}
health() { # seconds -> RESULT line of paced GET /health
  PACE_MS=$PACE "${SS[@]}" wrk -t1 -c1 -d"${1}s" --timeout 30s -s bench/gateway/health.lua \
    "http://127.0.0.1:$GWP/health" | grep '^RESULT' || echo "RESULT reqs=0 secs=1 errs=1 p50=nan p99=nan"
}
long() { # workload seconds -> RESULT line (nice 19: the fleet's other machines)
  BODIES="$W/wl/$1.tsv" nice -n 19 wrk -t1 -c8 -d"${2}s" --timeout 30s -s bench/gateway/body.lua \
    "http://127.0.0.1:$GWP" | grep '^RESULT' || echo "RESULT reqs=0 secs=1 errs=1 p50=nan p99=nan"
}

CONFIGS=()
for t in $TH; do
  [ -n "$BASE" ] && CONFIGS+=("base:$t")
  CONFIGS+=("kvgate:$t")
done
ROWS=()
for rep in $(seq 1 "$REPS"); do
  for cfg in "${CONFIGS[@]}"; do
    b=$BIN
    [ "${cfg%%:*}" = base ] && b=$BASE
    start_gw "$b" "${cfg#*:}"
    probe 1 >/dev/null
    long 30k 1 >/dev/null
    health "$DUR" >"$W/h0" &
    hp=$!
    alone=$(probe "$DUR")
    wait $hp || true
    long 30k $((DUR + 2)) >"$W/l30" &
    l1=$!
    long 100k $((DUR + 2)) >"$W/l100" &
    l2=$!
    sleep 1
    health "$DUR" >"$W/h1" &
    hp=$!
    busy=$(probe "$DUR")
    wait $hp $l1 $l2 || true
    # Control: the same long traffic through a second gateway process (its
    # own loop and work threads, the same flags) while the probe goes through
    # this one, idle: what the machine's contention alone does to the probe.
    # The paced /health client runs here too, as in the loaded phase: the
    # two phases then differ only in where the long traffic goes.
    G1=$GWP P1=$GWPID
    start_gw "$b" "${cfg#*:}"
    G2=$GWP P2=$GWPID
    GWP=$G2 long 30k $((DUR + 2)) >/dev/null &
    l1=$!
    GWP=$G2 long 100k $((DUR + 2)) >/dev/null &
    l2=$!
    sleep 1
    GWP=$G1 health "$DUR" >/dev/null &
    hp=$!
    ctl=$(GWP=$G1 probe "$DUR")
    wait $hp $l1 $l2 || true
    GWPID=$P2 && stop_gw
    GWP=$G1 GWPID=$P1
    ROWS+=("$(python3 - "${cfg%%:*}" "${cfg#*:}" "$rep" "$(field p50 "$alone")" "$(field p99 "$alone")" \
      "$(field p50 "$busy")" "$(field p99 "$busy")" "$(field p99 "$(cat "$W/h0")")" \
      "$(field p99 "$(cat "$W/h1")")" "$(field reqs "$(cat "$W/l30")")" \
      "$(field reqs "$(cat "$W/l100")")" "$(field errs "$busy")" "$DUR" "$(field p99 "$ctl")" <<'PY'
import sys
b, th, rep, a50, a99, b50, b99, h0, h1, n30, n100, errs, d, c99 = sys.argv[1:]
a50, a99, b50, b99, h0, h1, c99 = map(float, (a50, a99, b50, b99, h0, h1, c99))
print(f"| {b} | {th} | {rep} | {a50:.3f} | {a99:.3f} | {b50:.3f} | {b99:.3f} | {b99 / a99:.2f}x "
      f"| {h0:.3f} | {h1:.3f} | {h1 / h0:.2f}x | {int(n30) / (int(d) + 2):.0f} | {int(n100) / (int(d) + 2):.0f} | {errs} "
      f"| {c99:.3f} | {b99 / c99:.2f}x |")
PY
)")
    echo "${ROWS[-1]}" >&2
    stop_gw
  done
done

SUM=$(printf '%s\n' "${ROWS[@]}" | python3 -c '
import sys, statistics
by = {}
for line in sys.stdin:
    f = [x.strip() for x in line.strip().strip("|").split("|")]
    by.setdefault((f[0], f[1]), []).append((float(f[7].rstrip("x")), float(f[10].rstrip("x")), float(f[6]),
                                            float(f[15].rstrip("x"))))
for (b, th), v in by.items():
    s, h, c = [x[0] for x in v], [x[1] for x in v], [x[3] for x in v]
    ok = "yes" if statistics.median(s) <= 1.2 else "no"
    okc = "yes" if statistics.median(c) <= 1.2 else "no"
    print(f"| {b} | {th} | {statistics.median([x[2] for x in v]):.3f} | {statistics.median(s):.2f}x "
          f"| {min(s):.2f}x - {max(s):.2f}x | {statistics.median(h):.2f}x | {min(h):.2f}x - {max(h):.2f}x "
          f"| {ok} | {statistics.median(c):.2f}x | {min(c):.2f}x - {max(c):.2f}x | {okc} | {len(v)} |")')

{
  echo "# Head-of-line: short requests beside 30k- and 100k-token ones"
  echo
  echo "Command: \`bash bench/gateway/hol.sh $DUR $REPS\` ($(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores shared"
  echo "with other work; load average at the end: $(cut -d' ' -f1-3 /proc/loadavg))."
  echo "Short requests: 2 connections, each ${PACE} ms between requests (a latency probe, not a"
  echo "load), to their own engine; long: 8 connections of 30k and 8 of 100k (closed loop) to four"
  echo "others, through one \`kvgate serve --threads 1 --policy $POL\` with the Qwen3"
  echo "tokenizer (the gateway tokenizes; the engines use the byte tokenizer). The long traffic's"
  echo "engines and clients run at nice 19 (in a fleet they have machines of their own); the"
  echo "gateway, the probe and its engine at 0; the work threads at the default --tokenizer-nice 10."
  echo "The probe's clients and its engine run with 100 us scheduler slices (short_slice.py), as the"
  echo "gateway's loops can ask for (--loop-slice-us), so that they do not wait for a CPU behind the long"
  echo "traffic; the gateway runs with its defaults."
  echo "${DUR} s per phase; GET /health at 1 connection, paced the same, is the gateway's loop"
  echo "alone. Latencies in ms; configurations interleaved, ${REPS} repetitions."
  [ -n "$BASE" ] && echo "base = \`$BASE\` (the build before the change), kvgate = \`$BIN\`."
  echo
  echo "| build | work threads | rep | short p50 alone | p99 alone | p50 loaded | p99 loaded | p99 ratio | /health p99 alone | loaded | ratio | 30k req/s | 100k req/s | errors | p99, long traffic on another gateway | loaded / that |"
  echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
  printf '%s\n' "${ROWS[@]}"
  echo
  echo "Target (issue 19): short requests' p99 within 20% while 30k/100k-token requests load the"
  echo "work threads: the median of the p99 ratios <= 1.20. The control (\"long traffic on another"
  echo "gateway\"): the same long traffic through a second gateway process with the same flags while"
  echo "the probe goes through the first, idle one, and the paced /health client runs as in the"
  echo "loaded phase; the 2 cores are as busy, but nothing the probe meets in its own gateway is."
  echo "Loaded over control is the head-of-line of kvgate itself; the control over alone is what"
  echo "the machine's contention costs any process on it."
  echo
  echo "| build | work threads | median p99 loaded (ms) | short: median p99 ratio | range | /health: median p99 ratio | range | met | short: loaded / control | range | within 20% of the control | runs |"
  echo "|---|---:|---:|---:|---|---:|---|---|---:|---|---|---:|"
  echo "$SUM"
} >"$OUT"
cat "$OUT"
