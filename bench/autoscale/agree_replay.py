#!/usr/bin/env python3
"""Live replay of an offline autoscaling day (bench/results/autoscale-agreement.md).

Reads the JSONL `kvgate bench --scenario diurnal ... --arrivals-out FILE`
writes (src/bench/scale/scale_export.c): a header line with the day's setup,
then one line per request from the offline run's own generator. Starts
`kvgate serve --autoscale` with the local actuator and the header's pool
(the same planner options, profile, SLO, clocks and start-up model scale as
the offline run; kvgate sims of the same engine profile at --speed 1, so an
engine second is a planner second as offline), waits for the day's first
replicas, then sends every request at its arrival time: /v1/completions,
streamed, max_tokens its output tokens with ignore_eos (as the offline
engine runs it), the prompt its prefix's shared text (one per prefix index,
the same for every request of that prefix) and unique text after it, one
byte per token with the sim's byte tokenizer (its BOS is the first token).
Per request: TTFT (send to the first chunk carrying text), the mean ITL
((last - first) / (tokens - 1), vLLM's), tokens and whether the stream ended
with [DONE]; good when TTFT and ITL are within the targets and it ended.
Every second: /autoscale's desired, ready, starting and draining, and each
planner decision's reason once (the evidence where live and offline differ).

Usage: agree_replay.py KVGATE_BIN ARRIVALS.jsonl OUT.json [--limit-secs S] [--max-tokens N]
(--limit-secs: replay only the requests arriving in the first S seconds;
--max-tokens: cap each request's output tokens; both for the smoke test's
tiny day, tests/integration/bench_agree_smoke.sh, never for a comparison).
SIGTERM or SIGINT stop the gateway (and with it its sims) before exiting.
Its temporary folder (/tmp/kvg-agree-*: the gateway's config and log) is
removed at the end of a run that succeeded, kept (its path printed) when
the run failed or KEEP=1 is set."""
import json, os, random, shutil, signal, subprocess, sys, tempfile, threading, time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "fixtures"))
from free_port import free_port  # noqa: E402

from live_client import get, pool_state, stop_gateway, stream  # noqa: E402  (beside this script)

ALPHA = "abcdefghijklmnopqrstuvwxyz "


def text(seed, n):
    r = random.Random(seed)
    return "".join(r.choice(ALPHA) for _ in range(max(0, n)))


def pools_of(h):
    """The header's pools: the aggregated day's one ("agg"), or the PD
    day's prefill and decode pools, each with its first ready replicas."""
    if "pools" in h:
        return h["pools"]
    return [dict(h["pool"], name="agg", role="aggregated", first_replicas=h["day"]["first_replicas"])]


def autoscale_yaml(binp, h, base, nports):
    d = h["day"]
    # The start: fixed, as the offline --startup-secs S, and the start-up
    # model scaled alike (cold_start_scale = --startup-scale), so the
    # planners' prior lead time is the same in both. The local actuator sees
    # a replica healthy at its first tick after /health answers (its starts
    # are asked at ticks too), so a sim healthy a second before S (S a whole
    # number of ticks) is counted ready at S, as offline, and teaches the
    # start-up model S.
    # PD: each replica its pool's role, a prefill its own KV side channel
    # (the actuator's second port: the range above ports').
    cmd = (f"{binp} sim --host {{host}} --port {{port}} --model m --profile {d['profile']} "
           f"--speed 1 --cold-start-secs {d['startup_secs'] - 1}"
           + (" --role {role} --side-channel-port {side_port}" if "pools" in h else ""))
    node = "cold" if d["cold_share"] >= 1 else "warm"
    pools = ""
    for p in pools_of(h):
        keys = "\n".join(f"    {k}: {p[k]}" for k in (
            "min_replicas", "max_replicas", "ttft_secs", "itl_secs", "forecast_window_secs",
            "down_hold_secs", "headroom", "prefill_tokens_per_sec", "decode_tokens_per_sec",
            "ttft_idle_secs", "itl_idle_secs", "itl_per_seq_secs"))
        pools += f"""  - name: {p['name']}
    role: {p['role']}
    model: {d['startup_model']}
    planner: kvgate
    node: {node}
    cold_share: {d['cold_share']}
    fetch_share: {d['fetch_share']}
{keys}
"""
    return f"""interval_secs: {d['tick_secs']}
actuator: local
local:
  command: "{cmd}"
  ports: {base}-{base + nports - 1}
  cold_start_scale: {d['startup_scale']}
  prewarm_prompts: 0
  slow_start_secs: 0
  drain_timeout_secs: {d['drain_secs']}
pools:
{pools}"""


def main():
    binp, arrivals, out = sys.argv[1], sys.argv[2], sys.argv[3]
    limit = float(sys.argv[sys.argv.index("--limit-secs") + 1]) if "--limit-secs" in sys.argv else None
    cap = int(sys.argv[sys.argv.index("--max-tokens") + 1]) if "--max-tokens" in sys.argv else None
    lines = open(arrivals).read().splitlines()
    h = json.loads(lines[0])
    reqs = [json.loads(l) for l in lines[1:]]
    if limit is not None:
        reqs = [r for r in reqs if r["t"] < limit]
    for r in reqs if cap else ():
        r["output_tokens"] = min(r["output_tokens"], cap)
    d, pools = h["day"], pools_of(h)
    p = pools[0]
    ticks = d["startup_secs"] / d["tick_secs"]
    if (d["cold_share"] not in (0, 1) or d["fetch_share"] != 0 or d["startup_secs"] < 2
            or abs(ticks - round(ticks)) > 1e-9):
        sys.exit("agree_replay: the day needs --startup-secs S (>= 2, whole ticks of 5 s), "
                 "--cold-share 0 or 1 and --fetch-share 0 (one start class, one fixed start)")
    for q in pools:
        if q["first_replicas"] != q["min_replicas"]:
            # Live, min_replicas is what stands ready before the first request.
            sys.exit(f"agree_replay: the offline day starts with {q['first_replicas']} replicas "
                     f"ready in pool {q['name']}: run it with --min-replicas {q['first_replicas']}")
    day = min(d["day_secs"], limit) if limit is not None else d["day_secs"]
    ttft_t, itl_t = p["ttft_secs"], p["itl_secs"]  # one SLO for every pool
    nports = sum(q["max_replicas"] for q in pools) + 2
    gw, base = free_port(), free_port(run=2 * nports)
    tmp = tempfile.mkdtemp(prefix="kvg-agree-")
    open(f"{tmp}/as.yaml", "w").write(autoscale_yaml(binp, h, base, nports))
    log = open(f"{tmp}/serve.log", "w")
    # The gateway is stopped in the finally below, also on a signal.
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: sys.exit(1))
    # Scrapes every 500 ms (serve's default --load-monitor-interval-ms, the
    # offline scrape_secs); health checks every 0.2 s so a replica counts
    # ready within 0.2 s of its /health, as offline at its ready time.
    failed = True  # until the day is replayed: the folder is then kept
    sv = subprocess.Popen([binp, "serve", "--port", str(gw), "--autoscale", f"{tmp}/as.yaml",
                           "--health-check-interval-secs", "0.2",
                           "--queue-timeout-secs", str(d["timeout_secs"])]
                          + (["--vllm-pd-disaggregation"] if "pools" in h else []),
                          stdout=log, stderr=log)
    G = f"http://127.0.0.1:{gw}"
    res, lock = [], threading.Lock()
    samples, decisions, stop = [], [], threading.Event()
    prefixes = {}
    first = sum(q["first_replicas"] for q in pools)
    try:
        # The offline day starts with first_replicas ready (per pool): wait
        # for as many here (min_replicas brings them up), bounded.
        ready = 0
        for _ in range(int(4 * (d["startup_secs"] + 10) * 10)):
            try:
                up = [pool_state(G, i)["ready"] for i in range(len(pools))]
                ready = sum(up)
                if all(u >= q["first_replicas"] for u, q in zip(up, pools)):
                    break
            except Exception:
                pass
            time.sleep(0.1)
        if ready < first:
            raise SystemExit(f"agree_replay: {ready} of the day's first {first} replicas ready")
        for r in reqs:
            g = r["prefix"]
            if g not in prefixes:
                # BOS + prefix_tokens - 1 bytes: prefix_tokens shared tokens.
                prefixes[g] = text(1_000_003 * (g + 1), r["prefix_tokens"] - 1)
        t0 = time.time()

        def one(k, r):
            uniq = f" {k} " + text(k + 7, r["prompt_tokens"] - r["prefix_tokens"] - len(f" {k} "))
            body = json.dumps({"model": "m", "stream": True, "max_tokens": r["output_tokens"],
                               "ignore_eos": True, "prompt": prefixes[r["prefix"]] + uniq})
            sent = time.time()
            rec = {"k": k, "t": r["t"], "lag": round(sent - t0 - r["t"], 4), "ttft": None,
                   "itl": None, "tokens": 0, "done": False, "status": None}
            st = stream(gw, body, d["timeout_secs"] + 30)
            rec.update(status=st["status"], done=st["done"], tokens=st["tokens"])
            if st["error"]:
                rec["error"] = st["error"]
            first_at, last_at = st["first_at"], st["last_at"]
            if first_at:
                rec["ttft"] = round(first_at - sent, 4)
                n = rec["tokens"]
                rec["itl"] = round((last_at - first_at) / (n - 1), 5) if n > 1 else 0.0
            rec["good"] = bool(rec["done"] and rec["ttft"] is not None and rec["ttft"] <= ttft_t
                               and rec["itl"] <= itl_t)
            with lock:
                res.append(rec)

        def sampler():
            n = 0
            while not stop.is_set() and n < int(day) + 600:
                n += 1
                s = {"t": round(time.time() - t0, 2)}
                try:
                    for i, q in enumerate(pools):
                        ps = pool_state(G, i)
                        dec = ps.pop("decision")
                        if i == 0:
                            s.update(ps)
                        if "pools" in h:  # the PD day: each pool's, by name
                            s.setdefault("pools", {})[q["name"]] = ps
                        # Each planner decision once, at the replay's clock.
                        seen = [x for x in decisions if x.get("pool", "agg") == q["name"]]
                        if dec and (not seen or seen[-1]["at_s"] != dec["at_s"]):
                            decisions.append(dict(dec, t=s["t"], pool=q["name"]))
                except Exception as e:
                    s["error"] = str(e)[:80]
                samples.append(s)
                time.sleep(max(0, n - (time.time() - t0)))

        smp = threading.Thread(target=sampler)
        smp.start()
        threads = []
        for k, r in enumerate(reqs):
            w = t0 + r["t"] - time.time()
            if w > 0:
                time.sleep(w)
            th = threading.Thread(target=one, args=(k, r), daemon=True)
            th.start()
            threads.append(th)
        for th in threads:
            th.join(max(1, t0 + day + d["timeout_secs"] + 60 - time.time()))
        while time.time() - t0 < day:
            time.sleep(0.2)
        stop.set()
        smp.join()
        lead = None
        try:
            lead = get(G + "/autoscale")["pools"][0].get("lead_time")
        except Exception:
            pass
        failed = False
    finally:
        stop_gateway(sv, 20)
        log.close()
        if failed:
            print(f"agree_replay: failed; kept {tmp}", file=sys.stderr)
    keep = os.environ.get("KEEP") == "1"
    res.sort(key=lambda x: x["k"])
    lags = sorted(r["lag"] for r in res)
    o = {"arrivals": arrivals, "header": h, "day_secs": day, "requests": len(reqs), "answered": len(res),
         "first_replicas": first, "ready_at_start": ready,
         "slo_attainment": round(sum(r["good"] for r in res) / len(reqs), 4) if reqs else None,
         "streams_not_done": sum(1 for r in res if not r["done"]),
         "send_lag_p99_s": lags[min(len(lags) - 1, int(0.99 * len(lags)))] if lags else None,
         "lead_time": lead, "tmp": tmp, "serve_log": f"{tmp}/serve.log" if keep else None,
         "samples": samples, "decisions": decisions, "results": res}
    with open(out, "w") as f:
        json.dump(o, f)
    if keep:
        print(f"agree_replay: kept {tmp}", file=sys.stderr)
    else:
        shutil.rmtree(tmp, ignore_errors=True)
    print(json.dumps({k: v for k, v in o.items() if k not in ("samples", "decisions", "results")}))


main()
