#!/usr/bin/env bash
# Issue 38's fast-start figures (bench/results/autoscale-faststart.md) on the
# stress days (`--stress`): each run's JSON into DIR (a run already there is
# kept: resumable), two runs at a time under `nice -n 10`, most important
# first, then the tables (bench/autoscale/faststart_table.py) on stdout.
#   bash bench/autoscale/faststart.sh [SEEDS] [BIN] [DIR] [SWEEP_SEEDS] [ONLY]
# Per seed 1..SEEDS: base (kvgate, sla: today's start-up model), the goal's
# all-fast 30 s run (kvgate, sla; and kvgate with the prefill pool's
# headroom 0.2), the 30%-batch PD day as classes alone,
# fast start alone (--fast-share 0.5 --fast-ready-secs 30) and both, and the
# aggregated day's the same three, and classes alone and both with the
# kvgate pool's slo_goal at 0.993 and 0.995 (the goal's interactive
# share); on seeds 1..SWEEP_SEEDS (1) the
# time-to-ready sweep (all fast, 5-470 s) and standby 1-3. ONLY: an
# extended regex; only the runs whose name matches it (e.g. '^agg-both-').
set -euo pipefail
cd "$(dirname "$0")/../.."
N=${1:-10}
BIN=${2:-build/release/kvgate}
DIR=${3:-$(mktemp -d /tmp/kvgate-faststart.XXXXXX)}
SWEEP=${4:-1}
ONLY=${5:-}
mkdir -p "$DIR"
PD="--scenario diurnal-pd --stress"
AG="--scenario diurnal --stress"
FAST="--fast-share 0.5 --fast-ready-secs 30"
jobs=()
job() { [[ -z $ONLY || $1 =~ $ONLY ]] && jobs+=("$1|$2") || true; } # name|flags
for s in $(seq 1 "$N"); do
  job "pd-base-$s" "$PD --planners kvgate,sla --seed $s"
  job "pd-fast1-30-$s" "$PD --planners kvgate,sla --fast-share 1 --fast-ready-secs 30 --seed $s"
  job "pd-fast1-30-h0.2-$s" \
    "$PD --planners kvgate --fast-share 1 --fast-ready-secs 30 --prefill-headroom 0.2 --seed $s"
  job "pd-classes-$s" "$PD --planners kvgate --batch-share 0.3 --seed $s"
  job "pd-fast-$s" "$PD --planners kvgate $FAST --seed $s"
  job "pd-both-$s" "$PD --planners kvgate --batch-share 0.3 $FAST --seed $s"
  if [ "$s" -le "$SWEEP" ]; then
    for t in 5 10 60 120 240 470; do
      job "pd-fast1-$t-$s" "$PD --planners kvgate,sla --fast-share 1 --fast-ready-secs $t --seed $s"
    done
    for k in 1 2 3; do job "pd-standby$k-$s" "$PD --planners kvgate,sla --standby $k --seed $s"; done
  fi
  job "agg-base-$s" "$AG --planners kvgate,sla --seed $s"
  job "agg-fast-$s" "$AG --planners kvgate $FAST --seed $s"
  job "agg-classes-$s" "$AG --planners kvgate --batch-share 0.3 --seed $s"
  job "agg-both-$s" "$AG --planners kvgate --batch-share 0.3 $FAST --seed $s"
  for g in 993 995; do
    job "agg-both$g-$s" "$AG --planners kvgate --batch-share 0.3 $FAST --slo-goal 0.$g --seed $s"
    job "agg-classes$g-$s" "$AG --planners kvgate --batch-share 0.3 --slo-goal 0.$g --seed $s"
  done
done
run() {
  local name=${1%%|*} flags=${1#*|}
  # Started before (done, running in another run of this script, or failed:
  # its .out says which; delete the .out to run it again).
  [ -e "$DIR/$name.out" ] && return 0
  # shellcheck disable=SC2086 # flags are words
  nice -n 10 "$BIN" bench $flags --jobs 1 --json "$DIR/$name.json.part" > "$DIR/$name.out" 2>&1 &&
    mv "$DIR/$name.json.part" "$DIR/$name.json"
}
export -f run
export BIN DIR
[ ${#jobs[@]} -gt 0 ] && printf '%s\n' "${jobs[@]}" | xargs -d '\n' -P 2 -I{} bash -c 'run "$1"' _ {}
python3 bench/autoscale/faststart_table.py "$DIR" "$N" "$SWEEP"
