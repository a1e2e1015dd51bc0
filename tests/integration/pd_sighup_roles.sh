#!/usr/bin/env bash
# Workers added by a SIGHUP reload of --config get their role, labels and
# bootstrap port from the file, as those listed at startup: a decode added in
# the prefill's rack becomes a decode candidate (before the fix it joined as a
# regular worker and no decode pick could take it) and is preferred for its
# locality; a worker that stayed takes its changed labels; in-flight 0 after.
# A file's prefill:/decode: lists survive a reload (folded in as at
# startup); bad bootstrap ports are refused.
. "$KVG_ROOT/tests/integration/lib.sh"

GW=$(free_port) P=$(free_port) PS=$(free_port) D1=$(free_port) D2=$(free_port)
PROMPT=$(printf 'the quick brown fox jumps over the lazy dog %.0s' $(seq 1 12)) # ~530 tokens
start_sim "$P" --role prefill --side-channel-port "$PS" --labels rack=r1,zone=z1
start_sim "$D1" --role decode --labels rack=r2,zone=z1
start_sim "$D2" --role decode --labels rack=r1,zone=z1
conf() { # conf D1_LABELS [with D2]
  cat >"$TMP/gw.yaml" <<YAML
vllm_pd_disaggregation: true
pd_threshold_tokens: 64
health_check_interval_secs: 1
workers:
  - {url: "http://127.0.0.1:$P", role: prefill, labels: "rack=r1,zone=z1", bootstrap_port: 8998}
  - {url: "http://127.0.0.1:$D1", role: decode, labels: "$1"}
YAML
  [ -n "${2:-}" ] && printf '  - {url: "http://127.0.0.1:%s", role: decode, labels: "rack=r1,zone=z1"}\n' "$D2" >>"$TMP/gw.yaml"
  return 0
}
conf rack=r2,zone=z1
start_serve "$GW" --config "$TMP/gw.yaml"
G="http://127.0.0.1:$GW"
LOG=$TMP/serve-$GW.log
worker() { # URL FIELD: the field of that worker in /workers ("" absent)
  curl -s -m 2 "$G/workers" >"$TMP/w.json" &&
    json_get "$TMP/w.json" "next((str(w.get('$2','')) for w in j['workers'] if w['url']=='$1'), 'absent')"
}
body='{"model":"sim-model","prompt":"'$PROMPT'","max_tokens":4,"ignore_eos":true}'
check "startup: the prefill's role" test "$(worker "http://127.0.0.1:$P" role)" = prefill
check "startup: its bootstrap port" test "$(worker "http://127.0.0.1:$P" bootstrap_port)" = 8998
check "startup: its labels" test "$(worker "http://127.0.0.1:$P" labels)" = rack=r1,zone=z1

conf rack=r3,zone=z2 with
kill -HUP "$SERVE_PID"
joined() {
  local i
  for i in $(seq 1 "$(scaled 50)"); do
    [ "$(worker "http://127.0.0.1:$D2" healthy)" = True ] && return 0
    sleep 0.1
  done
  return 1
}
check "SIGHUP: the new decode joined, healthy" joined
check "SIGHUP: it has its role" test "$(worker "http://127.0.0.1:$D2" role)" = decode
check "SIGHUP: and its labels" test "$(worker "http://127.0.0.1:$D2" labels)" = rack=r1,zone=z1
check "SIGHUP: a worker that stayed takes its new labels" \
  test "$(worker "http://127.0.0.1:$D1" labels)" = rack=r3,zone=z2
check "SIGHUP: the prefill keeps its role and port" \
  test "$(worker "http://127.0.0.1:$P" role)/$(worker "http://127.0.0.1:$P" bootstrap_port)" = prefill/8998
check "SIGHUP: roles and labels are not named as needing a restart" \
  bash -c "! grep -q 'need a restart' '$LOG'"
code=$(curl -s -D "$TMP/h1" -o "$TMP/b1" -w '%{http_code}' -m 20 "$G/v1/completions" -d "$body")
check "a request after the reload is served" test "$code" = 200
check "by the new decode, in the prefill's rack" grep -qi "x-kvgate-worker: http://127.0.0.1:$D2" "$TMP/h1"
check "with the prefill's KV pulled" kv_was_pulled "$TMP/b1"
check "in flight 0 on every worker" workers_idle "$G"

# A file listing prefill: and decode: (sglang's and vllm-router's shape) with
# the PD mode given as a flag: a reload folds them into the workers as
# startup does (they are not dropped) and the added decode is a decode.
GW2=$(free_port)
conf2() { # DECODE_URL...
  { printf 'pd_threshold_tokens: 64\nprefill: ["http://127.0.0.1:%s", "none"]\ndecode: [' "$P"
    local sep="" u
    for u in "$@"; do printf '%s"%s"' "$sep" "$u"; sep=", "; done
    printf ']\n'; } >"$TMP/gw2.yaml"
}
conf2 "http://127.0.0.1:$D1"
start_serve "$GW2" --config "$TMP/gw2.yaml" --vllm-pd-disaggregation
SERVE2=$SERVE_PID
G="http://127.0.0.1:$GW2"
conf2 "http://127.0.0.1:$D1" "http://127.0.0.1:$D2"
kill -HUP "$SERVE2"
three() {
  local i
  for i in $(seq 1 "$(scaled 50)"); do
    curl -s -m 1 "$G/workers" >"$TMP/w2.json" &&
      [ "$(json_get "$TMP/w2.json" "len(j['workers'])")" = 3 ] && return 0
    sleep 0.1
  done
  return 1
}
check "SIGHUP with prefill:/decode: keys: three workers" three
check "the prefill stays a prefill" test "$(worker "http://127.0.0.1:$P" role)" = prefill
check "the added decode is a decode" test "$(worker "http://127.0.0.1:$D2" role)" = decode
check "no reload refused" bash -c "! grep -q 'reload refused' '$TMP/serve-$GW2.log'"

# Bad bootstrap ports are refused at startup, with what is wrong.
bad_cfg() { # EXPECTED_MESSAGE ARGS...
  local want=$1; shift
  ! "$KVG_BIN" serve --port "$(free_port)" "$@" >/dev/null 2>"$TMP/bad.err" &&
    grep -q "$want" "$TMP/bad.err"
}
check "a bootstrap port that is none is refused" bad_cfg "worker bootstrap port 'abc'" \
  --pd-disaggregation --worker-urls "http://127.0.0.1:$P" "http://127.0.0.1:$D1" \
  --worker-roles prefill decode --worker-bootstrap-ports abc none
check "one bootstrap port per worker" bad_cfg "one entry per --worker-urls entry" \
  --pd-disaggregation --worker-urls "http://127.0.0.1:$P" "http://127.0.0.1:$D1" \
  --worker-roles prefill decode --worker-bootstrap-ports 8998
finish
