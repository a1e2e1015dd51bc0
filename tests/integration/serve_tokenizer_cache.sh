# The tokenizer prefix cache and pool in kvgate serve: chat requests sharing
# a long system prompt (over 16 KiB: tokenized on the pool) count cache hits
# and reused tokens and block hashes in /metrics (the prompt is kept on its second sight, so
# the third request hits; the unique questions are not admitted) and route as without the cache (same
# prompt_tokens from the engine, same debug route ids); --tokenizer-cache-bytes 0
# turns it off; --tokenizer-threads N sizes the pool (its threads appear when
# the first long prompt is tokenized) and they run at nice 10 (--tokenizer-nice;
# the loop threads stay at 0, --tokenizer-nice 0 leaves the pool there too); a
# bad value is refused.
. "$(dirname "$0")/lib.sh"
S=$(free_port)
start_sim "$S" --model m --profile instant || exit 1
sysp=$(/usr/bin/python3 -c "import random; r=random.Random(3); print(' '.join(''.join(r.choice('abcdefgh') for _ in range(7)) for _ in range(3000)))")
body() { echo "{\"model\":\"m\",\"messages\":[{\"role\":\"system\",\"content\":\"$sysp\"},{\"role\":\"user\",\"content\":\"question $1\"}],\"max_tokens\":1}"; }
metric() { curl -s "$1/metrics" | awk -v k="$2" '$1==k{print $2}'; }

workers_of() { grep -lx kvg-work /proc/$1/task/*/comm 2>/dev/null | wc -l; }
niced() { # PID NICE [COMM]: how many of its threads (named COMM) run at NICE (field 19 of stat)
  local n=0 t
  for t in /proc/$1/task/*; do
    [ -n "${3:-}" ] && [ "$(cat "$t/comm")" != "$3" ] && continue
    [ "$(sed 's/.*) //' "$t/stat" | awk '{print $17}')" = "$2" ] && n=$((n + 1))
  done
  echo "$n"
}
G1=$(free_port)
start_serve "$G1" --threads 1 --tokenizer-threads 3 --policy prefix_affinity --worker-urls "http://127.0.0.1:$S" || exit 1
G=http://127.0.0.1:$G1
for q in 1 2 3; do body "$q" >"$TMP/b$q"; curl -s -o "$TMP/r$q" "$G/v1/chat/completions" -d @"$TMP/b$q"; done
check "--tokenizer-threads 3: three work threads ($(workers_of "$SERVE_PID"))" [ "$(workers_of "$SERVE_PID")" = 3 ]
n10=$(niced "$SERVE_PID" 10 kvg-work)
check "work threads at nice 10 ($n10), the main thread at 0" \
  [ "$n10" = 3 -a "$(niced "$SERVE_PID" 0 kvgate)" -ge 1 ]
# The loop threads keep the kernel's slice unless asked (the kernel shows it
# as se.slice from 6.12 on; an older one has none to show).
slices() { # PID COMM -> the se.slice of its threads named COMM
  local t
  for t in /proc/$1/task/*; do
    [ "$(cat "$t/comm")" = "$2" ] && awk '$1=="se.slice"{print $3}' "$t/sched"
  done
}
if grep -q '^se.slice' /proc/self/sched; then
  check "by default the loop thread's slice is the work threads' ($(slices "$SERVE_PID" kvg-loop))" \
    [ "$(slices "$SERVE_PID" kvg-loop)" = "$(slices "$SERVE_PID" kvg-work | sort -u)" ]
fi
hits=$(metric "$G" 'kvgate_tokenizer_cache_total{event="hit"}')
miss=$(metric "$G" 'kvgate_tokenizer_cache_total{event="miss"}')
reused=$(metric "$G" 'kvgate_tokenizer_cache_total{event="reused_tokens"}')
nadm=$(metric "$G" 'kvgate_tokenizer_cache_total{event="not_admitted"}')
rblocks=$(metric "$G" 'kvgate_tokenizer_cache_total{event="reused_blocks"}')
check "one hit, two misses ($hits, $miss)" [ "$hits" = 1 -a "$miss" = 2 ]
check "first-sight segments not admitted ($nadm)" [ "${nadm:-0}" -ge 3 ]
check "the system prompt's tokens reused ($reused)" [ "${reused:-0}" -gt 10000 ]
check "and their block hashes ($rblocks)" [ "${rblocks:-0}" -gt 500 ]
check "cache bytes reported" [ "$(metric "$G" kvgate_tokenizer_cache_bytes)" -gt 0 ]
curl -s -o "$TMP/d1" "$G/debug/route" -d @"$TMP/b3" -H 'content-type: application/json'

G2=$(free_port)
start_serve "$G2" --threads 1 --tokenizer-cache-bytes 0 --tokenizer-nice 0 --loop-slice-us 100 --policy prefix_affinity --worker-urls "http://127.0.0.1:$S" || exit 1
curl -s -o "$TMP/n3" "http://127.0.0.1:$G2/v1/chat/completions" -d @"$TMP/b3"
curl -s -o "$TMP/d2" "http://127.0.0.1:$G2/debug/route" -d @"$TMP/b3" -H 'content-type: application/json'
check "same prompt_tokens with and without the cache" [ "$(json_get "$TMP/r3" 'j["usage"]["prompt_tokens"]')" = "$(json_get "$TMP/n3" 'j["usage"]["prompt_tokens"]')" ]
same_route() { /usr/bin/python3 - "$TMP/d1" "$TMP/d2" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
strip = lambda d: {k: v for k, v in d.items() if "token" in k or "block" in k or "hash" in k}
sys.exit(0 if strip(a) == strip(b) and strip(a) else 1)
PY
}
check "debug route: same tokens and blocks with and without the cache" same_route
check "--tokenizer-nice 0: no thread niced" [ "$(niced "$SERVE_PID" 10)" = 0 ]
grep -q '^se.slice' /proc/self/sched &&
  check "--loop-slice-us 100: the loop's slice is 100 us ($(slices "$SERVE_PID" kvg-loop))" \
    [ "$(slices "$SERVE_PID" kvg-loop)" = 100000 ]
check "cache off: no hit series" [ -z "$(metric "http://127.0.0.1:$G2" 'kvgate_tokenizer_cache_total{event="hit"}')" ]
"$KVG_BIN" serve --tokenizer-threads -1 >/dev/null 2>"$TMP/bad.err"
check "--tokenizer-threads -1 refused" [ $? = 2 ]
"$KVG_BIN" serve --tokenizer-nice 20 >/dev/null 2>"$TMP/bad.err"
check "--tokenizer-nice 20 refused" [ $? = 2 ]
"$KVG_BIN" serve --loop-slice-us 50 >/dev/null 2>"$TMP/bad.err"
check "--loop-slice-us 50 refused (under the kernel's 100 us)" [ $? = 2 ]
check "  and the message names the range" grep -q '100..100000' "$TMP/bad.err"
finish
