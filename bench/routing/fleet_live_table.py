"""bench/routing/fleet_live.sh's figures: with --collect DIR OUT SPEED, reads
the run's files (each run's `kvgate bench` JSON row, the engines' counters and
haproxy's CSV scraped when the measured period began (.m0), at the kill (.mk)
and at the end (.m1), the load average) into one JSON list OUT; with OUT
alone, prints the markdown tables for bench/results/fleet.md; with --compare
OUT1 OUT2..., one line per setup with each run's p90 TTFT and cache hits.

Bounds (issue 37's offline goals, 3 replicas against one): with KV events,
p90 TTFT within 5% and the cache-hit rate within 2 points; without, the
cache-hit rate within 5 points."""
import glob
import json
import os
import re
import sys


def counters(path):
    """Per engine URL: requests finished, prefix-cache queries and hits."""
    out, cur = {}, None
    for line in open(path):
        if line.startswith("== "):
            cur = line[3:].strip()
            out[cur] = {"requests": 0.0, "queries": 0.0, "hits": 0.0}
            continue
        m = re.match(r"vllm:(\w+)\{[^}]*\} ([0-9.e+]+)", line)
        if not m or cur is None:
            continue
        k = {"request_success_total": "requests", "prefix_cache_queries_total": "queries",
             "prefix_cache_hits_total": "hits"}.get(m.group(1))
        if k:
            out[cur][k] += float(m.group(2))
    return out


def haproxy(path):
    """Per replica (server name): haproxy's CSV row as a dict."""
    rows = {}
    if not os.path.exists(path):
        return rows
    lines = open(path).read().splitlines()
    if not lines:
        return rows
    head = lines[0].lstrip("# ").split(",")
    for l in lines[1:]:
        r = dict(zip(head, l.split(",")))
        if r.get("pxname") == "replicas" and r.get("svname") not in ("BACKEND", "FRONTEND"):
            rows[r["svname"]] = r
    return rows


def window(a, b):
    """Engine figures between two scrapes: each engine's requests, the cache
    hit rate of their prompt tokens, the largest engine's share over the
    mean (engines absent from a scrape: none of it counted)."""
    d = {u: {k: b[u][k] - a.get(u, {}).get(k, 0) for k in b[u]} for u in b}
    reqs = [d[u]["requests"] for u in sorted(d)]
    q = sum(x["queries"] for x in d.values())
    h = sum(x["hits"] for x in d.values())
    mean = sum(reqs) / len(reqs) if reqs else 0
    return {"engine_requests": reqs, "engine_cache_hit_ratio": h / q if q else None,
            "engine_max_over_mean": max(reqs) / mean if mean else None}


def collect(d, out, speed):
    rows = []
    for f in sorted(glob.glob(os.path.join(d, "*.json"))):
        tag = os.path.basename(f)[:-5]
        wl, kv, mode = tag.split("-")
        j = json.load(open(f))[0]
        base = os.path.join(d, tag)
        m0, m1 = counters(base + ".m0"), counters(base + ".m1")
        ha = haproxy(base + ".m1.ha")
        r = {"workload": wl, "policy": os.environ.get("POLICY", "prefix_affinity"),
             "kv_events": kv == "events",
             "replicas": int(open(base + ".n").read()) if os.path.exists(base + ".n")
             else 1 if mode.startswith("one") else 3,
             "threads": 3 if mode == "one3" else 1, "peers": mode != "apart",
             "killed": mode.startswith("kill"), "haproxy_retries": 0 if mode == "killnr" else 3,
             "speed": float(speed), "exchange_ms": int(os.environ.get("EXCH_MS", 0)) or None,
             "gateway_cpu_s": (float(open(base + ".cpu").read())
                               if os.path.exists(base + ".cpu") else None),
             "load_average": float(open(base + ".load").read()),
             "bench": {k: v for k, v in j.items() if k != "seeds"}}
        r.update(window(m0, m1))
        r["replica_requests"] = {s: int(x.get("hrsp_2xx") or 0) for s, x in sorted(ha.items())}
        r["haproxy"] = {s: {k: x.get(k) for k in ("status", "stot", "hrsp_2xx", "hrsp_4xx", "hrsp_5xx", "wretr",
                                                   "wredis", "econ", "eresp")}
                        for s, x in sorted(ha.items())}
        if os.path.exists(base + ".mk"):
            r["after_kill"] = window(counters(base + ".mk"), m1)
        rows.append(r)
    json.dump(rows, open(out, "w"), indent=1)


def pct(x):
    return "-" if x is None else f"{100 * x:.1f}%"


def table(path):
    rows = json.load(open(path))
    apart = [r for r in rows if not r.get("peers", True)]
    rows = [r for r in rows if r.get("peers", True)]
    key = {(r["workload"], r["kv_events"], r["replicas"], r["threads"], r["killed"],
            r["haproxy_retries"]): r for r in rows}
    if apart:
        print("#### What the exchange costs: the replicas with --peers against the same without\n")
        print("| workload | KV events | replicas | --exchange-ms | gateways' CPU s, apart | with peers | "
              "per replica, s | p90 TTFT s, apart / with peers |")
        print("|---|---|---:|---:|---:|---:|---:|---:|")
        for a in apart:
            r = key.get((a["workload"], a["kv_events"], a["replicas"], 1, False, 3))
            if not r or a["gateway_cpu_s"] is None or r["gateway_cpu_s"] is None:
                continue
            d = (r["gateway_cpu_s"] - a["gateway_cpu_s"]) / a["replicas"]
            print(f"| {a['workload']} | {'yes' if a['kv_events'] else 'no'} | {a['replicas']} | "
                  f"{r['exchange_ms']} | {a['gateway_cpu_s']:.2f} | {r['gateway_cpu_s']:.2f} | "
                  f"{d:+.3f} | {a['bench']['ttft_p90_s']:.3g} / {r['bench']['ttft_p90_s']:.3g} |")
        print()
    for wl in dict.fromkeys(r["workload"] for r in rows):
        for kv in (True, False):
            one = key.get((wl, kv, 1, 1, False, 3))
            if not one:
                continue
            print(f"#### {wl}, {'with' if kv else 'without'} KV events\n")
            print("| replicas (kvgate threads each) | p90 TTFT s (vs 1, 1 thread) | cache hit (answers) | cache hit (engines) | "
                  "engine max/mean | requests per replica | errors | load avg |")
            print("|---|---:|---:|---:|---:|---|---:|---:|")
            nr = max(r["replicas"] for r in rows if r["workload"] == wl)
            for reps, th, killed, hr in ((1, 1, False, 3), (1, 3, False, 3), (nr, 1, False, 3),
                                         (nr, 1, True, 3), (nr, 1, True, 0)):
                r = key.get((wl, kv, reps, th, killed, hr))
                if not r:
                    continue
                b, b1 = r["bench"], one["bench"]
                p90 = f"{b['ttft_p90_s']:.3g}"
                hit = pct(b["cache_hit_ratio"])
                if r is not one:
                    p90 += f" ({100 * (b['ttft_p90_s'] / b1['ttft_p90_s'] - 1):+.0f}%)"
                    hit += f" ({100 * (b['cache_hit_ratio'] - b1['cache_hit_ratio']):+.1f})"
                mo = r["engine_max_over_mean"]
                what = f"{reps} ({th})" + (", one killed" if killed else "") + (
                    "" if hr else " (haproxy retries 0)")
                print(f"| {what} | {p90} | {hit} | "
                      f"{pct(r['engine_cache_hit_ratio'])} | {'-' if mo is None else f'{mo:.2f}'} | "
                      f"{' / '.join(str(v) for v in r['replica_requests'].values())} | "
                      f"{b['errors']} | {r['load_average']:.1f} |")
            print()
    print("#### The kill: one of 3 replicas SIGKILLed at the last stage's start\n")
    print("| workload | KV events | haproxy retries | requests | completed | lost before any answer byte | "
          "lost in flight (answer broke) | client retries | haproxy retries / redispatches | "
          "p90 TTFT after, s (3 alive: same stage) | cache hit after (engines; 3 alive: answers) "
          "| engine max/mean after |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        if not r["killed"]:
            continue
        b = r["bench"]
        three = key.get((r["workload"], r["kv_events"], r["replicas"], 1, False, 3))
        lost_before = b["errors"] - b["lost_in_flight"] - b["timeouts"]
        hr = sum(int(x["wretr"] or 0) for x in r["haproxy"].values())
        hd = sum(int(x["wredis"] or 0) for x in r["haproxy"].values())
        after = b["stages"][-1]["ttft_p90_s"] if b.get("stages") else None
        ref = three["bench"]["stages"][-1]["ttft_p90_s"] if three and three["bench"].get(
            "stages") else None
        ak = r.get("after_kill", {})
        mo = ak.get("engine_max_over_mean")
        print(f"| {r['workload']} | {'yes' if r['kv_events'] else 'no'} | "
              f"{r['haproxy_retries']} | {b['requests']} | "
              f"{b['completed']} | {lost_before} | {b['lost_in_flight']} | {b['retried']} | "
              f"{hr} / {hd} | {after:.3g} ({'-' if ref is None else f'{ref:.3g}'}) | "
              f"{pct(ak.get('engine_cache_hit_ratio'))} "
              f"({pct(three['bench']['cache_hit_ratio']) if three else '-'}) | "
              f"{'-' if mo is None else f'{mo:.2f}'} |")
    print()
    print("Against the offline bounds (3 replicas against one; with KV events p90 within 5% "
          "and cache hits within 2 points, without cache hits within 5 points):\n")
    for r in rows:
        if r["replicas"] == 1:
            continue
        for th in (1, 3):
            one = key.get((r["workload"], r["kv_events"], 1, th, False, 3))
            if not one:
                continue
            b, b1 = r["bench"], one["bench"]
            dp = b["ttft_p90_s"] / b1["ttft_p90_s"] - 1
            dh = 100 * (b["cache_hit_ratio"] - b1["cache_hit_ratio"])
            ok = dh >= -2 and dp <= 0.05 if r["kv_events"] else dh >= -5
            print(f"- {r['workload']}, {'with' if r['kv_events'] else 'without'} events"
                  f"{', one killed' if r['killed'] else ''}"
                  f"{' (haproxy retries 0)' if not r['haproxy_retries'] else ''}, against one "
                  f"replica of {th} thread{'s' if th > 1 else ''}: p90 {100 * dp:+.0f}%, cache hits "
                  f"{dh:+.1f} points: {'within' if ok else '**not within**'}")


def compare(paths):
    """One line per setup: p90 TTFT and cache hits (answers) of each run."""
    runs = [json.load(open(p)) for p in paths]
    seeds = [rs[0]["bench"]["seed"] if rs else "?" for rs in runs]

    def name(r):
        n = f"{r['replicas']} ({r['threads']})"
        if r["killed"]:
            n += ", one killed" + ("" if r["haproxy_retries"] else " (haproxy retries 0)")
        return n

    print("| workload | KV events | replicas (threads) | " +
          " | ".join(f"seed {s}: p90 s / hit / errors" for s in seeds) + " |")
    print("|---|---|---|" + "---:|" * len(runs))
    keys = lambda r: (r["workload"], r["kv_events"], r["replicas"], r["threads"], r["killed"],
                      r["haproxy_retries"])
    idx = [{keys(r): r for r in rs} for rs in runs]
    order = lambda r: (r["workload"], not r["kv_events"], r["replicas"], r["threads"], r["killed"],
                       -r["haproxy_retries"])
    for r in sorted(runs[0], key=order):
        cells = []
        for d in idx:
            x = d.get(keys(r))
            cells.append("-" if not x else f"{x['bench']['ttft_p90_s']:.3g} / "
                         f"{pct(x['bench']['cache_hit_ratio'])} / {x['bench']['errors']}")
        print(f"| {r['workload']} | {'yes' if r['kv_events'] else 'no'} | {name(r)} | " +
              " | ".join(cells) + " |")


if __name__ == "__main__":
    if sys.argv[1] == "--collect":
        collect(sys.argv[2], sys.argv[3], sys.argv[4])
    elif sys.argv[1] == "--compare":
        compare(sys.argv[2:])
    else:
        table(sys.argv[1])
