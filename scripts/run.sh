#!/usr/bin/env bash
# Quick start, part 1: build kvgate and run its main job on the embedded
# default: a gateway on 127.0.0.1:8080 in front of a few local simulated
# engines. Extra arguments go to `kvgate serve`. It says what it does on
# stderr as it goes: the first build takes a minute or two.
set -euo pipefail
cd "$(dirname "$0")/.."
say() { printf 'run.sh: %s\n' "$*" >&2; }

say "checking the packages kvgate needs to build and run (Debian 12; installed only if missing)"
bash scripts/install-deps.sh --run

# The build, with a line every few seconds while it runs: files compiled so
# far out of the sources (more are compiled the first time than later).
total=$(ls src/*.c src/*/*.c src/*/*/*.c 2>/dev/null | wc -l)
jobs=$(nproc)
mkdir -p build/release
marker=$(mktemp build/release/.run-start.XXXXXX)
trap 'rm -f "$marker"' EXIT
say "building build/release/kvgate (make BUILD=release, $jobs jobs; ~$total source files)"
make -s -j"$jobs" BUILD=release build/release/kvgate &
make_pid=$!
ticks=0
while kill -0 "$make_pid" 2>/dev/null; do
  sleep 1
  ticks=$((ticks + 1))
  if [ $((ticks % 10)) = 0 ] && kill -0 "$make_pid" 2>/dev/null; then
    n=$(find build/release -name '*.o' -newer "$marker" | wc -l)
    say "still building: $n files compiled in ${ticks}s"
  fi
done
if ! wait "$make_pid"; then
  say "the build failed (the compiler's messages are above)"
  exit 1
fi
n=$(find build/release -name '*.o' -newer "$marker" | wc -l)
say "built in ${ticks}s ($n files compiled; the rest were up to date): $(build/release/kvgate --version)"
rm -f "$marker"
trap - EXIT

say "starting kvgate serve $* (Ctrl-C stops it; the engines it starts stop with it)"
exec build/release/kvgate serve "$@"
