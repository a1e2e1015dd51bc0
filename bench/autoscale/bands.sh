#!/usr/bin/env bash
# Where a day's SLO misses and GPU-hours are: reads a `kvgate bench
# --scenario diurnal --timeline FILE` CSV and prints, per planner (those
# named, or all) and part of the day, the share of requests arriving then
# that missed the SLO, the GPU-hours held (ready + starting replicas, 2 GPUs
# each), the mean ready and starting replicas, and the mean arrival rate.
#   bash bench/autoscale/bands.sh FILE [PLANNER...]
set -euo pipefail
f=$1
shift
want=" $* "
awk -F, -v want="$want" '
  NR == 1 { next }
  want != "  " && index(want, " " $1 " ") == 0 { next }
  {
    h = $2 - 0.001 # a point is stamped at its end
    b = h < 5 ? 1 : h < 7 ? 2 : h < 11 ? 3 : h < 22 ? 4 : 5
    k = $1 SUBSEP b
    if (!($1 in seen)) { seen[$1] = 1; order[++n] = $1 }
    arr[k] += $7; mis[k] += $8; pts[k]++
    rd[k] += $5; st[k] += $6; rate[k] += $3
    gh[k] += ($5 + $6) * step * 2 / 3600
  }
  BEGIN {
    step = 30 # 288 points over 8,640 virtual seconds
    name[1] = "00-05 night"; name[2] = "05-07 early ramp"; name[3] = "07-11 ramp"
    name[4] = "11-22 day"; name[5] = "22-24 evening"
  }
  END {
    print "| planner | part of the day | missed | GPU-hours | ready | starting | req/s |"
    print "|---|---|---|---|---|---|---|"
    for (i = 1; i <= n; i++)
      for (b = 1; b <= 5; b++) {
        k = order[i] SUBSEP b
        if (!pts[k]) continue
        printf "| %s | %s | %.2f%% | %.1f | %.1f | %.1f | %.1f |\n", order[i], name[b],
          arr[k] ? 100 * mis[k] / arr[k] : 0, gh[k], rd[k] / pts[k], st[k] / pts[k], rate[k] / pts[k]
      }
  }
' "$f"
