#!/usr/bin/env bash
# Runs kvgate's tests against one build folder and ends with a plain
# "N passed, N failed, N skipped" line, after the names of the skipped ones.
#   tests/run.sh build/release            unit + integration
#   tests/run.sh build/release unit       unit only
#   tests/run.sh build/release integration [NAME...]
#   tests/run.sh build/fuzz fuzz             short runs of the libFuzzer targets
# Unit programs (build/X/t/<part>/test_*) each run in their own process with a
# time limit and count their cases; each integration script
# (tests/integration/*.sh or *.mjs) counts as the cases it reports, or as one.
# A program's count line is "# N passed, N failed" with an optional
# ", N skipped"; its "skip NAME: REASON" lines are listed at the end.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${1:?build folder}
WHAT=${2:-all}
shift $(( $# >= 2 ? 2 : 1 ))
ONLY=("$@")
export KVG_BUILD="$OUT" KVG_BIN="$PWD/$OUT/kvgate" KVG_TOOLS="$PWD/$OUT/tools" KVG_ROOT="$PWD"
passed=0; failed=0; skipped=0; failures=(); skips=()
log=$(mktemp -d /tmp/kvgate-tests.XXXXXX)

count_output() { # file name rc
  local line p f s l
  line=$(grep -E '^# [0-9]+ passed, [0-9]+ failed' "$1" | tail -1)
  s=0
  if [ -n "$line" ]; then
    p=$(echo "$line" | awk '{print $2}'); f=$(echo "$line" | awk '{print $4}')
    s=$(echo "$line" | sed -nE 's/^# [0-9]+ passed, [0-9]+ failed, ([0-9]+) skipped.*/\1/p')
    s=${s:-0}
  elif [ "$3" = 0 ]; then p=1; f=0; else p=0; f=1; fi
  if [ "$3" != 0 ] && [ "$f" = 0 ]; then f=1; fi  # crashed after its summary, or timed out
  passed=$((passed + p)); failed=$((failed + f)); skipped=$((skipped + s))
  while IFS= read -r l; do skips+=("$2: ${l#skip }"); done < <(grep -E '^skip ' "$1")
  if [ "$f" != 0 ]; then
    failures+=("$2")
    echo "---- FAILED: $2 (rc $3)"; grep -v '^ok ' "$1" | tail -60
  elif [ -z "${KVG_SUMMARY_ONLY:-}" ]; then
    if [ "$s" = 0 ]; then echo "ok   $2 ($p, ${TOOK:-?} s)"; else echo "ok   $2 ($p, $s skipped, ${TOOK:-?} s)"; fi
  fi
}

# Tests run KVG_JOBS at a time (default: the cores, at most 2). Each running
# test has a slot; KVG_PORT_SLOT/KVG_PORT_SLOTS give it its own share of the
# free-port range (src/base/proc.c, tests/fixtures/free_port.py), so that two
# tests side by side never pick the same port. Results are counted in the
# order the tests finish.
JOBS=${KVG_JOBS:-$(nproc)}
[ "$JOBS" -ge 1 ] 2>/dev/null || JOBS=1
[ -n "${KVG_JOBS:-}" ] || [ "$JOBS" -le 2 ] || JOBS=2
declare -A running=()   # pid -> "slot name"
free_slots=()
for ((i = 0; i < JOBS; i++)); do free_slots+=("$i"); done

reap_one() { # waits for one running test and counts it
  local pid rc slot start name
  wait -n -p pid "${!running[@]}"
  rc=$?
  read -r slot start name <<<"${running[$pid]}"
  unset "running[$pid]"
  TOOK=$((SECONDS - start))
  count_output "$log/out.$slot" "$name" "$rc"
  free_slots+=("$slot")
}
start_test() { # name timeout command...
  local name=$1 secs=$2 slot; shift 2
  [ ${#running[@]} -lt "$JOBS" ] || reap_one
  slot=${free_slots[0]}; free_slots=("${free_slots[@]:1}")
  KVG_PORT_SLOT=$slot KVG_PORT_SLOTS=$JOBS timeout -k 5 "$secs" "$@" >"$log/out.$slot" 2>&1 &
  running[$!]="$slot $SECONDS $name"
}
drain_tests() { while [ ${#running[@]} -gt 0 ]; do reap_one; done; }

if [ "$WHAT" = all ] || [ "$WHAT" = unit ]; then
  for t in $(find "$OUT/t" -type f -perm -u+x 2>/dev/null | sort); do
    start_test "unit/${t#"$OUT/t/"}" 300 "$t"
  done
  drain_tests
fi

if [ "$WHAT" = all ] || [ "$WHAT" = integration ]; then
  for t in $(ls tests/integration/*.sh tests/integration/*.mjs 2>/dev/null | sort); do
    name=$(basename "$t")
    [ "$name" = lib.sh ] && continue # the helpers every script sources, not a test
    if [ ${#ONLY[@]} -gt 0 ]; then
      keep=0; for o in "${ONLY[@]}"; do [[ $name == *"$o"* ]] && keep=1; done
      [ $keep = 1 ] || continue
    fi
    case "$t" in
      *.sh) start_test "integration/$name" 600 bash "$t" ;;
      *.mjs) start_test "integration/$name" 600 node "$t" ;;
    esac
  done
  drain_tests
fi

if [ "$WHAT" = fuzz ]; then
  # A short run of every libFuzzer target (built by `make fuzz`): they must
  # still build and survive fresh random inputs; long runs are manual.
  for t in $(find "$OUT/bin" -type f -perm -u+x -name 'fuzz_*' 2>/dev/null | sort); do
    name=$(basename "$t")
    # Seeds in fuzz/corpus/<target>/ are copied: libFuzzer adds to its corpus.
    rm -rf "$log/corpus" && mkdir -p "$log/corpus"
    [ -d "fuzz/corpus/$name" ] && cp fuzz/corpus/"$name"/* "$log/corpus/"
    timeout -k 5 120 "$t" "$log/corpus" -runs=20000 -max_total_time=15 -rss_limit_mb=2048 >"$log/out" 2>&1
    rc=$?
    [ $rc = 0 ] && echo "# 1 passed, 0 failed" >>"$log/out"
    count_output "$log/out" "fuzz/$name" $rc
  done
fi

rm -rf "$log"
echo "[$OUT] failures: ${failures[*]:-none}"
if [ ${#skips[@]} = 0 ]; then echo "[$OUT] skipped: none"; else echo "[$OUT] skipped:"; fi
for l in "${skips[@]}"; do echo "  $l"; done
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" = 0 ]
