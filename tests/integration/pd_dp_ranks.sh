#!/usr/bin/env bash
# PD disaggregation over External DP URL@rank workers (issue 15):
# a prefill sim and a decode sim, each with several data-parallel ranks
# behind one URL, registered as URL@0, URL@1, ... prefill and decode workers.
# vLLM (--vllm-pd-disaggregation): every leg names its rank in the
# X-data-parallel-rank header and the decode pulls from the rank that
# prefilled (each rank its own engine id and side channel, port + rank).
# SGLang (--pd-disaggregation): each leg's rank is data_parallel_rank in
# its body, the decode's own (never the prefill's), and bootstrap_host is
# the member's host, never a name with "@rank" (SGLang's invalid decode
# destination; the sim refuses such a host). Checks: the stream comes from
# the decode with the prefill's KV, every leg ran on the rank kvgate picked
# (the sims' per-rank counts equal kvgate's per-worker leg counts), kvgate
# dials host:port without the rank, in-flight is kept per rank and back to
# 0, /debug/route names the rank pair, and a rank whose held KV is gone
# gives a clean error with in-flight 0.
. "$KVG_ROOT/tests/integration/lib.sh"

PROMPT=$(printf 'the quick brown fox jumps over the lazy dog %.0s' $(seq 1 12)) # ~530 tokens
body() { # stream max_tokens
  printf '{"model":"sim-model","prompt":"%s","max_tokens":%s,"ignore_eos":true,"stream":%s,"stream_options":{"include_usage":true}}' \
    "$PROMPT" "$2" "$1"
}
metric() { curl -s -m 2 "$G/metrics" | prom_value "$1"; }
leg_count() { # WORKER LEG: kvgate's count of that leg on that worker (0 when unseen)
  local v
  v=$(metric "kvgate_pd_requests_total{worker=\"$1\",leg=\"$2\"}")
  echo "${v:-0}"
}
ranks() { # SIM_PORT FIELD: that field of every rank, as a python list
  curl -s -m 2 "http://127.0.0.1:$1/debug/ranks" >"$TMP/ranks.json"
  json_get "$TMP/ranks.json" "[r['$2'] for r in j['ranks']]"
}
kvgate_ranks() { # URL LEG N: kvgate's leg counts on URL@0..N-1, as a python list
  local out="" r
  for r in $(seq 0 $(($3 - 1))); do out="$out${out:+, }$(leg_count "$1@$r" "$2")"; done
  echo "[$out]"
}
in_flight() { # URL@RANK: kvgate's in_flight on that worker
  curl -s -m 1 "$G/workers" >"$TMP/wf.json"
  json_get "$TMP/wf.json" "[w['in_flight'] for w in j['workers'] if w['url'] == '$1'][0]"
}
no_at_in_logs() { # SIM_PORT...: no sim saw or logged a destination with "@"
  local p
  for p in "$@"; do
    if grep -E 'is not a host|failed for request|@[0-9]' "$TMP/sim-$p.log"; then return 1; fi
  done
  return 0
}
busy_pair() { # P D: during one long stream, in flight 1 on the picked prefill rank
  # (SGLang: both legs run together) and decode rank, 0 on the others
  curl -s -N -m 30 -D "$TMP/hb" "$G/v1/completions" -d "$(body true 1500)" >"$TMP/sb" &
  local c=$! i dec=""
  for i in $(seq 1 "$(scaled 500)"); do
    grep -q '"text"' "$TMP/sb" 2>/dev/null && break
    sleep 0.02
  done
  dec=$(tr -d '\r' <"$TMP/hb" | awk 'tolower($1) == "x-kvgate-worker:" {print $2}')
  # SGLang's prefill leg may end a moment after the first token: read until
  # only the decode is busy (bounded; the stream runs for seconds).
  for i in $(seq 1 "$(scaled 20)"); do
    curl -s -m 1 "$G/workers" >"$TMP/wb.json"
    json_get "$TMP/wb.json" "sorted((w['url'], w['in_flight']) for w in j['workers'] if w['in_flight'])" >"$TMP/busy"
    [ "$(cat "$TMP/busy")" = "[('$dec', 1)]" ] && break
    sleep 0.1
  done
  wait "$c"
  echo "decode $dec busy: $(cat "$TMP/busy")"
  [ -n "$dec" ] && [ "$(cat "$TMP/busy")" = "[('$dec', 1)]" ]
}

# =========================================================== vLLM NIXL
GW=$(free_port) P=$(free_port) D=$(free_port)
PS=$(free_port) # the prefill's side channel: rank r on PS + r
start_sim "$P" --role prefill --dp-size 2 --side-channel-port "$PS" --speed 4 || exit 1
P_PID=${PIDS[-1]}
start_sim "$D" --role decode --dp-size 3 --speed 4 || exit 1
D_PID=${PIDS[-1]}
PU=http://127.0.0.1:$P DU=http://127.0.0.1:$D
start_serve "$GW" --vllm-pd-disaggregation --prefill "$PU@0" none --prefill "$PU@1" none \
  --decode "$DU@0" --decode "$DU@1" --decode "$DU@2" \
  --prefill-policy round_robin --decode-policy round_robin \
  --pd-threshold-tokens 64 --disable-health-check || exit 1
G=http://127.0.0.1:$GW
curl -s "$G/workers" >"$TMP/w.json"
check "vllm: five rank workers registered" \
  test "$(json_get "$TMP/w.json" "sorted(w['url'] for w in j['workers']) == sorted(['$DU@0', '$DU@1', '$DU@2', '$PU@0', '$PU@1'])")" = True

# Six requests: prefill ranks 0,1,0,1,0,1 and decode ranks 0,1,2,0,1,2, so
# the pairs differ and a rank meant for one leg cannot pass for the other's.
pulled=0 done_=0
for i in $(seq 1 6); do
  curl -s -N -m 30 -D "$TMP/vh$i" "$G/v1/completions" -d "$(body true 4)" >"$TMP/vs$i"
  grep -q '^data: \[DONE\]' "$TMP/vs$i" && done_=$((done_ + 1))
  kv_was_pulled "$TMP/vs$i" && pulled=$((pulled + 1))
done
check "vllm: six streams end with [DONE] ($done_)" test "$done_" = 6
check "vllm: every decode pulled its prefill's KV ($pulled/6)" test "$pulled" = 6
check "vllm: streams answered by decode rank workers" \
  test "$(cat "$TMP"/vh* | grep -ci "x-kvgate-worker: $DU@[0-2]")" = 6
pr=$(ranks "$P" finished) kp=$(kvgate_ranks "$PU" prefill 2)
check "vllm: prefill legs ran on the ranks kvgate picked (sim $pr, kvgate $kp)" \
  test "$pr" = "$kp" -a "$pr" = "[3, 3]"
dr=$(ranks "$D" finished) kd=$(kvgate_ranks "$DU" decode 3)
check "vllm: decode legs ran on the ranks kvgate picked (sim $dr, kvgate $kd)" \
  test "$dr" = "$kd" -a "$dr" = "[2, 2, 2]"
check "vllm: every rank's held KV was read and freed" test "$(ranks "$P" held)" = "[0, 0]"
check "vllm: in flight 0 on every rank after the streams" workers_idle "$G"

# The protocol underneath: a rank's answer names its own engine and side
# channel (port + rank), and a decode sent to another rank's channel fails.
curl -s -m 10 -H 'X-data-parallel-rank: 1' "$PU/v1/completions" \
  -d "{\"prompt\":\"$PROMPT\",\"max_tokens\":1,\"kv_transfer_params\":{\"do_remote_decode\":true}}" >"$TMP/p1"
check "vllm: rank 1's params name its engine and side channel" \
  test "$(json_get "$TMP/p1" "(j['kv_transfer_params']['remote_engine_id'].endswith('_dp1'), j['kv_transfer_params']['remote_port'])")" = "(True, $((PS + 1)))"
json_get "$TMP/p1" "json.dumps(dict(j['kv_transfer_params'], remote_port=$PS))" >"$TMP/kvp0"
code=$(curl -s -o "$TMP/wrong" -w '%{http_code}' -m 10 "$DU/v1/completions" \
  -d "{\"prompt\":\"$PROMPT\",\"max_tokens\":2,\"kv_transfer_params\":$(cat "$TMP/kvp0")}")
check "vllm: a pull from the wrong rank fails ($code)" test "$code" = 500
check "vllm: the wrong rank named" grep -q 'engine id mismatch' "$TMP/wrong"

# /debug/route: the rank pair, and what kvgate dials (no "@rank").
curl -s -m 5 "$G/debug/route" -d "$(body false 4)" >"$TMP/dr"
check "vllm: /debug/route names the rank pair" \
  test "$(json_get "$TMP/dr" "(j['pd']['prefill'] == '$PU@%d' % j['pd']['prefill_dp_rank'], j['pd']['decode'] == '$DU@%d' % j['pd']['decode_dp_rank'])")" = "(True, True)"
check "vllm: /debug/route's dial targets are host:port" \
  test "$(json_get "$TMP/dr" "(j['pd']['prefill_target'], j['pd']['decode_target'])")" = "('127.0.0.1:$P', '127.0.0.1:$D')"

# In flight per rank: one long stream holds exactly its decode rank.
check "vllm: in flight on the picked decode rank only" busy_pair
check "vllm: in flight 0 after the long stream" workers_idle "$G"

# A rank's held KV gone before its decode reads it (a zero hold: freed
# on the sim's next loop turn, before any decode's pull can arrive): the
# decode fails as vLLM does, is retried once on another decode rank (which
# cannot pull either), and the client gets a clean error.
kill -TERM "$P_PID"; wait "$P_PID" 2>/dev/null
start_sim "$P" --role prefill --dp-size 2 --side-channel-port "$PS" --speed 4 \
  --kv-hold-timeout-secs 0 || exit 1
code=$(curl -s -o "$TMP/gone" -w '%{http_code}' -m 20 "$G/v1/completions" -d "$(body false 4)")
check "vllm: held KV gone: a 5xx ($code)" test "${code:0:1}" = 5
check "vllm: held KV gone: a JSON error" test "$(json_get "$TMP/gone" "'error' in j")" = True
curl -s -N -m 20 "$G/v1/completions" -d "$(body true 4)" >"$TMP/gones"
check "vllm: held KV gone, stream: an error" grep -q '"error"' "$TMP/gones"
check "vllm: in flight 0 on every rank after the lost KV" workers_idle "$G"
check "vllm: no rank holds anything after the lost KV" test "$(ranks "$P" held)" = "[0, 0]"
check "vllm: the decode engine dropped them" test "$(ranks "$D" running)" = "[0, 0, 0]"
check "vllm: no sim saw a destination with @rank" no_at_in_logs "$P"
stop_all

# =========================================================== SGLang bootstrap
GW=$(free_port) P=$(free_port) PB=$(free_port) D=$(free_port)
start_sim "$P" --flavor sglang --role prefill --dp-size 2 --bootstrap-port "$PB" --speed 4 || exit 1
P_PID=${PIDS[-1]}
start_sim "$D" --flavor sglang --role decode --dp-size 3 --speed 4 --bootstrap-timeout-secs 5 || exit 1
D_PID=${PIDS[-1]}
PU=http://127.0.0.1:$P DU=http://127.0.0.1:$D
cat >"$TMP/sg.yaml" <<YAML
workers:
  - {url: "$PU@0", role: prefill, bootstrap_port: $PB}
  - {url: "$PU@1", role: prefill, bootstrap_port: $PB}
  - {url: "$DU@0", role: decode}
  - {url: "$DU@1", role: decode}
  - {url: "$DU@2", role: decode}
YAML
start_serve "$GW" --pd-disaggregation --config "$TMP/sg.yaml" \
  --prefill-policy round_robin --decode-policy round_robin --disable-health-check || exit 1
G=http://127.0.0.1:$GW
curl -s "$G/workers" >"$TMP/w.json"
check "sglang: five rank workers from YAML" \
  test "$(json_get "$TMP/w.json" "sorted((w['url'], w['role']) for w in j['workers']) == sorted([('$DU@0', 'decode'), ('$DU@1', 'decode'), ('$DU@2', 'decode'), ('$PU@0', 'prefill'), ('$PU@1', 'prefill')])")" = True

pulled=0 done_=0
for i in $(seq 1 6); do
  curl -s -N -m 30 -D "$TMP/sh$i" "$G/v1/completions" -d "$(body true 4)" >"$TMP/ss$i"
  grep -q '^data: \[DONE\]' "$TMP/ss$i" && done_=$((done_ + 1))
  kv_was_pulled "$TMP/ss$i" && pulled=$((pulled + 1))
done
check "sglang: six streams end with [DONE] ($done_)" test "$done_" = 6
check "sglang: every decode got its prefill's KV over the bootstrap ($pulled/6)" test "$pulled" = 6
pr=$(ranks "$P" finished) kp=$(kvgate_ranks "$PU" prefill 2)
check "sglang: prefill legs ran on the ranks kvgate picked (sim $pr, kvgate $kp)" \
  test "$pr" = "$kp" -a "$pr" = "[3, 3]"
dr=$(ranks "$D" finished) kd=$(kvgate_ranks "$DU" decode 3)
check "sglang: decode legs ran on their own ranks, not the prefill's (sim $dr, kvgate $kd)" \
  test "$dr" = "$kd" -a "$dr" = "[2, 2, 2]"
check "sglang: no sim refused a bootstrap_host (no @rank)" no_at_in_logs "$P" "$D"
check "sglang: in flight 0 on every rank after the streams" workers_idle "$G"
curl -s -m 5 "$G/debug/route" -d "$(body false 4)" >"$TMP/dr"
check "sglang: /debug/route names the rank pair" \
  test "$(json_get "$TMP/dr" "(j['pd']['prefill'] == '$PU@%d' % j['pd']['prefill_dp_rank'], j['pd']['decode'] == '$DU@%d' % j['pd']['decode_dp_rank'], j['pd']['prefill_target'])")" = "(True, True, '127.0.0.1:$P')"

# The engine side: a bootstrap_host carrying "@rank" is refused.
code=$(curl -s -o "$TMP/badhost" -w '%{http_code}' -m 5 "$DU/v1/completions" \
  -d "{\"prompt\":\"hi\",\"max_tokens\":1,\"bootstrap_host\":\"127.0.0.1:$P@1\",\"bootstrap_port\":$PB,\"bootstrap_room\":7}")
check "sglang: the sim refuses a bootstrap_host with @rank ($code)" test "$code" = 400

# In flight per rank while both legs run: the stream's decode rank stays
# busy after its prefill rank is done.
check "sglang: in flight on the picked decode rank only" busy_pair
check "sglang: in flight 0 after the long stream" workers_idle "$G"

# A rank whose KV never comes (its prefill hangs): the decode's bootstrap
# bound ends it, the hung prefill is cancelled, in-flight back to 0.
kill -TERM "$P_PID"; wait "$P_PID" 2>/dev/null
start_sim "$P" --flavor sglang --role prefill --dp-size 2 --bootstrap-port "$PB" --hang-rate 1 || exit 1
code=$(curl -s -o "$TMP/sgone" -w '%{http_code}' -m 20 "$G/v1/completions" -d "$(body false 3)")
check "sglang: KV never held: the decode's 5xx ($code)" test "${code:0:1}" = 5
check "sglang: KV never held: a JSON error" test "$(json_get "$TMP/sgone" "'error' in j")" = True
check "sglang: in flight 0 on every rank after the lost KV" workers_idle "$G"
check "sglang: the prefill ranks dropped the hung request" test "$(ranks "$P" running)" = "[0, 0]"
check "sglang: the decode ranks run nothing" test "$(ranks "$D" running)" = "[0, 0, 0]"
finish
