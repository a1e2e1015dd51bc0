#!/usr/bin/env bash
# Runs the KV index benchmark (bench/router/bench_kv_index.c) and writes
# bench/results/router-index.md: ingest rate, lookup latency for a
# 6,000-token prompt across 64 workers (warm, cold, under concurrent ingest),
# bytes per (block, worker) entry. Extra arguments go to the benchmark
# (--workers N --capacity BLOCKS --events N --lookups N --contention-seconds S).
# Numbers from a shared or loaded machine are noisy: the load average at the
# start is recorded next to them.
set -euo pipefail
cd "$(dirname "$0")/../.."
make -s -j2 build/release/bench/router/bench_kv_index
out=bench/results/router-index.md
mkdir -p bench/results
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
load=$(cut -d' ' -f1-3 /proc/loadavg)
build/release/bench/router/bench_kv_index "$@" >"$tmp"
cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')
{
  echo "# Router KV index benchmark"
  echo
  echo "Precise KV index (src/kv/): ingest of vLLM KV-event batches, longest-prefix"
  echo "lookup of a 6,000-token prompt (375 blocks of 16 tokens) across 64 workers,"
  echo "memory per (block, worker) entry. Targets (issue 5): ingest >= 2 M block"
  echo "events/s on one core, lookup p99 < 20 us, <= 64 bytes per entry."
  echo
  echo "Command: \`bash bench/router/run.sh${*:+ $*}\` (release build, \`-O2\`)."
  echo "Machine: $(nproc) CPUs, ${cpu}; load average at start: ${load}."
  echo "Date: $(date -u +%Y-%m-%dT%H:%MZ)."
  echo
  cat "$tmp"
  echo
  echo "How it is measured:"
  echo
  echo "- Ingest: a synthetic fleet of engines emits what vLLM emits, one msgpack"
  echo "  EventBatch per scheduler step (BlockStored of 32 blocks extending a"
  echo "  375-block prompt chain; BlockRemoved of the oldest blocks once a worker"
  echo "  holds its capacity). Batches are decoded outside the timed region; the"
  echo "  rate times \`kvg_kv_index_apply\`: re-hashing token ids (XXH3), parent"
  echo "  resolution, locking, inserting and removing. Block events = blocks stored"
  echo "  + blocks removed."
  echo "- Lookups: \`kvg_kv_index_match\` of precomputed sequence hashes (and"
  echo "  \`kvg_kv_index_match_tokens\` from token ids) for 32 prompts of 375 blocks"
  echo "  sharing a 100-block system prompt, in the index left by the ingest run"
  echo "  (about 1 M entries). Mixed: each worker holds each prompt to a depth of"
  echo "  0, 100, 200 or 375 blocks. Worst case: all 64 hold all 375 blocks, so"
  echo "  the walk is 375 deep with 64 candidates. Cold: 64 MB streamed through"
  echo "  the caches before every lookup (untimed)."
  echo "- Concurrency: one thread looks up (worst case) while another ingests,"
  echo "  paced or flat out. Lock waits count lookups that found the lock held"
  echo "  by a writer. On a 2-CPU machine shared with other work the tail also"
  echo "  holds preemption and the writer evicting the reader's cache lines."
  echo "- Bytes: \`kvg_kv_index_stats().bytes\` (all allocations of the index:"
  echo "  paged pools, bucket arrays, per-worker tables) / entries."
} >"$out"
cat "$out"
