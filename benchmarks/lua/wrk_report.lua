-- wrk script for the suite: optional pipelining and a JSON summary.
--
-- WRK_PIPELINE=N (default 1) sends N copies of the request in one write; wrk parses
-- and counts every response, so requests/s stays a count of responses. With N = 1
-- no `request` function is defined, so wrk keeps its static (fastest) request path.
-- `done` prints one line starting with "WRK_JSON " for the runner to parse.

local depth = tonumber(os.getenv("WRK_PIPELINE") or "1")
local batch = nil

-- WRK_BODY=FILE: POST that file's bytes as JSON (set here, before any request is
-- made, so the static request path still serves it).
local body_file = os.getenv("WRK_BODY")
if body_file then
   local fh = assert(io.open(body_file, "rb"))
   wrk.method = "POST"
   wrk.body = fh:read("*a")
   fh:close()
   wrk.headers["Content-Type"] = "application/json"
end

function init(args)
   if depth > 1 then
      batch = string.rep(wrk.format(), depth)
   end
end

if depth > 1 then
   function request()
      return batch
   end
end

function done(summary, latency, requests)
   local e = summary.errors
   io.write(string.format(
      'WRK_JSON {"duration_us":%d,"requests":%d,"bytes":%d,' ..
      '"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d},' ..
      '"latency_us":{"p50":%d,"p90":%d,"p99":%d,"max":%d}}\n',
      summary.duration, summary.requests, summary.bytes,
      e.connect, e.read, e.write, e.status, e.timeout,
      latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max))
end
