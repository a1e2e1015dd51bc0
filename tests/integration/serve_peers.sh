#!/usr/bin/env bash
# kvgate replicas exchanging routing history (--peers, docs/replicas.md),
# against simulated engines that publish no KV events: a prompt routed by
# replica A is then a hit on the same worker for replica B, which never
# routed it (POST /debug/route, x-kvgate-worker); a hostile client (no or
# a wrong token, garbage, an oversized or mistyped body) gets 401/400/413/415
# and changes nothing; a peer killed goes down in /workers and the
# metrics and comes back up when restarted while the others keep serving;
# a partitioned peer (accepts, never answers) times out and is dropped for.
# A's list is its --config file's peers:, which a SIGHUP re-reads: a peer
# that stays keeps its state and counts, removed ones leave /workers and
# /metrics, a new one is listed, and a bad list is refused with its
# file:line and the old one kept. Each batch carries the sender's
# in-flight count per worker: a stream in flight on A shows in B's
# /workers as the worker's peer_in_flight until it ends, and a killed
# peer stops counting (peers_heard). cache_aware replicas exchange the
# prompts' text, their history; manual replicas a routing key's worker.
. "$(dirname "$0")/lib.sh"

S1=$(free_port); S2=$(free_port); S3=$(free_port)
# Sleep mode (as vLLM's dev endpoints) lets a request wait in flight at will.
export VLLM_SERVER_DEV_MODE=1
for s in $S1 $S2 $S3; do start_sim "$s" --model m --speed 50 --enable-sleep-mode || exit 1; done
PA=$(free_port); PB=$(free_port); PC=$(free_port); PH=$(free_port)
A=http://127.0.0.1:$PA B=http://127.0.0.1:$PB C=http://127.0.0.1:$PC H=http://127.0.0.1:$PH
TOKEN=peer-secret-$$

# The partitioned peer: a listener that accepts and never answers.
/usr/bin/python3 -c '
import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(64)
held = []
while len(held) < 1000: held.append(s.accept()[0])
time.sleep(3600)' "$PH" >"$TMP/blackhole.log" 2>&1 &
PIDS+=($!)

# Every replica is given the whole list, itself included (one list for all,
# as a Kubernetes headless Service gives): its own batches it ignores.
replica() { # PORT [FLAGS...]: the peers as given, else the whole list
  local port=$1
  shift
  [ $# -gt 0 ] || set -- --peers "$A,$B,$C"
  start_serve "$port" --threads 1 --block-size 16 \
    --worker-urls "http://127.0.0.1:$S1" "http://127.0.0.1:$S2" "http://127.0.0.1:$S3" \
    --health-check-interval-secs 1 --peer-token "$TOKEN" \
    --exchange-ms 100 --peer-batch-bytes 65536 "$@"
}
printf 'peers:\n  - %s\n  - %s, %s\n  - %s\n' "$A" "$B" "$C" "$H" >"$TMP/a.yaml"
replica "$PA" --config "$TMP/a.yaml" || exit 1
APID=$SERVE_PID
replica "$PB" || exit 1
replica "$PC" || exit 1
for g in $A $B $C; do wait_http "$g/readiness" 10 || exit 1; done

body() { # body N: chat request N, a prompt of several blocks
  printf '{"model":"m","messages":[{"role":"user","content":"peer prompt %s: %s"}],"max_tokens":2}' \
    "$1" "$(printf 'words %.0s' $(seq 1 40))"
}
worker_of() { # worker_of GW N: the worker that served request N
  curl -s -D - -o /dev/null -m 5 "$1/v1/chat/completions" -d "$(body "$2")" |
    tr -d '\r' | awk -F': ' 'tolower($1)=="x-kvgate-worker"{print $2}'
}
route() { # route GW N: /debug/route's "chosen|matched blocks of it|note"
  curl -s -m 5 "$1/debug/route" -d "$(body "$2")" >"$TMP/route.json"
  json_get "$TMP/route.json" \
    '"%s|%s|%s" % (j["chosen"], [w["matched_blocks"] for w in j["workers"] if w["url"] == j["chosen"]][0], j["note"])'
}
peer_field() { # peer_field GW PEER_URL FIELD: that peer's FIELD in GW's /workers
  curl -s -m 2 "$1/workers" >"$TMP/pw.json" &&
    json_get "$TMP/pw.json" "[p['$3'] for p in j['peers'] if p['url'] == '$2'][0]"
}
wait_peer() { # wait_peer GW PEER_URL FIELD PYTHON_TEST (on the value v), bounded
  local i v
  for i in $(seq 1 "$(scaled 100)"); do
    v=$(peer_field "$1" "$2" "$3" 2>/dev/null)
    /usr/bin/python3 -c "import sys; v=sys.argv[1]; sys.exit(0 if ($4) else 1)" "$v" && return 0
    sleep 0.1
  done
  echo "peer $2 on $1: $3 = $v" >&2
  return 1
}

# B has never seen these prompts: no match on any worker.
for n in 1 2 3; do
  case "$(route "$B" "$n")" in
    *"|0|"*) ok "before A routes prompt $n, B matches none of it" ;;
    *) bad "before A routes prompt $n, B matches none of it" "$(cat "$TMP/route.json")" ;;
  esac
done
declare -A WA
for n in 1 2 3; do WA[$n]=$(worker_of "$A" "$n"); done
check "A served the prompts" [ -n "${WA[1]}" -a -n "${WA[2]}" -a -n "${WA[3]}" ]
check "B received A's records" wait_peer "$B" "$A" received "int(v) >= 3"
for n in 1 2 3; do
  r=$(route "$B" "$n")
  IFS='|' read -r chosen matched note <<<"$r"
  if [ "$chosen" = "${WA[$n]}" ] && [ "${matched%.*}" -gt 0 ] && [ "${note#hit}" != "$note" ]; then
    ok "B routes prompt $n to A's worker as a hit"
  else
    bad "B routes prompt $n to A's worker as a hit" "$r, A: ${WA[$n]}"
  fi
  check "B's request $n goes to A's worker" [ "$(worker_of "$B" "$n")" = "${WA[$n]}" ]
done
check "A sees B and C up" wait_peer "$A" "$B" state "v == 'up'"

# In-flight counts: a request waiting on A is counted on B's view of its
# worker (the engines asleep: their schedulers paused, it waits there).
wait_json() { # wait_json GW PYTHON_TEST (on j, /workers), bounded
  local i
  for i in $(seq 1 "$(scaled 100)"); do
    curl -s -m 2 "$1/workers" >"$TMP/wj.json" 2>/dev/null &&
      json_get "$TMP/wj.json" "1 if ($2) else exit(1)" >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  echo "$1/workers: not ($2): $(cat "$TMP/wj.json")" >&2
  return 1
}
check "B hears A and C (peers_heard 2)" wait_json "$B" "j['peers_exchange']['peers_heard'] == 2"
check "B's view of A's in-flight counts starts at 0" \
  wait_json "$B" "all(w['peer_in_flight'] == 0 for w in j['workers'])"
for s in $S1 $S2 $S3; do curl -s -m 5 -o /dev/null -X POST "http://127.0.0.1:$s/sleep?level=1"; done
curl -s -m 60 -o "$TMP/long.json" -w '%{http_code}' "$A/v1/chat/completions" \
  -d '{"model":"m","max_tokens":4,"messages":[{"role":"user","content":"a waiting one"}]}' \
  >"$TMP/long.code" &
LONG=$!
PIDS+=($LONG)
check "a request in flight on A counts 1 on B's view of its worker" \
  wait_json "$B" "sum(w['peer_in_flight'] for w in j['workers']) == 1 and sum(w['in_flight'] for w in j['workers']) == 0"
for s in $S1 $S2 $S3; do curl -s -m 10 -o /dev/null -X POST "http://127.0.0.1:$s/wake_up"; done
wait "$LONG" 2>/dev/null
check "the waiting request was answered once the engines woke" [ "$(cat "$TMP/long.code")" = 200 ]
check "its end on A is heard on B" \
  wait_json "$B" "all(w['peer_in_flight'] == 0 for w in j['workers'])"
check "A sees C up" [ "$(peer_field "$A" "$C" state)" = up ]
check "A's own entry answers (its batches to itself are ignored)" \
  [ "$(peer_field "$A" "$A" state)" = up ]
curl -s "$A/metrics" >"$TMP/m.txt"
check "kvgate_peer_up{peer=B} 1" grep -q "^kvgate_peer_up{peer=\"$B\"} 1" "$TMP/m.txt"
check "kvgate_peer_records_total sent to B counted" \
  grep -qE "^kvgate_peer_records_total\{peer=\"$B\",dir=\"sent\"\} [1-9]" "$TMP/m.txt"

# A hostile client: nothing it sends is applied.
code() { curl -s -o "$TMP/hostile.json" -w '%{http_code}' -m 5 "$@"; }
CT='content-type: application/x-kvgate-exchange'
check "no token: 401" [ "$(code "$B/peers/batch" -H "$CT" --data-binary garbage)" = 401 ]
check "a wrong token: 401" \
  [ "$(code "$B/peers/batch" -H "$CT" -H "authorization: Bearer nope" --data-binary garbage)" = 401 ]
check "garbage: 400" \
  [ "$(code "$B/peers/batch" -H "$CT" -H "authorization: Bearer $TOKEN" --data-binary garbage)" = 400 ]
check "garbage is named" grep -q 'not an exchange batch' "$TMP/hostile.json"
head -c 70000 /dev/zero >"$TMP/big.bin"
check "over --peer-batch-bytes: 413" \
  [ "$(code "$B/peers/batch" -H "$CT" -H "authorization: Bearer $TOKEN" --data-binary @"$TMP/big.bin")" = 413 ]
check "another content type: 415" \
  [ "$(code "$B/peers/batch" -H "authorization: Bearer $TOKEN" --data-binary garbage)" = 415 ]
check "after them B still routes prompt 1 to A's worker" [ "$(worker_of "$B" 1)" = "${WA[1]}" ]
curl -s -m 2 "$B/workers" >"$TMP/bw.json"
check "B counts the two bodies it read and refused" \
  [ "$(json_get "$TMP/bw.json" "j['peers_exchange']['refused_batches']")" = 2 ]

# The partitioned peer: A's calls to it time out, it is down, its batches dropped.
check "the partitioned peer goes down on A" wait_peer "$A" "$H" state "v == 'down'"
check "A drops what the partitioned peer cannot take" wait_peer "$A" "$H" dropped "int(v) > 0"
check "A still answers while a peer hangs" [ -n "$(worker_of "$A" 4)" ]

# C killed: down on A; A and B keep serving; C restarted: up again.
kill -TERM "$SERVE_PID"
wait "$SERVE_PID" 2>/dev/null
worker_of "$A" 5 >/dev/null # a pick to send
check "killed C goes down on A" wait_peer "$A" "$C" state "v == 'down'"
check "killed C stops counting on B after the ttl (peers_heard 1)" \
  wait_json "$B" "j['peers_exchange']['peers_heard'] == 1"
check "A serves with C gone" [ -n "$(worker_of "$A" 6)" ]
check "B serves with C gone" [ -n "$(worker_of "$B" 6)" ]
replica "$PC" || exit 1
check "restarted C comes back up on A" wait_peer "$A" "$C" state "v == 'up'"
worker_of "$A" 7 >/dev/null
check "restarted C receives A's new records" wait_peer "$C" "$A" received "int(v) >= 1"
check "restarted C routes A's new prompt where A did" \
  [ "$(worker_of "$C" 7)" = "$(route "$A" 7 | cut -d'|' -f1)" ]

# SIGHUP with A's file naming B and a new peer D (nothing listens there):
# A itself, C and the partitioned peer go, B stays up with its count.
D=http://127.0.0.1:$(free_port)
sent_b=$(peer_field "$A" "$B" sent)
printf 'peers: [%s, %s/]\n' "$B" "$D" >"$TMP/a.yaml"
BD=$(printf '%s\n' "$B" "$D" | sort | paste -sd,)
kill -HUP "$APID"
check "SIGHUP: A's peers reloaded (2: 1 new, 3 gone)" \
  wait_grep "SIGHUP: peers reloaded (2: 1 new, 3 gone)" "$TMP/serve-$PA.log"
curl -s -m 2 "$A/workers" >"$TMP/aw.json"
check "SIGHUP: A lists B and D only" \
  [ "$(json_get "$TMP/aw.json" "','.join(sorted(p['url'] for p in j['peers']))")" = "$BD" ]
check "SIGHUP: B kept its state (up) and its count (sent $sent_b or more)" \
  [ "$(json_get "$TMP/aw.json" "[(p['state'], p['sent'] >= $sent_b) for p in j['peers'] if p['url'] == '$B'][0] == ('up', True)")" = True ]
check "SIGHUP: D is new (unknown, or down once tried), nothing sent to it" \
  [ "$(json_get "$TMP/aw.json" "[p['state'] in ('unknown', 'down') and p['sent'] == 0 for p in j['peers'] if p['url'] == '$D'][0]")" = True ]
curl -s "$A/metrics" >"$TMP/m2.txt"
check "SIGHUP: C's and the partitioned peer's series are gone from /metrics" \
  bash -c "! grep -qE 'peer=\"($C|$H)\"' '$TMP/m2.txt'"
check "SIGHUP: B's series stay" grep -q "^kvgate_peer_up{peer=\"$B\"} 1" "$TMP/m2.txt"
worker_of "$A" 8 >/dev/null
check "after the reload B still receives A's records" wait_peer "$B" "$A" received "int(v) >= 4"
# A bad list: refused with its file:line, the running list kept.
printf 'peers:\n  - %s\n  - %s\n' "$B" "https://127.0.0.1:8443" >"$TMP/a.yaml"
kill -HUP "$APID"
check "SIGHUP: a bad peer is refused with its file:line" \
  wait_grep "reload failed, keeping the current workers and peers: $TMP/a.yaml:3: peers\[1\]: 'https://127.0.0.1:8443' is not" "$TMP/serve-$PA.log"
curl -s -m 2 "$A/workers" >"$TMP/aw.json"
check "SIGHUP: after the refused list A still lists B and D" \
  [ "$(json_get "$TMP/aw.json" "','.join(sorted(p['url'] for p in j['peers']))")" = "$BD" ]

# cache_aware keeps the prompts' text, untokenized: its records carry the
# text (a version 2 batch), and a peer routes the prompt where E did.
PE=$(free_port); PF=$(free_port)
E=http://127.0.0.1:$PE F=http://127.0.0.1:$PF
replica "$PE" --policy cache_aware --peers "$E,$F" || exit 1
replica "$PF" --policy cache_aware --peers "$E,$F" || exit 1
for g in $E $F; do wait_http "$g/readiness" 10 || exit 1; done
# A batch sent before F answers is dropped (F down, backing off).
check "cache_aware: E sees F up" wait_peer "$E" "$F" state "v == 'up'"
check "cache_aware: before E routes prompt 9, F misses it" \
  [ "$(route "$F" 9 | cut -d'|' -f3)" = "cache miss: least loaded" ]
WE=$(worker_of "$E" 9)
check "cache_aware: F received E's text record" wait_peer "$F" "$E" received "int(v) >= 1"
r=$(route "$F" 9)
check "cache_aware: F routes prompt 9 to E's worker as a hit ($r, E: $WE)" \
  [ "$(echo "$r" | cut -d'|' -f1,3)" = "$WE|cache hit" ]

# manual in min_load mode: a routing key G assigned (its own least loaded
# worker), I, which never saw the key, pins where G did once G's record
# (the key, no blocks: manual does not tokenize) arrives.
PG=$(free_port); PI=$(free_port)
G=http://127.0.0.1:$PG I=http://127.0.0.1:$PI
replica "$PG" --policy manual --assignment-mode min_load --peers "$G,$I" || exit 1
replica "$PI" --policy manual --assignment-mode min_load --peers "$G,$I" || exit 1
for g in $G $I; do wait_http "$g/readiness" 10 || exit 1; done
keyed_route() { # keyed_route GW KEY: /debug/route's "chosen|note" for KEY
  curl -s -m 5 "$1/debug/route" -H "x-session-id: $2" -d "$(body 10)" >"$TMP/kroute.json"
  json_get "$TMP/kroute.json" '"%s|%s" % (j["chosen"], j["note"])'
}
check "manual: G sees I up" wait_peer "$G" "$I" state "v == 'up'"
check "manual: before G routes key k1, I has not pinned it" \
  [ "$(keyed_route "$I" k1 | cut -d'|' -f2)" != "sticky key" ]
WG=$(curl -s -D - -o /dev/null -m 5 "$G/v1/chat/completions" -H "x-session-id: k1" \
  -d "$(body 10)" | tr -d '\r' | awk -F': ' 'tolower($1)=="x-kvgate-worker"{print $2}')
check "manual: I received G's key record" wait_peer "$I" "$G" received "int(v) >= 1"
r=$(keyed_route "$I" k1)
check "manual: I routes key k1 to G's worker, pinned ($r, G: $WG)" [ "$r" = "$WG|sticky key" ]
finish
