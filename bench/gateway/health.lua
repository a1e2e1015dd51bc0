-- wrk script for bench/gateway/cost.sh: GET /health, answered by the
-- gateway's own loop (no engine behind it), with the same RESULT line as
-- body.lua: the loop's latency alone, without the engines' queues.
wrk.method = "GET"
function done(summary, latency, requests)
  io.write(string.format("RESULT reqs=%d secs=%.3f errs=%d p50=%.3f p99=%.3f\n",
    summary.requests, summary.duration / 1e6,
    summary.errors.status + summary.errors.connect + summary.errors.read +
    summary.errors.write + summary.errors.timeout,
    latency:percentile(50) / 1000, latency:percentile(99) / 1000))
end
