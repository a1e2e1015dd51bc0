#!/usr/bin/env bash
# Quick start, part 2: install what the tests need, build kvgate twice
# (release, and ASan+UBSan), and run the whole suite against both builds,
# then a short run of every fuzz target.
# Ends with one "N passed, N failed, N skipped" line (each build's skipped
# tests are named above it); exits non-zero on any failure.
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh || exit 1
jobs=$(nproc)
make -s -j"$jobs" BUILD=release all || exit 1
make -s -j"$jobs" BUILD=asan all || exit 1
make -s -j"$jobs" fuzz || exit 1
KVG_SUMMARY_ONLY=1 bash tests/run.sh build/release >/tmp/kvgate-test-release.$$ 2>&1
rc1=$?
cat /tmp/kvgate-test-release.$$
KVG_SUMMARY_ONLY=1 bash tests/run.sh build/asan >/tmp/kvgate-test-asan.$$ 2>&1
rc2=$?
cat /tmp/kvgate-test-asan.$$
KVG_SUMMARY_ONLY=1 bash tests/run.sh build/fuzz fuzz >/tmp/kvgate-test-fuzz.$$ 2>&1
rc3=$?
cat /tmp/kvgate-test-fuzz.$$
p=0; f=0; s=0
for file in /tmp/kvgate-test-release.$$ /tmp/kvgate-test-asan.$$ /tmp/kvgate-test-fuzz.$$; do
  line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$file" | tail -1)
  [ -n "$line" ] || line="0 passed, 1 failed"
  p=$((p + $(echo "$line" | awk '{print $1}')))
  f=$((f + $(echo "$line" | awk '{print $3}')))
  n=$(echo "$line" | sed -nE 's/^[0-9]+ passed, [0-9]+ failed, ([0-9]+) skipped.*/\1/p')
  s=$((s + ${n:-0}))
done
rm -f /tmp/kvgate-test-release.$$ /tmp/kvgate-test-asan.$$ /tmp/kvgate-test-fuzz.$$
echo "total (release + asan builds, fuzz smoke):"
echo "$p passed, $f failed, $s skipped"
[ $rc1 -eq 0 ] && [ $rc2 -eq 0 ] && [ $rc3 -eq 0 ] && [ $f -eq 0 ]
