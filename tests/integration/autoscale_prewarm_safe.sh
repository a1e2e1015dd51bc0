# The local actuator's prewarm builds its requests itself: a client's chat
# body with kv_transfer_params (a remote host and port where a listener
# counts connections), data_parallel_rank, bootstrap_host and an unknown
# member is routed, a scale-up starts a second replica, and the prewarm
# requests it receives are completions of {model, prompt, max_tokens 1}
# with none of those members, carrying --upstream-api-key; no engine ever
# connected to the client's address. The replicas are the echo engine
# stand-in (tests/fixtures/echo_engine.py), which logs each body it gets and
# acts on kv_transfer_params as a decode engine would.
. "$(dirname "$0")/lib.sh"
GW=$(free_port); LP=$(free_port); BASE=$(free_port --run 4)
BODIES=$TMP/bodies.jsonl
: >"$BODIES"
# The listener a client's kv_transfer_params point at: one line per connection.
/usr/bin/python3 -c '
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(16)
while True:
    c, a = s.accept()
    with open(sys.argv[2], "a") as f: f.write("connection from %s\n" % (a,))
    c.close()
' "$LP" "$TMP/conns.txt" >"$TMP/listener.out" 2>&1 &
PIDS+=($!)
: >"$TMP/conns.txt"
cat >"$TMP/as.yaml" <<YAML
interval_secs: 0.3
actuator: local
local:
  command: "/usr/bin/python3 $KVG_ROOT/tests/fixtures/echo_engine.py {port} m - $BODIES"
  ports: $BASE-$((BASE + 3))
  cold_start_scale: 0.01
  prewarm_prompts: 4
  slow_start_secs: 0.5
  drain_timeout_secs: 5
pools:
  - name: agg
    model: qwen2.5-7b
    interval_secs: 0.3
    min_replicas: 1
    max_replicas: 2
    ttft_secs: 1.0
    itl_secs: 0.05
    prefill_tokens_per_sec: 10
    decode_tokens_per_sec: 5
    node: warm
    down_hold_secs: 600
    signal_window_secs: 0.3
YAML
# The engines report usage: the lengths the planner sizes on (nothing assumed).
export ECHO_USAGE=200,50
start_serve "$GW" --autoscale "$TMP/as.yaml" --health-check-interval-secs 0.3 \
  --upstream-api-key up-sekret --queue-timeout-secs 30 --tokenizer builtin:bytes || exit 1
G=http://127.0.0.1:$GW
LOG=$TMP/serve-$GW.log
wait_log() { wait_grep "$1" "$LOG" "${2:-1}"; } # GREP_PATTERN [N]: bounded
check "the first replica started and became healthy" wait_log 'autoscale local: pool agg: http://127.0.0.1:[0-9]* healthy after' 1

# The client's chat body: members that must never reach an engine from kvgate's own calls.
# System prompt 1 is long (over the 2048 tokens a replay keeps): its
# beginning is replayed, the part a prefix cache shares.
LONG=$(printf 'long shared context %.0s' $(seq 1 160))
sys_prompt() { if [ "$1" = 1 ]; then echo "a shared system prompt 1 $LONG"; else echo "a shared system prompt $1"; fi; }
chat() {
  curl -s -m 20 -o /dev/null -w '%{http_code}' "$G/v1/chat/completions" -d "{\"model\":\"m\",\"messages\":[{\"role\":\"system\",\"content\":\"$(sys_prompt "$1")\"},{\"role\":\"user\",\"content\":\"hi\"}],\"max_tokens\":7,\"kv_transfer_params\":{\"remote_host\":\"127.0.0.1\",\"remote_port\":$LP,\"remote_engine_id\":\"evil\",\"do_remote_prefill\":true},\"data_parallel_rank\":3,\"bootstrap_host\":\"127.0.0.1\",\"bootstrap_port\":$LP,\"x_unknown_member\":\"client-bytes\"}"
}
check "the client's chat request is answered (200)" [ "$(chat 0)" = 200 ]
# Load until the pool scales up to a second replica, prewarmed (bounded).
for _ in $(seq 1 40); do
  cp=()
  for i in 1 2 3 4 5 6 7 8; do chat $((i % 2)) >/dev/null & cp+=($!); done
  wait "${cp[@]}"
  # The first replica's own line ("with 0 of the hottest prefixes") is not it.
  grep -q 'autoscale: prewarmed .* with [1-4] of' "$LOG" && break
done
check "scaled up to a second replica" wait_log 'autoscale local: pool agg: started' 2
check "the second replica was prewarmed" wait_log 'autoscale: prewarmed .* with [1-4] of the hottest prefixes' 1
new=$(grep 'autoscale: prewarmed .* with [1-4]' "$LOG" | head -1 | sed 's/.*prewarmed http:\/\/127.0.0.1:\([0-9]*\) with.*/\1/')
# The prewarm requests: the new replica's POSTs with max_tokens 1 (the client asked for 7).
/usr/bin/python3 - "$BODIES" "$new" >"$TMP/prewarm.txt" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    try:
        b = json.loads(r["body"])
    except ValueError:
        continue
    if r["port"] == int(sys.argv[2]) and b.get("max_tokens") == 1:
        print(json.dumps({"path": r["path"], "auth": r["headers"].get("authorization"), "body": b}))
PY
n=$(wc -l <"$TMP/prewarm.txt")
check "the new replica ($new) received the prewarm requests ($n)" [ "$n" -ge 1 ]
pw() { # python over each prewarm record p (path, auth, body b): all true
  /usr/bin/python3 -c "
import json, sys
rs = [json.loads(l) for l in open(sys.argv[1])]
ok = bool(rs) and all(($1) for p in rs for b in [p['body']])
sys.exit(0 if ok else 1)" "$TMP/prewarm.txt"
}
check "no prewarm carries kv_transfer_params" pw "'kv_transfer_params' not in b"
check "no prewarm carries data_parallel_rank" pw "'data_parallel_rank' not in b"
check "no prewarm carries bootstrap_*" pw "not any(k.startswith('bootstrap') for k in b)"
check "no prewarm carries the client's unknown member" pw "'x_unknown_member' not in b"
check "each prewarm is kvgate's own {model, prompt, max_tokens 1}" pw "sorted(b) == ['max_tokens', 'model', 'prompt'] and b['model'] == 'm'"
check "each prewarm is a completions request" pw "p['path'] == '/v1/completions'"
check "each prewarm carries the upstream key" pw "p['auth'] == 'Bearer up-sekret'"
# The prompt kvgate rendered and tokenized for each of the two system prompts.
for i in 0 1; do
  echo "{\"messages\":[{\"role\":\"system\",\"content\":\"$(sys_prompt $i)\"},{\"role\":\"user\",\"content\":\"hi\"}]}" |
    "$KVG_BIN" tokenize --tokenizer builtin:bytes --chat >"$TMP/ids$i.json"
done
check "each prewarm's prompt is a hot prefix's ids as kvgate rendered it (the long one's first 2048)" \
  pw "b.get('prompt') in [json.load(open('$TMP/ids%d.json' % i))['ids'][:2048] for i in (0, 1)]"
check "the long prompt ($(json_get "$TMP/ids1.json" "len(j['ids'])") tokens) was replayed, its first 2048" \
  /usr/bin/python3 -c "
import json, sys
sys.exit(0 if any(len(json.loads(l)['body']['prompt']) == 2048 for l in open(sys.argv[1])) else 1)" "$TMP/prewarm.txt"
check "no engine connected to the client's kv_transfer_params address" [ ! -s "$TMP/conns.txt" ]
[ -n "${KVG_KEEP_LOG:-}" ] && cp "$TMP/prewarm.txt" "$KVG_KEEP_LOG"
finish
