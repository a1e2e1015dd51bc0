#!/usr/bin/env python3
"""The issue's targets from one run of bench/gateway/cost.sh: reads the
main table's rows and prints Markdown rows | target | baseline | kvgate |
met |. Baselines are the rows measured in the same run (kv_aware:nocache =
--tokenizer-cache-bytes 0, round_robin = the plain proxy hop). The
head-of-line target is bench/gateway/hol.sh's. argv[1]: the seconds of one wrk run; a CPU verdict needs
MIN_REQS requests per run (with 64 connections and second-long requests,
the work in flight at a short run's edges would dominate fewer). A workload
run more than once in the run (KVG_COST_WORKLOADS="30k 30k-msg 30k 30k-msg")
has its rows averaged."""
import sys

SECS = float(sys.argv[1]) if len(sys.argv) > 1 else 0
MIN_REQS = 200
reqs = {}

rows = {}
seen = {}
for line in sys.stdin:
    f = [x.strip() for x in line.strip().strip("|").split("|")]
    if len(f) > 4:
        k = (f[0], f[1], f[2])
        seen.setdefault(k, []).append((float(f[4]), float(f[3]) * SECS))
for k, v in seen.items():
    rows[k] = sum(c for c, _ in v) / len(v)
    reqs[k] = min(n for _, n in v)
ths = sorted({k[1] for k in rows})


def cpu(p, wl):
    return " / ".join(f"{rows[(p, t, wl)]:.3f}" if (p, t, wl) in rows else "-" for t in ths)


def ratio(a, b, wl):
    out = []
    for t in ths:
        x, y = rows.get((a, t, wl)), rows.get((b, t, wl))
        out.append(f"{x / y:.2f}x" if x and y else "-")
    return " / ".join(out)


def met(vals, ok):
    if not vals or any(v is None for v in vals):
        return "not measured"
    good = [ok(v) for v in vals]
    return "yes" if all(good) else "partly" if any(good) else "no"


def col(p, wl):
    return [rows.get((p, t, wl)) for t in ths]


def few(wl, *pols):
    """Why a CPU verdict is withheld, or None."""
    n = [reqs.get((p, t, wl), 0) for p in pols for t in ths]
    if SECS and min(n) < MIN_REQS:
        return f"not shown ({min(n):.0f} requests in a run, under {MIN_REQS})"
    return None


print(f"| 6k shared system prompt, kv_aware: <= 0.25 ms gateway CPU | {cpu('kv_aware:nocache', '6k')} ms "
      f"| {cpu('kv_aware', '6k')} ms ({ratio('kv_aware', 'round_robin', '6k')} round_robin's) "
      f"| {met(col('kv_aware', '6k'), lambda v: v <= 0.25)} |")
print(f"| 30k conversations, earlier turns seen, kv_aware: <= 0.6 ms | {cpu('kv_aware:nocache', '30k')} ms "
      f"| {cpu('kv_aware', '30k')} ms | {met(col('kv_aware', '30k'), lambda v: v <= 0.6)} |")
pairs = [(rows.get(("kv_aware", t, "100k")), rows.get(("kv_aware:nocache", t, "100k"))) for t in ths]
print(f"| unique 100k prompts: no dearer than without the cache (within 10%) "
      f"| {cpu('kv_aware:nocache', '100k')} ms | {cpu('kv_aware', '100k')} ms "
      f"({ratio('kv_aware', 'kv_aware:nocache', '100k')} nocache's) "
      f"| {few('100k', 'kv_aware', 'kv_aware:nocache') or met([None if a is None or b is None else a / b for a, b in pairs], lambda r: r <= 1.1)} |")

# The Messages API (issue 39): the same 30k prompts through /v1/messages cost
# the gateway no more than 10% over chat, for each policy that ran both.
pols = [p for p in dict.fromkeys(k[0] for k in rows) if any((p, t, "30k-msg") in rows for t in ths)]
for p in pols:
    r = [rows[(p, t, "30k-msg")] / rows[(p, t, "30k")]
         if (p, t, "30k-msg") in rows and (p, t, "30k") in rows else None for t in ths]
    shown = " / ".join("-" if x is None else f"{x:.2f}x" for x in r)
    print(f"| 30k through /v1/messages, {p}: within 10% of the same prompts through chat "
          f"| {cpu(p, '30k')} ms | {cpu(p, '30k-msg')} ms ({shown} chat's) "
          f"| {few('30k-msg', p) or few('30k', p) or met(r, lambda x: x <= 1.1)} |")
