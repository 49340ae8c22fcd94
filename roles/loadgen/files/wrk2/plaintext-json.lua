-- TechEmpower's plaintext and JSON tests: GET /plaintext and GET /json in turn. Thread `id`'s n-th
-- request is /plaintext when n + id is even, so each thread alternates and neighbouring threads are
-- out of step: half of each in every stretch. Both requests are built once per thread, in init().
local script_dir = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
local perflab = dofile(script_dir .. "perflab.lua")

function setup(thread)
   perflab.setup(thread)
end

-- Thread-local state (`id` comes from setup).
count_plaintext = 0
count_json = 0
local n = 0
local plaintext, json

-- init() runs in each thread after wrk has set the Host header: the requests carry it.
function init(args)
   plaintext = wrk.format("GET", "/plaintext")
   json = wrk.format("GET", "/json")
end

function request()
   local req
   if (n + id) % 2 == 0 then
      count_plaintext = count_plaintext + 1
      req = plaintext
   else
      count_json = count_json + 1
      req = json
   end
   n = n + 1
   return req
end

function done(summary, latency, requests)
   perflab.report({ "plaintext", "json" })
   perflab.write_percentiles(summary, latency)
end
