# examples/kvgate.yaml (also the Debian package's /etc/kvgate/kvgate.yaml)
# starts as it is: `kvgate serve --config examples/kvgate.yaml` fronts its
# embedded simulated engines, becomes ready and answers a chat request; every
# key the file sets or shows commented out is one `kvgate serve --help` lists;
# SIGTERM drains, exits 0 and leaves none of the engines it started.
. "$(dirname "$0")/lib.sh"
EX=$KVG_ROOT/examples/kvgate.yaml
"$KVG_BIN" serve --help >"$TMP/help"
keys=$(sed -nE 's/^#? ?([a-z_]+): .*/\1/p; s/^#? ?([a-z_]+):$/\1/p' "$EX" | sort -u)
unknown=""
for k in $keys; do
  [ "$k" = workers ] && continue # YAML only: rows of worker keys
  grep -qE "^  --${k//_/-}( |$)" "$TMP/help" || unknown="$unknown $k"
done
check "the example's keys ($(echo $keys | wc -w)) are all serve flags${unknown:+ (unknown:$unknown)}" [ -z "$unknown" ]
check "it sets the keys it explains (host, port, policy, block_size, tokenizer)" \
  [ "$(grep -cE '^(host|port|policy|block_size|tokenizer): ' "$EX")" = 5 ]

P=$(free_port)
start_serve "$P" --config "$EX" || bad "serve --config examples/kvgate.yaml started"
wait_http "http://127.0.0.1:$P/readiness" 20 || bad "ready (a healthy engine)"
G=http://127.0.0.1:$P
code=$(curl -s -m 20 -o "$TMP/chat.json" -w '%{http_code}' "$G/v1/chat/completions" \
  -H 'content-type: application/json' \
  -d '{"model":"kvgate-sim","messages":[{"role":"user","content":"Hello!"}],"max_tokens":8}')
check "a chat request: HTTP 200 ($code)" [ "$code" = 200 ]
check "... with the engine's answer" \
  [ "$(json_get "$TMP/chat.json" 'j["choices"][0]["finish_reason"] in ("length", "stop")')" = True ]
check "the policy is the file's (prefix_affinity)" \
  grep -q "policy prefix_affinity, 4 workers" "$TMP/serve-$P.log"
kids=$(cat /proc/"$SERVE_PID"/task/*/children 2>/dev/null)
check "it started its 4 engines ($(echo $kids | wc -w) children)" [ "$(echo $kids | wc -w)" = 4 ]
kill -TERM "$SERVE_PID"
for _ in $(seq 1 "$(scaled 100)"); do kill -0 "$SERVE_PID" 2>/dev/null || break; sleep 0.1; done
wait "$SERVE_PID"
check "SIGTERM: exit 0" [ $? = 0 ]
left=""
for k in $kids; do kill -0 "$k" 2>/dev/null && left="$left $k"; done
check "no engine left behind${left:+ (left:$left)}" [ -z "$left" ]
for k in $left; do kill -KILL "$k" 2>/dev/null; done
finish
