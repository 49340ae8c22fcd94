-- Report 2: GET /hello/{latency} with a server-side delay of LATENCY_MS. One fixed request:
-- wrk2 builds it once, so the script costs nothing per request.
local script_dir = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
local perflab = dofile(script_dir .. "perflab.lua")

wrk.method = "GET"
wrk.path = "/hello/" .. (os.getenv("LATENCY_MS") or "100")

function done(summary, latency, requests)
   perflab.write_percentiles(summary, latency)
end
