# The serving view across gateway replicas: three kvgate serve in front of
# the same two engines; `kvgate observe` reads each directly. With one
# replica killed and one hung (SIGSTOP), the live one's fresh view still
# confirms the workers; with only the dead and the hung left, every worker
# is Unknown, never "serving"; an engine that stops answering turns
# NotServing in the live replica's view. The view's generation moves when a
# worker's state changes.
. "$(dirname "$0")/lib.sh"
S1=$(free_port); S2=$(free_port); G1=$(free_port); G2=$(free_port); G3=$(free_port)
start_sim "$S1" --model m --speed 100 || exit 1
start_sim "$S2" --model m --speed 100 || exit 1
W1=http://127.0.0.1:$S1; W2=http://127.0.0.1:$S2
for g in "$G1" "$G2" "$G3"; do
  start_serve "$g" --health-check-interval-secs 1 --health-failure-threshold 1 \
    --worker-urls "$W1" "$W2" || exit 1
  eval "P_$g=$SERVE_PID"
done
for g in "$G1" "$G2" "$G3"; do wait_http "http://127.0.0.1:$g/readiness" 10 || exit 1; done
curl -s "http://127.0.0.1:$G1/serving" >"$TMP/view"
check "/serving: a generation and when it was taken" python3 -c 'import json,sys; v=json.load(open(sys.argv[1])); assert v["generation"]>=1 and v["taken_at"]>0 and len(v["workers"])==2' "$TMP/view"
check "/serving: each worker's role, state and routing mode" python3 -c 'import json,sys; w=json.load(open(sys.argv[1]))["workers"][0]; assert w["role"]=="regular" and w["state"]=="serving" and w["routing_mode"] in ("exact","approximate","degraded","load_only")' "$TMP/view"
gen0=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["generation"])' "$TMP/view")
R="http://127.0.0.1:$G1 http://127.0.0.1:$G2 http://127.0.0.1:$G3"
"$KVG_BIN" observe --routers $R --json >"$TMP/all.json"
st() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print({w["url"]:w["state"] for w in d["workers"]}.get(sys.argv[2],"absent"))' "$1" "$2"; }
check "all replicas up: worker 1 Confirmed" [ "$(st "$TMP/all.json" "$W1")" = Confirmed ]
check "all replicas up: worker 2 Confirmed" [ "$(st "$TMP/all.json" "$W2")" = Confirmed ]

eval "kill -KILL \$P_$G2"; eval "kill -STOP \$P_$G3"
t0=$(date +%s%N)
"$KVG_BIN" observe --routers $R --json >"$TMP/some.json"
t1=$(date +%s%N)
check "one killed, one hung: the live view still confirms" [ "$(st "$TMP/some.json" "$W1")" = Confirmed ]
check "the hung replica is no view" python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); r=[x for x in d["routers"] if x["url"].endswith(sys.argv[2])][0]; assert not r["fresh"] and "2 s" in r["error"]' "$TMP/some.json" ":$G3"
check "the collection took the 2 s fetch bound, not longer than the 14 s budget" [ $(( (t1 - t0) / 1000000 )) -lt 14000 ]

eval "kill -KILL \$P_$G1"
"$KVG_BIN" observe --routers "http://127.0.0.1:$G2" "http://127.0.0.1:$G3" --workers "$W1" "$W2" --json >"$TMP/none.json"
check "no live replica: worker 1 Unknown, not serving" [ "$(st "$TMP/none.json" "$W1")" = Unknown ]
check "no live replica: worker 2 Unknown" [ "$(st "$TMP/none.json" "$W2")" = Unknown ]
"$KVG_BIN" observe --routers "http://127.0.0.1:$G2" --workers "$W1" >"$TMP/none.txt"
check "text output names the state" grep -q "Unknown" "$TMP/none.txt"
"$KVG_BIN" observe --routers "http://127.0.0.1:$G2" >"$TMP/none2.txt"; rc=$?
check "no router could be read: exit 1 ($rc)" [ "$rc" = 1 ]
check "no router could be read: the output is printed all the same" grep -q "no view" "$TMP/none2.txt"
eval "kill -CONT \$P_$G3"

# NotServing: engine 2 stops answering; replica 3's health check notices.
G4=$(free_port)
start_serve "$G4" --health-check-interval-secs 1 --health-failure-threshold 1 \
  --health-check-timeout-secs 1 --worker-urls "$W1" "$W2" || exit 1
wait_http "http://127.0.0.1:$G4/readiness" 10 || exit 1
SIMPID=$(pgrep -f "sim --port $S2 " | head -1)
kill -STOP "$SIMPID"
for _ in $(seq 1 "$(scaled 80)"); do
  curl -s "http://127.0.0.1:$G4/serving" | grep -q '"state":"unhealthy"' && break; sleep 0.1
done
"$KVG_BIN" observe --routers "http://127.0.0.1:$G4" --prometheus >"$TMP/prom"
check "a stopped engine: NotServing" grep -q "kvgate_observe_worker{worker=\"$W2\",state=\"NotServing\"} 1" "$TMP/prom"
check "the other: Confirmed" grep -q "kvgate_observe_worker{worker=\"$W1\",state=\"Confirmed\"} 1" "$TMP/prom"
"$KVG_BIN" observe --routers "http://127.0.0.1:$G2" "http://127.0.0.1:$G4" >/dev/null; rc=$?
check "one router of two read: exit 0 ($rc)" [ "$rc" = 0 ]
gen1=$(curl -s "http://127.0.0.1:$G4/serving" | python3 -c 'import json,sys; print(json.load(sys.stdin)["generation"])')
check "the generation moved with the state" [ "$gen1" -gt 1 ]
kill -CONT "$SIMPID"
check "promtool accepts observe's output" bash -c "promtool check metrics <'$TMP/prom' >/dev/null 2>&1 || [ \$? = 3 ]"
finish
