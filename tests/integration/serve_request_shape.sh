# The OpenAI request shape kvgate relies on is checked at the gateway:
# "messages": "hi" or a message without a role is a 400 naming the field in
# `param` (OpenAI-style JSON), never forwarded for the engine's 500.
. "$(dirname "$0")/lib.sh"
SP=$(free_port)
start_sim "$SP" --model m || exit 1
GW=$(free_port)
start_serve "$GW" --threads 1 --worker-urls "http://127.0.0.1:$SP" --policy kv_aware || exit 1
G=http://127.0.0.1:$GW
wait_http "$G/readiness" 10 || exit 1
req() { # req PATH BODY: "status param code"
  local s
  s=$(curl -s -o "$TMP/r" -w '%{http_code}' "$G$1" -d "$2")
  echo "$s $(json_get "$TMP/r" 'j.get("error", {}).get("param") if "error" in j else "-"') $(json_get "$TMP/r" 'j.get("error", {}).get("code") if "error" in j else "-"')"
}
check "messages a string: 400 param messages" [ "$(req /v1/chat/completions '{"model":"m","messages":"hi"}')" = "400 messages invalid_type" ]
check "a message without role: 400 param messages[0].role" [ "$(req /v1/chat/completions '{"model":"m","messages":[{"content":"hi"}]}')" = "400 messages[0].role missing_required_parameter" ]
check "prompt an object: 400 param prompt" [ "$(req /v1/completions '{"model":"m","prompt":{"a":1}}')" = "400 prompt invalid_type" ]
check "a good chat body is answered" [ "$(req /v1/chat/completions '{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":2}' | cut -d' ' -f1)" = 200 ]
check "token id prompt is answered" [ "$(req /v1/completions '{"model":"m","prompt":[104,105],"max_tokens":2}' | cut -d' ' -f1)" = 200 ]
finish
