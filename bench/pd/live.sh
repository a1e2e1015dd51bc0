#!/usr/bin/env bash
# The PD live miniature over HTTP: kvgate serve in front of real `kvgate sim`
# processes on 127.0.0.1, aggregated (two sims, --role both) against 1P:1D
# (a prefill and a decode sim, vLLM's NIXL protocol, the KV pulled over the
# sims' side channel), the same workload driven by `kvgate bench --mode live
# --target` (TTFT, ITL), then kvgate's PD counters from its /metrics.
# Appends a section to $OUT (bench/results/pd.md). Every process it starts is
# stopped by its PID, also on error or interrupt.
#   bash bench/pd/live.sh            (~1.5 min: 2 runs of 30 s at 2 req/s)
# Knobs (environment): KVG_BIN, OUT, SECS (30), RATE (2), PROFILE
# (qwen3-32b-h100-tp2-roofline), PROMPT (2000 tokens: 1500 + 500), OUTPUT (64), WORKDIR.
set -euo pipefail
cd "$(dirname "$0")/../.."
if [ -z "${KVG_BIN:-}" ]; then
  make -s -j2 BUILD=release build/release/kvgate
  KVG_BIN=build/release/kvgate
fi
OUT=${OUT:-bench/results/pd.md}
SECS=${SECS:-30} RATE=${RATE:-2} OUTPUT=${OUTPUT:-64}
PROFILE=${PROFILE:-qwen3-32b-h100-tp2-roofline}
WORK=${WORKDIR:-$(mktemp -d)}
mkdir -p "$WORK"
PIDS=()
stop() {
  local p
  for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  PIDS=()
}
trap stop EXIT
trap 'stop; exit 130' INT TERM
port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }
up() { # URL: answers within 10 s
  local i
  for i in $(seq 1 100); do curl -s -o /dev/null -m 1 "$1" && return 0; sleep 0.1; done
  echo "live.sh: $1 did not come up" >&2
  return 1
}
sim() { # PORT ARGS...
  local p=$1; shift
  "$KVG_BIN" sim --port "$p" --profile "$PROFILE" "$@" >"$WORK/sim-$p.log" 2>&1 &
  PIDS+=($!)
  up "http://127.0.0.1:$p/v1/models"
}
serve() { # PORT ARGS...
  local p=$1; shift
  "$KVG_BIN" serve --port "$p" "$@" >"$WORK/serve-$p.out" 2>"$WORK/serve-$p.log" &
  PIDS+=($!)
  up "http://127.0.0.1:$p/health"
}
idle() { # URL: every worker's in_flight 0 (bounded)
  local i
  for i in $(seq 1 100); do
    curl -s -m 1 "$1/workers" | /usr/bin/python3 -c 'import json,sys; sys.exit(0 if sum(w["in_flight"] for w in json.load(sys.stdin)["workers"]) == 0 else 1)' && return 0
    sleep 0.1
  done
  return 1
}
drive() { # NAME GATEWAY_URL
  "$KVG_BIN" bench --mode live --target "$2" --policies "$1" --model sim-model \
    --workload shared_prefix --groups 100000 --prompts-per-group 1 --system-prompt-len 1500 \
    --question-len 500 --output-len "$OUTPUT" --stages "${RATE}x${SECS}" --timeout 60 \
    --json "$WORK/$1.json" --quiet >"$WORK/$1.md"
}

GW=$(port) A1=$(port) A2=$(port)
sim "$A1"
sim "$A2"
serve "$GW" --worker-urls "http://127.0.0.1:$A1" "http://127.0.0.1:$A2" --policy least_load
drive aggregated "http://127.0.0.1:$GW"
idle "http://127.0.0.1:$GW" || { echo "live.sh: aggregated: requests left in flight" >&2; exit 1; }
stop

GW=$(port) P=$(port) PS=$(port) D=$(port)
sim "$P" --role prefill --side-channel-port "$PS" --labels rack=r1,zone=z1
sim "$D" --role decode --labels rack=r1,zone=z1
serve "$GW" --vllm-pd-disaggregation --prefill "http://127.0.0.1:$P" none \
  --decode "http://127.0.0.1:$D" --worker-labels rack=r1,zone=z1 rack=r1,zone=z1 \
  --pd-threshold-tokens 64
drive 1P:1D "http://127.0.0.1:$GW"
idle "http://127.0.0.1:$GW" || { echo "live.sh: 1P:1D: requests left in flight" >&2; exit 1; }
curl -s -m 2 "http://127.0.0.1:$GW/metrics" | grep '^kvgate_pd_' >"$WORK/pd-metrics.txt"
stop

/usr/bin/python3 - "$WORK" "$OUT" "$SECS" "$RATE" "$OUTPUT" "$PROFILE" <<'PY'
import json, re, sys
work, out, secs, rate, output, profile = sys.argv[1:7]
rows = []
for name in ("aggregated", "1P:1D"):
    o = json.load(open(f"{work}/{name}.json"))[0]
    rows.append((name, o))
m = {}
for line in open(f"{work}/pd-metrics.txt"):
    k, v = line.rsplit(" ", 1)
    # The PD series carry the served model: summed over it.
    k = re.sub(r'model="[^"]*",?', "", k).replace(",}", "}").replace("{}", "")
    m[k] = m.get(k, 0) + float(v)
def g(k):
    return int(m.get(k, 0))
pdd = g('kvgate_pd_decisions_total{decision="prefill_decode"}')
dod = g('kvgate_pd_decisions_total{decision="decode_only"}')
xc, xs = m.get("kvgate_pd_kv_transfer_seconds_count", 0), m.get("kvgate_pd_kv_transfer_seconds_sum", 0)
with open(out, "a") as f:
    f.write("\n## Live miniature over HTTP (kvgate serve + kvgate sim in roles)\n\n")
    f.write(f"Command: `bash bench/pd/live.sh` (SECS={secs} RATE={rate}). Wall-clock, real "
            f"processes on 127.0.0.1 (2 cores shared): the sims run the `{profile}` profile at "
            f"real speed; `kvgate bench --mode live --target` sends Poisson arrivals at {rate} "
            f"req/s for {secs} s of unshared 2,000-token prompts with {output} output tokens "
            "(streamed). Aggregated: two sims (`--role both`) behind `--policy least_load`; "
            "1P:1D: a prefill and a decode sim in one rack behind `--vllm-pd-disaggregation` "
            "(the decode pulls each prompt's KV from the prefill's side channel: 2,000 x 256 KiB "
            "at 50 GB/s, ~10 ms). Figures from one run, not averaged.\n\n")
    f.write("| setup | requests | completed | errors | TTFT p50 (s) | TTFT p90 (s) | TTFT p99 (s) | "
            "ITL mean (ms) | ITL p90 (ms) | ITL p99 (ms) |\n|---|---|---|---|---|---|---|---|---|---|\n")
    for name, o in rows:
        f.write(f"| {name} | {o['requests']} | {o['completed']} | {o['errors']} | "
                f"{o['ttft_p50_s']:.3f} | {o['ttft_p90_s']:.3f} | {o['ttft_p99_s']:.3f} | "
                f"{o['itl_mean_s']*1e3:.1f} | {o['itl_p90_s']*1e3:.1f} | {o['itl_p99_s']*1e3:.1f} |\n")
    f.write("\n1P:1D's PD counters (kvgate's /metrics after the run): "
            f"decisions prefill_decode {pdd}, decode_only {dod}; "
            f"KV transfers observed {int(xc)} (mean {xs / xc * 1e3 if xc else 0:.1f} ms from the "
            "decode's dispatch to its first byte: the pull plus one decode step); "
            f"prefill failures {g('kvgate_pd_prefill_failures_total')}, decode retries "
            f"{g('kvgate_pd_decode_retries_total')}, early rejections "
            f"{g('kvgate_pd_early_rejections_total')}, wasted prefills "
            f"{g('kvgate_pd_wasted_prefills_total')}, prefill restarts "
            f"{g('kvgate_pd_prefill_restarts_total')}.\n"
            "\n")
    a, d = rows[0][1], rows[1][1]
    f.write(f"What to read: aggregated engines run each new prompt's prefill between the "
            f"running requests' decode steps, so their ITL p99 is a prefill chunk "
            f"({a['itl_p99_s']*1e3:.0f} ms here); the split keeps it at "
            f"{d['itl_p99_s']*1e3:.0f} ms and pays for the second hop and the pull in TTFT "
            f"(p50 {a['ttft_p50_s']*1e3:.0f} ms aggregated, {d['ttft_p50_s']*1e3:.0f} ms 1P:1D).\n")
print(f"appended the live miniature to {out}")
PY
