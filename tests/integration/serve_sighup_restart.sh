# SIGHUP applies the worker list and says which other settings it cannot
# apply: the --config file's port, threads and policy changed, one warning
# names them (and not the workers, which are applied); a SIGHUP with nothing
# else changed warns about nothing; a first peers: list is refused by name
# in a process started without peers.
. "$(dirname "$0")/lib.sh"
S1=$(free_port); S2=$(free_port)
start_sim "$S1" --model m || exit 1
start_sim "$S2" --model m || exit 1
GW=$(free_port)
conf() { # conf POLICY THREADS PORT WORKER...
  printf 'policy: %s\nthreads: %s\nport: %s\nhealth_check_interval_secs: 1\nworkers:\n' "$1" "$2" "$3" >"$TMP/gw.yaml"
  shift 3
  for w in "$@"; do printf '  - url: %s\n' "$w" >>"$TMP/gw.yaml"; done
}
conf round_robin 1 "$GW" "http://127.0.0.1:$S1"
start_serve "$GW" --config "$TMP/gw.yaml" || exit 1
LOG=$TMP/serve-$GW.log
nworkers() { curl -s "http://127.0.0.1:$GW/workers" | /usr/bin/python3 -c 'import json,sys; print(len(json.load(sys.stdin)["workers"]))'; }

conf random 2 $((GW + 1)) "http://127.0.0.1:$S1" "http://127.0.0.1:$S2"
kill -HUP "$SERVE_PID"
for _ in $(seq 1 "$(scaled 30)"); do [ "$(nworkers)" = 2 ] && break; sleep 0.1; done
check "SIGHUP: the worker list is applied" [ "$(nworkers)" = 2 ]
check "SIGHUP: settings that need a restart are named" grep -q "SIGHUP: port, threads, policy changed in .* need a restart" "$LOG"
check "SIGHUP: the workers are not among them" bash -c "! grep 'need a restart' '$LOG' | grep -q worker-urls"
check "still running with the old policy and port" grep -q "still running with the old values (policy round_robin, port $GW)" "$LOG"
check "still answering on the old port" wait_http "http://127.0.0.1:$GW/health" 5

kill -HUP "$SERVE_PID"; sleep 0.5
check "a SIGHUP that changes nothing more warns about nothing" [ "$(grep -c 'need a restart' "$LOG")" = 1 ]

# A first peers: list: the exchange starts with the process, so it is
# refused by name.
echo "peers: [http://127.0.0.1:$(free_port)]" >>"$TMP/gw.yaml"
kill -HUP "$SERVE_PID"
check "SIGHUP: a first peer list is refused: the exchange starts with the process" \
  wait_grep "SIGHUP: peers in $TMP/gw.yaml not applied, keeping the current ones: .*a restart applies them" "$LOG"
finish
