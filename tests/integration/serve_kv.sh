# Precise KV-aware routing end to end: kvgate serve (kv_aware) in front of
# four `kvgate sim` engines that publish KV events. Requests sharing a long
# prefix land on the worker that holds it, and the engine's own usage
# (cached_tokens) confirms the hit; /debug/route explains; kvgate's
# prefix_affinity keeps prefixes and spreads new ones; a worker killed and
# removed leaves nothing in the index.
. "$(dirname "$0")/lib.sh"
N=4
SIMS=(); EVS=(); URLS=()
for i in $(seq 1 $N); do
  p=$(free_port); e=$(free_port)
  start_sim "$p" --model m --speed 20 --kv-events-endpoint "tcp://127.0.0.1:$e" || exit 1
  SIMS+=($p); EVS+=("tcp://127.0.0.1:$e"); URLS+=("http://127.0.0.1:$p")
done
GW=$(free_port)
start_serve "$GW" --threads 2 --policy kv_aware --block-size 16 --worker-urls "${URLS[@]}" \
  --kv-events-endpoints "${EVS[@]}" --health-check-interval-secs 1 || exit 1
G=http://127.0.0.1:$GW
wait_http "$G/readiness" 10 || exit 1

prefix() { /usr/bin/python3 -c "import random; r=random.Random($1); print(' '.join(''.join(r.choice('abcdefghij') for _ in range(6)) for _ in range(100)))"; }
# Sends four questions for each group (a 700-character system prompt each) to
# gateway $1. Sets SAME (later questions on the first one's worker), HITS
# (later questions the engine found cached: cached_tokens >= 640), FIRSTS
# (each group's first worker) and BODY (the last request).
route_groups() {
  local gw=$1 g q p first w cached
  shift
  SAME=0; HITS=0; FIRSTS=""
  for g in "$@"; do
    p=$(prefix "$g")
    first=""
    for q in 1 2 3 4; do
      BODY="{\"model\":\"m\",\"messages\":[{\"role\":\"system\",\"content\":\"$p\"},{\"role\":\"user\",\"content\":\"question $q of group $g\"}],\"max_tokens\":2}"
      w=$(curl -s -D - -o "$TMP/r" "$gw/v1/chat/completions" -d "$BODY" | tr -d '\r' | awk -F': ' 'tolower($1)=="x-kvgate-worker"{print $2}')
      cached=$(json_get "$TMP/r" 'j["usage"]["prompt_tokens_details"]["cached_tokens"]')
      if [ -z "$first" ]; then first=$w; FIRSTS="$FIRSTS $w"; sleep 0.3; else
        [ "$w" = "$first" ] && SAME=$((SAME + 1)); [ "$cached" -ge 640 ] && HITS=$((HITS + 1))
      fi
    done
  done
}
route_groups "$G" 1 2 3 4
check "same prefix, same worker (12/12): $SAME" [ "$SAME" = 12 ]
check "engine confirms the hits (cached_tokens >= 640): $HITS/12" [ "$HITS" = 12 ]

# The groups spread over the workers (an idle pool: prefill cost decides).
curl -s "$G/workers" >"$TMP/w"
used=$(json_get "$TMP/w" 'sum(1 for w in j["workers"] if w["processed"] > 0)')
check "prefix groups spread over >= 3 workers: $used" [ "$used" -ge 3 ]

# /debug/route explains without routing.
P=$(prefix 1)
body="{\"model\":\"m\",\"messages\":[{\"role\":\"system\",\"content\":\"$P\"},{\"role\":\"user\",\"content\":\"another\"}]}"
curl -s "$G/debug/route" -d "$body" >"$TMP/d"
check "debug/route: policy and chosen" [ "$(json_get "$TMP/d" 'j["policy"] + " " + str(j["chosen"] is not None)')" = "kv_aware True" ]
check "debug/route: one worker matches >= 40 blocks" [ "$(json_get "$TMP/d" 'sum(1 for w in j["workers"] if (w["matched_blocks"] or 0) >= 40)')" = 1 ]
check "debug/route: every field present" [ "$(json_get "$TMP/d" 'sorted(j["workers"][0].keys())')" = "['decode_blocks', 'in_flight', 'kv_usage', 'lora_cost', 'matched_blocks', 'prefill_blocks', 'routing', 'score', 'url', 'waiting']" ]
before=$(json_get "$TMP/w" 'sum(w["processed"] for w in j["workers"])')
after=$(curl -s "$G/workers" | /usr/bin/python3 -c 'import json,sys; print(sum(w["processed"] for w in json.load(sys.stdin)["workers"]))')
check "debug/route routed nothing" [ "$before" = "$after" ]

# Metrics carry the index and the event counters.
curl -s "$G/metrics" >"$TMP/m"
check "metrics: index entries > 0" [ "$(awk '/^kvgate_kv_index_entries /{print ($2 > 0)}' "$TMP/m")" = 1 ]
check "metrics: event batches per worker" [ "$(grep -c '^kvgate_kv_event_batches{' "$TMP/m")" = $N ]
check "metrics pass promtool" bash -c "promtool check metrics <'$TMP/m' >/dev/null 2>&1"

# kvgate's prefix_affinity on the same engines, four new groups: each stays
# where it was first placed, and new prefixes spread (each to its rendezvous
# worker among those within one placement of the mean: at most two on one).
GA=$(free_port)
start_serve "$GA" --threads 2 --policy prefix_affinity --affinity-min-match 0.5 \
  --affinity-load-bound 2 --block-size 16 --worker-urls "${URLS[@]}" \
  --kv-events-endpoints "${EVS[@]}" --health-check-interval-secs 1 || exit 1
wait_http "http://127.0.0.1:$GA/readiness" 10 || exit 1
route_groups "http://127.0.0.1:$GA" 5 6 7 8
check "prefix_affinity: same prefix, same worker (12/12): $SAME" [ "$SAME" = 12 ]
check "prefix_affinity: engine confirms the hits: $HITS/12" [ "$HITS" = 12 ]
distinct=$(echo $FIRSTS | tr ' ' '\n' | sort -u | wc -l)
most=$(echo $FIRSTS | tr ' ' '\n' | sort | uniq -c | sort -rn | awk 'NR==1{print $1}')
check "prefix_affinity: 4 new prefixes, at most 2 on one worker ($most, on $distinct)" \
  [ "${most:-9}" -le 2 ]
curl -s "http://127.0.0.1:$GA/debug/route" -d "$BODY" >"$TMP/da"
check "prefix_affinity: debug/route says it is a hit" [ "$(json_get "$TMP/da" 'j["policy"] + " " + j["note"].split(":")[0]')" = "prefix_affinity hit" ]

# Kill the worker that holds group 1's prefix and remove it: its entries go.
victim=$(json_get "$TMP/d" 'j["chosen"]')
vport=${victim##*:}
for i in "${!SIMS[@]}"; do [ "${SIMS[$i]}" = "$vport" ] && kill -KILL "${PIDS[$i]}"; done
enc=$(/usr/bin/python3 -c "import urllib.parse,sys; print(urllib.parse.quote(sys.argv[1], safe=''))" "$victim")
check "DELETE the dead worker" [ "$(curl -s -o /dev/null -w '%{http_code}' -X DELETE "$G/workers/$enc")" = 200 ]
curl -s "$G/metrics" >"$TMP/m2"
check "removed worker: no series left" bash -c "! grep -q '$victim' '$TMP/m2'"
left=$(curl -s "$G/workers" | /usr/bin/python3 -c 'import json,sys; print(sum(w["kv_index_blocks"] for w in json.load(sys.stdin)["workers"]))')
total_after=$(awk '/^kvgate_kv_index_entries /{print $2}' "$TMP/m2")
check "index holds only the live workers' blocks ($total_after = $left)" [ "$total_after" = "$left" ]
curl -s "$G/debug/route" -d "$body" >"$TMP/d2"
check "group 1 now matches nowhere" [ "$(json_get "$TMP/d2" 'max((w["matched_blocks"] or 0) for w in j["workers"])')" = 0 ]
finish
