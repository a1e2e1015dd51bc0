#!/usr/bin/env python3
"""Live miniature of the local actuator's prewarm (bench/results/autoscale-live.md).

kvgate serve --autoscale with actuator local starts kvgate sims (profile
qwen3-32b-h100-tp2: prefill cost makes the cache matter) from zero; a
closed-loop client sends prompts over 8 shared 6000-token prefixes; the
kvgate planner scales 1 -> 2 under that load. For the replica that joins,
from the client's side (x-kvgate-worker, usage.cached_tokens): the latency
(max_tokens 1: time to first token) and cached share of its first 20
requests, the time from its /health to its first request, and to 5 requests in a
row with >= 90% of the prompt cached. Phase 1: one client, a request a second, for 8 s on the one replica; phase 2: six clients.
Run with prewarm_prompts 8 and 0, slow start 3 s both.
Usage: live.py KVGATE_BIN SEED OUT_JSON [POLICY (least_load)]"""
import json, os, random, subprocess, sys, tempfile, threading, time, urllib.request

BIN, SEED, OUT = sys.argv[1], int(sys.argv[2]), sys.argv[3]
POLICY = sys.argv[4] if len(sys.argv) > 4 else "least_load"

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "fixtures"))
from free_port import free_port  # noqa: E402

def get(url, t=2):
    with urllib.request.urlopen(url, timeout=t) as r:
        return json.loads(r.read())

def run(prewarm):
    rnd = random.Random(SEED)
    gw = free_port(); base = free_port(run=6)
    tmp = tempfile.mkdtemp(prefix="kvg-live-")
    yaml = f"""interval_secs: 0.5
actuator: local
local:
  command: "{BIN} sim --host {{host}} --port {{port}} --model m --profile qwen3-32b-h100-tp2 --speed 10 --cold-start-secs {{cold_start}}"
  ports: {base}-{base + 5}
  cold_start_scale: 0.03
  prewarm_prompts: {prewarm}
  slow_start_secs: 3
pools:
  - name: agg
    model: qwen2.5-7b
    planner: kvgate
    interval_secs: 0.5
    min_replicas: 1
    max_replicas: 2
    prefill_tokens_per_sec: 20000
    decode_tokens_per_sec: 1000
    node: warm
    down_hold_secs: 600
"""
    open(f"{tmp}/as.yaml", "w").write(yaml)
    log = open(f"{tmp}/serve.log", "w")
    sv = subprocess.Popen([BIN, "serve", "--port", str(gw), "--autoscale", f"{tmp}/as.yaml",
                           "--health-check-interval-secs", "0.2", "--block-size", "64", "--policy", POLICY], stdout=log, stderr=log)
    G = f"http://127.0.0.1:{gw}"
    try:
        for _ in range(100):
            try:
                get(G + "/health"); break
            except Exception:
                time.sleep(0.1)
        prefixes = ["".join(rnd.choice("abcdefghij ") for _ in range(6000)) for _ in range(8)]
        res, lock, stop, heavy = [], threading.Lock(), threading.Event(), threading.Event()
        def client(k):
            r = random.Random(SEED * 100 + k)
            while not stop.is_set():
                i = r.randrange(8)
                body = json.dumps({"model": "m", "prompt": prefixes[i] + f" q{r.randrange(10**6)}",
                                   "max_tokens": 1}).encode()
                t0 = time.time()
                try:
                    req = urllib.request.Request(G + "/v1/completions", body,
                                                 {"content-type": "application/json"})
                    with urllib.request.urlopen(req, timeout=30) as resp:
                        j = json.loads(resp.read()); w = resp.headers.get("x-kvgate-worker")
                    u = j["usage"]
                    cached = (u.get("prompt_tokens_details") or {}).get("cached_tokens", 0)
                    with lock:
                        res.append((t0, time.time() - t0, w, cached / u["prompt_tokens"]))
                except Exception:
                    time.sleep(0.05)
                if k == 0 and not heavy.is_set():
                    time.sleep(1)  # phase 1's trickle
        ths = [threading.Thread(target=client, args=(k,)) for k in range(6)]
        ths[0].start()  # phase 1: light load, one replica fills its cache
        first, new, healthy_at = None, None, None
        for _ in range(200):
            try:
                ws = [w for w in get(G + "/workers")["workers"] if w.get("healthy")]
            except Exception:
                ws = []
            if len(ws) == 1:
                first = ws[0]["url"]; break
            time.sleep(0.05)
        time.sleep(8)
        heavy.set()
        for t in ths[1:]: t.start()  # phase 2: the load that asks for a second
        deadline = time.time() + 60
        while time.time() < deadline and healthy_at is None:
            try:
                ws = [w for w in get(G + "/workers")["workers"] if w.get("healthy")]
            except Exception:
                ws = []
            if first and len(ws) >= 2:
                new = [w["url"] for w in ws if w["url"] != first][0]; healthy_at = time.time()
            time.sleep(0.05)
        time.sleep(20)
        stop.set()
        for t in ths: t.join()
        mine = sorted(r for r in res if r[2] == new and r[0] >= (healthy_at or 0))
        old = [r for r in res if r[2] == first and r[0] >= (healthy_at or 0)]
        rec = None
        for i in range(len(mine) - 4):
            if all(m[3] >= 0.9 for m in mine[i:i + 5]):
                rec = mine[i][0] - healthy_at; break
        f20 = mine[:20]
        mean = lambda xs: sum(xs) / len(xs) if xs else None
        return {"prewarm_prompts": prewarm, "new_replica_requests": len(mine),
                "ttft_first20_mean_s": mean([m[1] for m in f20]),
                "cached_first20_mean": mean([m[3] for m in f20]),
                "old_replica_ttft_mean_s": mean([o[1] for o in old]),
                "old_replica_cached_mean": mean([o[3] for o in old]),
                "hit_recovery_s": rec,
                "first_request_after_s": mine[0][0] - healthy_at if mine else None,
                "prewarm_log": [l.strip()[25:] for l in open(f"{tmp}/serve.log") if "prewarmed" in l]}
    finally:
        sv.terminate()
        try: sv.wait(15)
        except subprocess.TimeoutExpired: sv.kill(); sv.wait()

out = [run(8), run(0)]
json.dump(out, open(OUT, "w"), indent=1)
print(json.dumps(out, indent=1))
