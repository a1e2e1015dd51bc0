#!/usr/bin/env python3
"""Writes bench/routing/trace-sample.jsonl, the trace the routing suite replays
(`kvgate bench --suite routing`, workload `trace`). Deterministic: the same file
every run. Its format is the one `kvgate bench --workload trace` reads (README,
"Trace format"): Mooncake-style hash_ids blocks of 512 tokens.

The traffic: multi-turn conversations arriving at 2.4 sessions/s (Poisson) for
300 s. Each session uses one of 12 system prompts (4-16 blocks, shared by every
session that uses it), then 1-8 turns; a turn adds 1-3 blocks of new user text
and its 100-400 token answer comes back as part of the next turn's context, so
turn k's hash_ids are a prefix of turn k+1's. Think time between turns 2-20 s.
A request's input_length covers its blocks plus a partial tail of up to 511
tokens of its own."""
import json
import random

BLOCK = 512
rng = random.Random(17)
systems = [list(range(1000 * (g + 1), 1000 * (g + 1) + rng.randint(4, 16))) for g in range(12)]
reqs = []
t = 0.0
next_block = 10**6
sid = 0
while True:
    t += rng.expovariate(2.4)
    if t >= 300:
        break
    sid += 1
    blocks = list(systems[rng.randrange(len(systems))])
    at = t
    for turn in range(rng.randint(1, 8)):
        for _ in range(rng.randint(1, 3)):
            blocks.append(next_block)
            next_block += 1
        out = rng.randint(100, 400)
        reqs.append({"timestamp": round(at, 3), "session_id": "s%d" % sid,
                     "input_length": len(blocks) * BLOCK + rng.randint(0, BLOCK - 1),
                     "output_length": out, "hash_ids": list(blocks)})
        # The answer becomes context: about out tokens, counted as a new block.
        blocks.append(next_block)
        next_block += 1
        at += rng.uniform(2, 20) + out * 0.03
reqs.sort(key=lambda r: r["timestamp"])
with open(__file__.rsplit("/", 1)[0] + "/trace-sample.jsonl", "w") as f:
    for r in reqs:
        f.write(json.dumps(r, separators=(",", ":")) + "\n")
print(len(reqs), "requests")
