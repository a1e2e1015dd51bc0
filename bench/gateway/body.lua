-- wrk script for bench/gateway/cost.sh: POSTs bodies PRE..n..POST from the
-- file in env BODIES (one "PRE<TAB>POST" per line), cycling, n unique per
-- request; prints one parseable line of results at the end. With env
-- PACE_MS each connection waits that many milliseconds between requests (a
-- latency probe at a fixed rate instead of a closed loop at saturation).
local pres, posts = {}, {}
local counter = 0
local tid = 0
function setup(thread) tid = tid + 1; thread:set("tid", tid) end
function init(args)
  for line in io.lines(os.getenv("BODIES")) do
    local a, b = line:match("^(.-)\t(.*)$")
    if a then pres[#pres + 1] = a; posts[#posts + 1] = b end
  end
  counter = (tid or 0) * 100000000 + math.random(1, 1000000) * 10
  wrk.method = "POST"
  wrk.headers["Content-Type"] = "application/json"
end
local pace = tonumber(os.getenv("PACE_MS") or "")
if pace then function delay() return pace end end
function request()
  counter = counter + 1
  local i = counter % #pres + 1
  return wrk.format(nil, os.getenv("WRK_PATH") or "/v1/chat/completions", nil,
                    pres[i] .. "q" .. counter .. posts[i])
end
function done(summary, latency, requests)
  io.write(string.format("RESULT reqs=%d secs=%.3f errs=%d p50=%.3f p99=%.3f\n",
    summary.requests, summary.duration / 1e6,
    summary.errors.status + summary.errors.connect + summary.errors.read +
    summary.errors.write + summary.errors.timeout,
    latency:percentile(50) / 1000, latency:percentile(99) / 1000))
end
