#!/usr/bin/env python3
"""Compares a live replay (bench/autoscale/agree_replay.py) with the offline
run of the same day (bench/results/autoscale-agreement.md).

The offline desired-replica trace is `kvgate bench --timeline`'s CSV (a point
every day/288 s, desired as the tick that closed it decided, read back as the
decision in force after each tick); the live one is the replay's /autoscale
samples (every second). Per planner interval (the
kvgate planner's 15 s unless --interval), both traces are read at the
interval's middle; the interval agrees when they differ by at most one
replica. Issue 38's test: agreement in >= 95% of the intervals, and the SLO
attainment live within 1 point of the offline run's.

The PD day (its live JSON's header has "pools"): the same per pool, from
the CSV's p_desired and d_desired, under "pools"; met when every pool's
trace is.

Usage: agree_compare.py OFFLINE.csv OFFLINE.json LIVE.json [--planner NAME]
       [--interval S] [--day-secs S] [--offline-trace FILE [--signals-from S]]
       [--json OUT]
(--day-secs: the offline day's length, else the live JSON's header's;
--offline-trace: the bench's --trace output: the window's measured signals
at each live decision from S s on (150) beside the nearest offline one,
as means, the evidence where the traces differ)
Prints the figures and a line per interval where the traces differ; exit 0
whether met or not (the report says which), 2 on unusable input."""
import csv, json, math, re, sys


def arg(name, dflt):
    return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else dflt


# One offline decision line of `kvgate bench --trace` (src/bench/scale/scale_des.c).
TRACE = re.compile(r"(\S+) (\d+) s: .*?load ([\d.]+) \(hit \d+%, x([\d.]+)\).*\[rate ([-\d.]+) "
                   r"isl ([-\d.]+) osl ([-\d.]+) hit ([-\d.]+) ttft_p90 ([-\d.]+) "
                   r"itl_p90 ([-\d.]+) miss ([-\d.]+)\]")
LIVE_LOAD = re.compile(r"load ([\d.]+) \(hit \d+%, x([\d.]+)\)")
SIG = ("load", "correction", "arrival_rate", "isl", "osl", "cache_hit", "ttft_p90_s", "itl_p90_s",
       "slo_miss")


def signals(trace, live, interval, since):
    """Each live decision from `since` s on beside the nearest offline one
    (within half an interval: the live ticks run out of phase): the means
    of the planner's load and SLO correction (from the reasons) and of the
    window's measured signals, live and offline."""
    planner = arg("--planner", "kvgate-noprewarm")
    off = {}
    for line in open(trace):
        m = TRACE.match(line)
        if m and m.group(1) == planner:
            off[int(m.group(2))] = [float(v) for v in m.groups()[2:]]
    pairs = []
    for d in live.get("decisions", []):
        m, sg = LIVE_LOAD.search(d["reason"]), d.get("signals")
        if not m or not sg or d["t"] < since:
            continue
        lv = [float(m.group(1)), float(m.group(2))] + [sg.get(k) for k in SIG[2:]]
        near = sorted((k for k in off if abs(k - d["t"]) <= interval / 2), key=lambda k: abs(k - d["t"]))
        if near and None not in lv:
            pairs.append((lv, off[near[0]]))
    out = {"decisions": len(pairs), "from_s": since}
    for i, k in enumerate(SIG):
        if pairs:
            out[k] = {"live": round(sum(p[0][i] for p in pairs) / len(pairs), 4),
                      "offline": round(sum(p[1][i] for p in pairs) / len(pairs), 4)}
    return out


def traces(rows, live, interval):
    """The desired-replica traces offline and live: one pool's, or the PD
    day's per pool (under "pools")."""
    day = float(live["day_secs"])
    full_day = float(arg("--day-secs", 0)) or None
    n = len(rows)
    # The offline CSV's hours are of the whole day the bench ran.
    span = full_day or float(live.get("header", {}).get("day", {}).get("day_secs", 0))
    if not span:
        print("agree_compare: the offline day's length is unknown (--day-secs S)", file=sys.stderr)
        sys.exit(2)
    step = span / n

    tick = float(live.get("header", {}).get("day", {}).get("tick_secs", 5))
    hp = live.get("header", {}).get("pools")
    if hp:  # the PD day: a trace per pool (the CSV's p_ and d_ columns)
        out = {"pools": {}}
        for q in hp:
            col = ("p_" if q["role"] == "prefill" else "d_") + "desired"
            smp = [dict(x, desired=x["pools"][q["name"]]["desired"]) for x in live["samples"]
                   if q["name"] in x.get("pools", {})]
            out["pools"][q["name"]] = trace(rows, col, smp, q["first_replicas"], tick, step,
                                            interval, day)
        return out
    first = live.get("first_replicas")
    samples = [s for s in live["samples"] if "desired" in s]
    return trace(rows, "desired", samples, first, tick, step, interval, day)


def trace(rows, col, samples, first, tick, step, interval, day):
    """One pool's offline (CSV column col) and live (samples' desired)
    traces read at each interval's middle, and where each changes."""
    n = len(rows)

    def offline_at(t):
        # A point holds the desired of the first tick at or after its end:
        # the decision in force at t is the last tick's, T, found in the
        # point that ends just before T (the day's first replicas before
        # the first tick).
        T = int(t / tick + 1e-9) * tick
        if T <= 0:
            return first if first is not None else int(float(rows[0][col]))
        i = min(n - 1, max(0, int((T - 1e-6) / step)))
        return int(float(rows[i][col]))

    def live_at(t):
        v = None
        for s in samples:
            if s["t"] > t:
                break
            v = s["desired"]
        return v

    out, k = [], 0
    while (k + 1) * interval <= day + 1e-9:
        t = (k + 0.5) * interval
        a, b = offline_at(t), live_at(t)
        out.append({"t": t, "offline": a, "live": b})
        k += 1
    seen = [x for x in out if x["live"] is not None]
    within = sum(1 for x in seen if abs(x["live"] - x["offline"]) <= 1)
    exact = sum(1 for x in seen if x["live"] == x["offline"])
    share = within / len(out) if out else None
    res = {
        "intervals": len(out), "interval_secs": interval, "live_unknown": len(out) - len(seen),
        "within_one": within, "within_one_share": round(share, 4) if share is not None else None,
        "exact_share": round(exact / len(out), 4) if out else None,
        "max_abs_diff": max((abs(x["live"] - x["offline"]) for x in seen), default=None),
        "mean_desired_offline": round(sum(x["offline"] for x in out) / len(out), 3) if out else None,
        "mean_desired_live": round(sum(x["live"] for x in seen) / len(seen), 3) if seen else None,
    }
    # Where each trace changes: (time s, from, to); offline at the tick that
    # closed the point.
    res["changes_offline"], res["changes_live"] = [], []
    closed = lambda i: math.ceil((i + 1) * step / tick - 1e-9) * tick
    prev = first if first is not None else int(float(rows[0][col]))
    for i in range(n):
        b = int(float(rows[i][col]))
        if b != prev and closed(i) <= day:
            res["changes_offline"].append([closed(i), prev, b])
        prev = b
    for x, y in zip(samples, samples[1:]):
        if x["desired"] != y["desired"] and y["t"] < day:
            res["changes_live"].append([y["t"], x["desired"], y["desired"]])
    res["trace"] = out
    return res


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    off_csv, off_json, live_json = sys.argv[1:4]
    planner = arg("--planner", "kvgate-noprewarm")
    interval = float(arg("--interval", 15))
    live = json.load(open(live_json))
    rows = [r for r in csv.DictReader(open(off_csv)) if r["planner"] == planner]
    offj = [r for r in json.load(open(off_json)) if r["planner"] == planner]
    if not rows or not offj:
        print(f"agree_compare: planner {planner} not in {off_csv} / {off_json}", file=sys.stderr)
        sys.exit(2)
    res = traces(rows, live, interval)
    slo_off = offj[0]["slo_attainment"]
    slo_live = live["slo_attainment"]
    res.update(slo_offline=round(slo_off, 4), slo_live=slo_live,
               slo_diff_points=round(100 * (slo_live - slo_off), 2) if slo_live is not None else None)
    if "--offline-trace" in sys.argv:
        res["signals"] = signals(arg("--offline-trace", ""), live, interval,
                                 float(arg("--signals-from", 150)))
    each = res["pools"] if "pools" in res else {"": res}
    shares = [r["within_one_share"] for r in each.values()]
    res["trace_met"] = all(x is not None and x >= 0.95 for x in shares)
    res["slo_met"] = res["slo_diff_points"] is not None and abs(res["slo_diff_points"]) <= 1
    outs = {k: r.pop("trace") for k, r in each.items()}
    print(json.dumps(res))
    for k, out in outs.items():
        for x in out:
            if x["live"] != x["offline"]:
                print(f"  {k + ' ' if k else ''}t {x['t']:6.1f} s: offline {x['offline']}, "
                      f"live {x['live']}")
    if "--json" in sys.argv:
        for k, r in each.items():
            r["trace"] = outs[k]
        json.dump(res, open(arg("--json", ""), "w"), indent=1)


main()
