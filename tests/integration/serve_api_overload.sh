# Where kvgate sheds, an Anthropic client reads Anthropic's own status and
# type (529 overloaded_error, which its SDK retries), an OpenAI client its
# 503: a pool whose only engine is down, asked through /v1/messages and
# /v1/chat/completions.
. "$(dirname "$0")/lib.sh"
GW=$(free_port); DEAD=$(free_port)
start_serve "$GW" --worker-urls "http://127.0.0.1:$DEAD" --health-check-interval-secs 0.2 \
  --retry-max-retries 0 || exit 1
G=http://127.0.0.1:$GW
code() { curl -s -m 20 -o "$TMP/out" -w '%{http_code}' "$@"; }
check "Messages with no healthy worker: 529" \
  [ "$(code "$G/v1/messages" -d '{"model":"m","max_tokens":3,"messages":[{"role":"user","content":"x"}]}')" = 529 ]
check "  ... overloaded_error, Anthropic's shape" \
  [ "$(json_get "$TMP/out" "j['type'] + ':' + j['error']['type']")" = "error:overloaded_error" ]
check "chat with no healthy worker: 503 in OpenAI's shape" \
  [ "$(code "$G/v1/chat/completions" -d '{"model":"m","max_tokens":3,"messages":[{"role":"user","content":"x"}]}'; json_get "$TMP/out" "'error' in j")" = "503True" ]
finish
