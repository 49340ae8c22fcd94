-- Report 3: GET /greeting/{name}. One fixed request: wrk2 builds it once.
local script_dir = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
local perflab = dofile(script_dir .. "perflab.lua")

wrk.method = "GET"
wrk.path = "/greeting/" .. (os.getenv("GREETING_NAME") or "perflab")

function done(summary, latency, requests)
   perflab.write_percentiles(summary, latency)
end
