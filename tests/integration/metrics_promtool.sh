#!/usr/bin/env bash
# kvgate's metrics text against promtool, Prometheus' own parser and linter
# (`promtool check metrics` reads stdin: rc 0 clean, 3 lint problems, 1 parse
# error).
#  1. What the registry renders (every kind, awkward label values, updates
#     from several threads, a removed worker) must pass clean: rc 0.
#  2. Negative controls: the same text, broken, must fail in promtool and in
#     kvgate's parser, so the checks above can fail.
#  3. kvgate's parser must agree with promtool on the engine fixtures and on
#     a table of valid and malformed lines; the two documented differences
#     (parse.h) are checked as differences.
. "$(dirname "$0")/lib.sh"
set -o pipefail
TOOL="$KVG_TOOLS/metrics_dump"
FIX="$KVG_ROOT/tests/fixtures/metrics"
# promtool's report goes to prom.txt: finish scans *.out and *.log for
# sanitizer reports, which are kvgate's, not promtool's.
promtool_rc() { timeout 30 promtool check metrics <"$1" >"$TMP/prom.txt" 2>&1; echo $?; }

if ! command -v promtool >/dev/null; then
  bad "promtool is installed"
  finish
fi

# ---- 1. our rendering passes clean ------------------------------------------
timeout 60 "$TOOL" >"$TMP/dump.txt"
check "dump runs" test $? = 0
rc=$(promtool_rc "$TMP/dump.txt")
if [ "$rc" = 0 ]; then ok "promtool clean (rc 0)"; else bad "promtool rc $rc"; cat "$TMP/prom.txt"; fi

has() { grep -qF -- "$1" "$TMP/dump.txt"; }
# 3 threads x 10000 iterations spread over 10 workers: 3000 each.
check "counter, escaped backslash" has 'kvgate_requests_total{worker="back\\slash",code="200"} 3000'
check "counter, escaped quote" has 'kvgate_requests_total{worker="dq\"uote",code="429"} 3000'
check "counter, escaped newline" has 'kvgate_requests_total{worker="new\nline",code="200"} 3000'
check "counter, trailing backslash" has 'worker="trailing backslash\\",code="200"} 3000'
check "counter, empty value" has 'kvgate_requests_total{worker="",code="429"} 3000'
check "UTF-8 value, NaN gauge" has "kvgate_worker_load{worker=\"$(printf '\xe6\xa8\xa1\xe5\x9e\x8b-\xc3\xbc-\xf0\x9f\x9a\x80')\"} NaN"
check "HELP escaped" has '# HELP kvgate_ttft_seconds Time to first token seen by the gateway (s).\nSecond line with a \\ backslash and "quotes".'
check "histogram +Inf bucket" has 'kvgate_ttft_seconds_bucket{worker="http://10.0.0.7:8000",le="+Inf"} 3000'
check "histogram count" has 'kvgate_ttft_seconds_count{worker="http://10.0.0.7:8000"} 3000'
check "unlabelled histogram" has 'kvgate_request_bytes_bucket{le="65536"} 1'
check "inc/dec pairs net zero" has 'kvgate_inflight_requests 0'
check "fractional counter exact" has 'kvgate_busy_seconds_total 3750'
check "removed worker absent" bash -c "! grep -q 'removed:8000' '$TMP/dump.txt'"
check "empty family absent" bash -c "! grep -q kvgate_never_used '$TMP/dump.txt'"
# Every histogram series: buckets never decrease, +Inf equals _count. Label
# values hold blanks, so the value is the last field and the series the rest.
check "histogram invariants" awk '
  /^#/ { next }
  {
    v = $NF; s = substr($0, 1, length($0) - length(v) - 1)
    if (s ~ /_bucket[{]/) {
      le = s; sub(/.*le="/, "", le); sub(/".*/, "", le)
      k = s; sub(/_bucket[{]/, "{", k); sub(/,?le="[^"]*"/, "", k)
      if ((k in last) && v + 0 < last[k]) bad = 1
      last[k] = v + 0
      if (le == "+Inf") inf[k] = v + 0
    } else if (s ~ /_count([{]|$)/) {
      k = s; sub(/_count/, "", k); if (k !~ /[{]/) k = k "{}"
      cnt[k] = v + 0
    }
  }
  END {
    n = 0
    for (k in inf) { n++; if (!(k in cnt) || cnt[k] != inf[k]) { print "mismatch " k; bad = 1 } }
    exit (bad || n != 11)
  }' "$TMP/dump.txt"
# Our parser reads back every sample line.
want=$(grep -vc '^#' "$TMP/dump.txt")
got=$("$TOOL" --parse <"$TMP/dump.txt")
check "kvgate parser reads the dump ($want samples)" test "$got" = "samples $want"

# ---- 2. negative controls ---------------------------------------------------
head -c -1 "$TMP/dump.txt" >"$TMP/cut.txt" # last line loses its newline
rc=$(promtool_rc "$TMP/cut.txt")
check "control: truncated dump fails promtool" test "$rc" = 1
check "control: truncated dump fails kvgate parser" bash -c "! '$TOOL' --parse <'$TMP/cut.txt' >/dev/null"
sed 's/back\\\\slash/back\\qslash/' "$TMP/dump.txt" >"$TMP/esc.txt"
rc=$(promtool_rc "$TMP/esc.txt")
check "control: bad escape fails promtool" test "$rc" = 1
check "control: bad escape fails kvgate parser" bash -c "! '$TOOL' --parse <'$TMP/esc.txt' >/dev/null"
sed 's/^kvgate_up 1$/kvgate_up_total 1/; s/# TYPE kvgate_up gauge/# TYPE kvgate_up_total gauge/' \
  "$TMP/dump.txt" >"$TMP/lint.txt"
rc=$(promtool_rc "$TMP/lint.txt")
check "control: a lint problem is rc 3" test "$rc" = 3

# ---- 3. kvgate's parser vs promtool -----------------------------------------
# Engine bodies: promtool parses them (rc 3: it lints the colons in engine
# names), and so do we, with the right flavor.
for f in vllm_dp2:vllm vllm_legacy:vllm sglang_tp2:sglang sglang_dp2:sglang llamacpp:llamacpp; do
  name=${f%%:*}
  flavor=${f##*:}
  rc=$(promtool_rc "$FIX/$name.txt")
  check "fixture $name parses in promtool" test "$rc" = 0 -o "$rc" = 3
  check "fixture $name parses in kvgate" bash -c "'$TOOL' --parse <'$FIX/$name.txt' | grep -q '^samples '"
  check "fixture $name flavor $flavor" bash -c "'$TOOL' --load <'$FIX/$name.txt' | grep -qx 'flavor $flavor'"
done
# llama.cpp's "-nan": promtool refuses it, we accept it (documented).
rc=$(promtool_rc "$FIX/llamacpp_nokv.txt")
check "difference: promtool rejects -nan" test "$rc" = 1
check "difference: kvgate accepts -nan" bash -c "'$TOOL' --load <'$FIX/llamacpp_nokv.txt' | grep -qx 'kv_usage unknown'"
# A value glued to a bare name: promtool takes "m-1" as m = -1, we refuse.
printf 'm-1\n' >"$TMP/glued.txt"
rc=$(promtool_rc "$TMP/glued.txt")
check "difference: promtool accepts m-1" test "$rc" = 0 -o "$rc" = 3
check "difference: kvgate rejects m-1" bash -c "! '$TOOL' --parse <'$TMP/glued.txt' >/dev/null"

agree() { # expected (valid|invalid), then the text with printf escapes
  local want=$1 text=$2 rc ours
  printf '%b' "$text" >"$TMP/case.txt"
  rc=$(promtool_rc "$TMP/case.txt")
  if "$TOOL" --parse <"$TMP/case.txt" >/dev/null; then ours=valid; else ours=invalid; fi
  local theirs=invalid
  [ "$rc" = 0 ] || [ "$rc" = 3 ] && theirs=valid
  if [ "$ours" = "$want" ] && [ "$theirs" = "$want" ]; then
    ok "agree $want: $text"
  else
    bad "agree $want: $text (promtool $theirs rc $rc, kvgate $ours)"
  fi
}
agree valid 'up 1\n'
agree valid 'm{a="b",} 1\n'
agree valid 'm{ a = "b" } 1\n'
agree valid 'm{a="b"}5\n'
agree valid 'm 1 -42\n'
agree valid 'm .5\nm 1.\nm infinity\nm -Inf\nm NaN\nm 1E-3\n'
agree valid 'm{a="x\\\\y\\"z\\nw"} 1\n'
agree valid '# TYPE m\n# HELP\n# random comment\nm 1\n'
agree invalid 'm{a="b} 1\n'
agree invalid 'm{a="b\\t"} 1\n'
agree invalid 'm{a="1",a="2"} 1\n'
agree invalid 'm{a="1" b="2"} 1\n'
agree invalid 'm{,} 1\n'
agree invalid 'm{9a="1"} 1\n'
agree invalid 'm 0x10\n'
agree invalid 'm 1e\n'
agree invalid 'm 1.2.3\n'
agree invalid 'm nan(1)\n'
agree invalid 'm 1,5\n'
agree invalid 'm 1e999\n'
agree invalid 'm 1 2 3\n'
agree invalid 'm 1 1.5\n'
agree invalid 'm 1 9223372036854775808\n'
agree invalid 'm{a="\xc3\x28"} 1\n'
agree invalid 'm 1'
agree invalid '# TYPE m countr\n'
agree invalid '# HELP m bad \\t escape\n'

finish
