"""What the live miniatures (bench/autoscale/live_ramp.py, agree_replay.py)
read of a gateway: one streamed /v1/completions request (the status, the
worker kvgate picked (x-kvgate-worker), the wall times of the first and last
chunk carrying text, the number of such chunks (tokens: a sim sends one a
chunk), and whether the stream ended with [DONE]), an autoscale
pool's state; and the gateway process stopped. Standard library only."""
import http.client, json, subprocess, time, urllib.request


def get(url, t=2):
    with urllib.request.urlopen(url, timeout=t) as r:
        return json.loads(r.read())


def pool_state(base, i=0):
    """Pool i (the first by default) of GET base/autoscale: desired, ready, starting,
    draining and its newest decision ({"at_s", "reason", "signals": the
    window's measured arrival rate, lengths, cache hit, TTFT and ITL p90 and
    SLO-miss share as read with it}, None before one)
    (raises when the gateway does not answer)."""
    p = get(base + "/autoscale")["pools"][i]
    sg = p["signals"]
    dec = p.get("decisions") or [None]
    keep = ("arrival_rate", "isl", "osl", "cache_hit", "ttft_p90_s", "itl_p90_s", "slo_miss")
    return {"desired": p["desired"], "ready": sg["ready"], "starting": sg["starting"],
            "draining": sg["draining"],
            "decision": {"at_s": dec[0]["at_s"], "reason": dec[0]["reason"],
                         "signals": {k: sg.get(k) for k in keep}} if dec[0] else None}


def stream(port, body, timeout):
    """POSTs body (a JSON string) to 127.0.0.1:port and reads the SSE
    stream to its end; never raises (a failure is in "error")."""
    o = {"status": None, "worker": None, "first_at": None, "last_at": None, "tokens": 0,
         "done": False, "error": None}
    try:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
        c.request("POST", "/v1/completions", body, {"content-type": "application/json"})
        resp = c.getresponse()
        o["status"] = resp.status
        o["worker"] = resp.getheader("x-kvgate-worker")
        while True:
            line = resp.readline()
            if not line:
                break
            line = line.strip()
            if not line.startswith(b"data:"):
                continue
            data = line[5:].strip()
            if data == b"[DONE]":
                o["done"] = True
                break
            try:
                ch = json.loads(data).get("choices")
            except (ValueError, AttributeError):
                continue
            if ch and ch[0].get("text"):
                now = time.time()
                o["first_at"] = o["first_at"] or now
                o["last_at"] = now
                o["tokens"] += 1
        c.close()
    except Exception as e:
        o["error"] = str(e)[:80]
    return o


def stop_gateway(proc, grace):
    """SIGTERM to proc (the gateway, whose sims die with it), SIGKILL after
    grace seconds; reaped either way."""
    proc.terminate()
    try:
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
