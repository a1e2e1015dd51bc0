#!/usr/bin/env bash
# Puts a summary of the per-section goal verdicts (written by kvgate bench)
# after the first paragraph block of an autoscale report: reads FILE, writes
# the report with the summary to stdout. Used by run.sh.
set -euo pipefail
f=$1
awk '
  FNR == NR {
    if ($0 ~ /^## / && $0 !~ /^## (Setup|Caveats)/) { sec = substr($0, 4) }
    if ($0 ~ /^\*\*The goal is/) { v[++n] = sec ": " ($0 ~ /not met/ ? "**not met**" : "**met**") }
    if ($0 ~ /^- \*\*not met\*\*/ && sec != "") { why[n + 1] = why[n + 1] (why[n + 1] ? "; " : "") substr($0, 16) }
    if ($0 ~ /^Without prewarm the goal is/) { nv[n] = $0 ~ /not met/ ? "not met" : "met" }
    if ($0 ~ /^Both checks met on /) { seeds = $0 }
    next
  }
  /^## Setup/ && !done {
    met = 0
    for (i = 1; i <= n; i++) met += v[i] !~ /not met/
    print "## Summary\n"
    printf "Issue 16\047s goal is met in %d of the %d settings below.\n\n", met, n
    for (i = 1; i <= n; i++) print "- " v[i] (why[i] ? " (" why[i] ")" : "") (nv[i] ? "; kvgate-noprewarm: " nv[i] : "")
    if (seeds != "") print "\nAcross seeds 1-10 (\"Across seeds\"; >= 99% SLO and <= 0.9x sla\047s GPU-hours only): " tolower(substr(seeds, 1, 1)) substr(seeds, 2)
    print ""
    done = 1
  }
  { print }
' "$f" "$f"
