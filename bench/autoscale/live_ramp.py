#!/usr/bin/env python3
"""Live miniature of a load ramp up and down (bench/results/autoscale-live.md).

kvgate serve --autoscale with actuator local starts kvgate sims (profile
qwen3-32b-h100-tp2 at --speed, cold starts from the start-up model x a
scale, a few seconds). An open-loop client (Poisson arrivals) ramps its rate
from LOW to PEAK over RAMP_S, holds HOLD_S, ramps down to zero over DOWN_S,
then stays idle TAIL_S. Every request streams /v1/completions over one of
16 shared prefixes plus a unique suffix; its TTFT is the time to the first
chunk carrying text, and it is good if that is within the pool's ttft_secs.
Every second: the offered rate, /autoscale's ready/starting/draining and
desired, /workers' healthy and draining. At the end: SLO attainment, the
first second the 10 s rolling TTFT p90 passed the target, each replica's
start/healthy/prewarm/drain/stop from the log, and every stream that did not
end with [DONE] (cut), by worker.
Usage: live_ramp.py KVGATE_BIN PLANNER OUT_PREFIX [SEED]
PLANNER: kvgate | queue (HPA stabilization on the miniature's clock, 15 s) | queue-300
(HPA's 300 s) | static (one replica: where the SLO breaks unscaled)
Writes OUT_PREFIX.json and OUT_PREFIX.svg."""
import calendar, json, math, os, random, re, subprocess, sys, tempfile, threading, time

BIN, PLANNER, OUT = sys.argv[1], sys.argv[2], sys.argv[3]
SEED = int(sys.argv[4]) if len(sys.argv) > 4 else 1
LOW, PEAK = 1.0, 24.0  # requests/s
RAMP_S, HOLD_S, DOWN_S, TAIL_S = 60, 40, 40, 40
if os.environ.get("KVG_RAMP"):  # "LOW,PEAK,RAMP,HOLD,DOWN,TAIL": a shorter or other shape
    _v = [float(v) for v in os.environ["KVG_RAMP"].split(",")]
    LOW, PEAK = _v[0], _v[1]
    RAMP_S, HOLD_S, DOWN_S, TAIL_S = (int(v) for v in _v[2:6])
TTFT = 1.0  # the pool's ttft_secs: the client's target too
ISL, UNIQ, OSL, NPREFIX = 2000, int(os.environ.get("KVG_RAMP_UNIQ", 3000)), 32, 16


sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "fixtures"))
from free_port import free_port  # noqa: E402

from live_client import get, pool_state, stop_gateway, stream  # noqa: E402  (beside this script)


def rate_at(t):
    if t < RAMP_S:
        return LOW + (PEAK - LOW) * t / RAMP_S
    t -= RAMP_S
    if t < HOLD_S:
        return PEAK
    t -= HOLD_S
    if t < DOWN_S:
        return PEAK * (1 - t / DOWN_S)
    return 0.0


def main():
    rnd = random.Random(SEED)
    gw = free_port()
    base = free_port(run=8)
    tmp = tempfile.mkdtemp(prefix="kvg-ramp-")
    # The kvgate planner's window on the miniature's clock (start-ups x 0.05:
    # 300 s x 0.05), as down_hold_secs below is.
    # The same for queue's HPA scale-down stabilization (300 s x 0.05);
    # queue-300 keeps HPA's 300 s. Every planner's signal window (arrival
    # rate, lengths, latencies: 30 s by default) on that clock too: 1.5 s,
    # two whole 1 s ticks.
    plan = {"kvgate": "planner: kvgate\n    forecast_window_secs: 15",
            "queue": "planner: queue\n    queue_preset: llm-d\n    queue_down_window_secs: 15",
            "queue-300": "planner: queue\n    queue_preset: llm-d",
            "static": "planner: static\n    static_replicas: 1"}[PLANNER]
    yaml = f"""interval_secs: 1
actuator: local
local:
  command: "{BIN} sim --host {{host}} --port {{port}} --model m --profile qwen3-32b-h100-tp2 --speed 10 --cold-start-secs {{cold_start}}"
  ports: {base}-{base + 7}
  cold_start_scale: 0.05
  prewarm_prompts: 8
  slow_start_secs: 3
  drain_timeout_secs: 30
pools:
  - name: agg
    model: qwen2.5-7b
    {plan}
    interval_secs: 1
    min_replicas: 1
    max_replicas: 6
    ttft_secs: {TTFT}
    prefill_tokens_per_sec: 20000
    decode_tokens_per_sec: 4000
    node: warm
    down_hold_secs: 15
    signal_window_secs: 2
"""
    open(f"{tmp}/as.yaml", "w").write(yaml)
    logf = f"{tmp}/serve.log"
    log = open(logf, "w")
    sv = subprocess.Popen([BIN, "serve", "--port", str(gw), "--autoscale", f"{tmp}/as.yaml",
                           "--health-check-interval-secs", "0.2", "--block-size", "64"],
                          stdout=log, stderr=log)
    G = f"http://127.0.0.1:{gw}"
    res, lock = [], threading.Lock()
    try:
        for _ in range(200):
            try:
                if any(w.get("healthy") for w in get(G + "/workers")["workers"]):
                    break
            except Exception:
                pass
            time.sleep(0.1)
        prefixes = ["".join(rnd.choice("abcdefghij ") for _ in range(ISL)) for _ in range(NPREFIX)]
        t0 = time.time()

        def one(k, sent):
            r = random.Random(SEED * 100003 + k)
            body = json.dumps({"model": "m", "stream": True, "max_tokens": OSL,
                               "prompt": prefixes[r.randrange(NPREFIX)] + f" q{k} " +
                               "".join(r.choice("abcdefghij ") for _ in range(UNIQ))})
            rec = {"t": sent - t0, "ttft": None, "done": False, "worker": None, "status": None}
            st = stream(gw, body, 60)
            rec.update(status=st["status"], worker=st["worker"], done=st["done"])
            if st["first_at"]:
                rec["ttft"] = st["first_at"] - sent
            if st["error"]:
                rec["error"] = st["error"]
            with lock:
                res.append(rec)

        samples, stop = [], threading.Event()

        def sampler():
            n = 0
            while not stop.is_set() and n < 600:
                n += 1
                s = {"t": round(time.time() - t0, 1)}
                try:
                    ps = pool_state(G)
                    ps.pop("decision")
                    s.update(ps)
                    ws = get(G + "/workers")["workers"]
                    s.update(healthy=sum(1 for w in ws if w.get("healthy") and not w.get("draining")),
                             wdraining=sum(1 for w in ws if w.get("draining")),
                             inflight=sum(w.get("in_flight", 0) for w in ws))
                except Exception as e:
                    s["error"] = str(e)[:80]
                samples.append(s)
                time.sleep(max(0, (n + 1) - (time.time() - t0)))

        smp = threading.Thread(target=sampler)
        smp.start()
        total = RAMP_S + HOLD_S + DOWN_S
        threads, k, t = [], 0, 0.0
        arrivals = []
        # Open loop: a non-homogeneous Poisson process by thinning at PEAK.
        while True:
            t += rnd.expovariate(PEAK)
            if t >= total:
                break
            if rnd.random() > rate_at(t) / PEAK:
                continue
            d = t0 + t - time.time()
            if d > 0:
                time.sleep(d)
            arrivals.append(t)
            th = threading.Thread(target=one, args=(k, t0 + t), daemon=True)
            th.start()
            threads.append(th)
            k += 1
        for th in threads:
            th.join(90)
        # The tail: idle, for the scale-down.
        while time.time() - t0 < total + TAIL_S:
            time.sleep(0.5)
        stop.set()
        smp.join()
    finally:
        stop_gateway(sv, 15)
    return summarize(res, samples, arrivals, open(logf).read().splitlines(), t0)


def p90(xs):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(math.ceil(0.9 * len(xs))) - 1)] if xs else None


def stamp(line, t0):
    # 2026-12-02T05:19:49.887Z: the log's UTC time
    m = re.match(r"(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)\.(\d+)Z", line)
    if not m:
        return None
    y, mo, d, h, mi, s, frac = m.groups()
    e = calendar.timegm((int(y), int(mo), int(d), int(h), int(mi), int(s)))
    return round(e + float("0." + frac) - t0, 2)


def summarize(res, samples, arrivals, lines, t0):
    total = RAMP_S + HOLD_S + DOWN_S
    good = lambda r: r["ttft"] is not None and r["ttft"] <= TTFT and r["done"]
    phase = lambda r, a, b: [x for x in res if a <= x["t"] < b]
    att = lambda rs: round(sum(1 for r in rs if good(r)) / len(rs), 4) if rs else None
    # The first second the 10 s rolling p90 of TTFT (by arrival) passed the target.
    broke, roll = None, []
    for sec in range(int(total)):
        w = [r["ttft"] if r["ttft"] is not None else 1e9 for r in res if sec - 10 < r["t"] <= sec]
        v = p90(w)
        roll.append(v)
        if broke is None and v is not None and v > TTFT:
            broke = sec
    ev = {}
    for l in lines:
        ts = stamp(l, t0)
        m = re.search(r"started (http://\S+) \(pid \d+, cold start ([\d.]+) s\)", l)
        if m:
            ev.setdefault(m.group(1), {})["started"] = ts
            ev[m.group(1)]["cold_start_s"] = float(m.group(2))
        m = re.search(r"(http://\S+) healthy after ([\d.]+) s", l)
        if m:
            ev.setdefault(m.group(1), {})["healthy"] = ts
        m = re.search(r"prewarmed (http://\S+) with (\d+) .*\((\d+) answered 200\) in ([\d.]+) s", l)
        if m:
            ev.setdefault(m.group(1), {}).update(prewarmed=ts, prewarm_prompts=int(m.group(2)),
                                                 prewarm_ok=int(m.group(3)),
                                                 prewarm_s=float(m.group(4)))
        m = re.search(r"draining (http://\S+) \((\d+) in flight\)", l)
        if m:
            ev.setdefault(m.group(1), {}).update(draining=ts, drain_inflight=int(m.group(2)))
        m = re.search(r"(http://\S+) drained \((\d+) in flight left after ([\d.]+) s\)", l)
        if m:
            ev.setdefault(m.group(1), {}).update(drained=ts, drain_left=int(m.group(2)))
        m = re.search(r"(http://\S+) taken back from draining", l)
        if m:
            ev.setdefault(m.group(1), {})["taken_back"] = ts
        m = re.search(r"start of (http://\S+) given up", l)
        if m:
            ev.setdefault(m.group(1), {})["given_up"] = ts
    for u, e in ev.items():
        e["requests"] = sum(1 for r in res if r["worker"] == u)
        e["cut"] = sum(1 for r in res if r["worker"] == u and not r["done"])
    cut = [r for r in res if not r["done"]]
    ttfts = [r["ttft"] for r in res if r["ttft"] is not None]
    return {
        "planner": PLANNER, "seed": SEED, "ttft_target_s": TTFT, "peak_rps": PEAK, "low_rps": LOW,
        "phases_s": [RAMP_S, HOLD_S, DOWN_S, TAIL_S],
        "requests": len(res),
        "slo_attainment": att(res),
        "slo_attainment_ramp_up": att(phase(res, 0, RAMP_S)),
        "slo_attainment_hold": att(phase(res, RAMP_S, RAMP_S + HOLD_S)),
        "slo_attainment_ramp_down": att(phase(res, RAMP_S + HOLD_S, total)),
        "ttft_p50_s": sorted(ttfts)[len(ttfts) // 2] if ttfts else None,
        "ttft_p90_s": p90(ttfts),
        "slo_broke_at_s": broke,
        "rolling_p90": roll,
        "streams_not_done": len(cut),
        "not_done_examples": cut[:5],
        "status_counts": {str(s): sum(1 for r in res if r["status"] == s)
                          for s in sorted({r["status"] for r in res}, key=str)},
        "replicas": ev,
        "peak_ready": max((s.get("ready", 0) for s in samples), default=0),
        "final": samples[-1] if samples else None,
        "samples": samples,
        "arrivals_per_s": [sum(1 for a in arrivals if sec <= a < sec + 1)
                           for sec in range(int(total))],
        "ttft_by_s": [[round(r["ttft"], 3) if r["ttft"] is not None else None
                       for r in res if sec <= r["t"] < sec + 1] for sec in range(int(total))],
    }


def svg(o, path):
    W, H, L, B = 760, 300, 50, 30
    T = sum(o["phases_s"])
    x = lambda t: L + (W - L - 10) * t / T
    ymax = max(6, o["peak_rps"])
    y = lambda v: H - B - (H - B - 10) * v / ymax
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-size="11">',
           f'<rect width="{W}" height="{H}" fill="white"/>',
           f'<line x1="{L}" y1="{H - B}" x2="{W - 10}" y2="{H - B}" stroke="black"/>',
           f'<line x1="{L}" y1="10" x2="{L}" y2="{H - B}" stroke="black"/>']
    for v in range(0, int(ymax) + 1, 2):
        out.append(f'<text x="{L - 6}" y="{y(v) + 4}" text-anchor="end">{v}</text>')
    for t in range(0, T + 1, 30):
        out.append(f'<text x="{x(t)}" y="{H - B + 14}" text-anchor="middle">{t}s</text>')

    def poly(pts, color, extra=""):
        p = " ".join(f"{x(a):.1f},{y(b):.1f}" for a, b in pts)
        out.append(f'<polyline points="{p}" fill="none" stroke="{color}" {extra}/>')

    poly([(s, v) for s, v in enumerate(o["arrivals_per_s"])], "#999")
    poly([(s["t"], s.get("ready", 0)) for s in o["samples"]], "#1f77b4", 'stroke-width="2"')
    poly([(s["t"], s.get("desired", 0)) for s in o["samples"]], "#2ca02c", 'stroke-dasharray="4 3"')
    poly([(s["t"], s.get("starting", 0)) for s in o["samples"]], "#ff7f0e")
    poly([(s["t"], s.get("draining", 0)) for s in o["samples"]], "#9467bd")
    # A red tick on each second whose 10 s rolling p90 was over the target.
    for s, v in enumerate(o["rolling_p90"]):
        if v is not None and v > o["ttft_target_s"]:
            out.append(f'<rect x="{x(s):.1f}" y="{H - B - 4}" width="2" height="4" fill="red"/>')
    out.append(f'<text x="{L + 8}" y="22">{o["planner"]}: offered req/s (grey), ready (blue), '
               'desired (green dashed), starting (orange), draining (purple), '
               'rolling TTFT p90 over target (red)</text>')
    out.append("</svg>")
    open(path, "w").write("\n".join(out))


o = main()
json.dump(o, open(OUT + ".json", "w"), indent=1)
svg(o, OUT + ".svg")
brief = {k: v for k, v in o.items() if k not in ("samples", "rolling_p90", "ttft_by_s", "arrivals_per_s")}
print(json.dumps(brief, indent=1))
