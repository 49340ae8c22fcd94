-- Zip codes, report 1 done right: a read/write mix that stays constant through the run.
-- Each request draws read or write deterministically against WRITE_RATIO (0..1).
-- Reads GET a seeded zip (10000..49999); writes POST a fresh ZIP+4 key that never repeats:
-- it interleaves the thread id with the thread's write counter, under a prefix per KEY_PHASE.
local script_dir = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
local perflab = dofile(script_dir .. "perflab.lua")

local write_ratio = tonumber(os.getenv("WRITE_RATIO") or "0.5")
local states = { "AL", "CA", "FL", "GA", "IL", "MA", "NY", "OH", "TX", "WA" }
local post_headers = { ["Content-Type"] = "application/json" }

function setup(thread)
   perflab.setup(thread)
end

-- Thread-local state: each wrk thread runs its own copy of this script (`id` comes from setup).
-- The threads of every loadgen host (WRK_THREADS, wrk2's -t, x PERFLAB_HOSTS) space the keys apart.
local slots = perflab.threads_per_host * perflab.hosts
count_read = 0
count_write = 0
local n = 0

local function fresh_zip()
   local key = perflab.key_phase * 1e8 + count_write * slots + id
   local digits = string.format("%09d", key)
   return digits:sub(1, 5) .. "-" .. digits:sub(6)
end

function request()
   local req
   if perflab.draw(n, id) < write_ratio then
      local body = string.format(
         '{"zip":"%s","city":"City-%04d","county":"County-%03d","state":"%s","timezone":"America/New_York","type":"STANDARD"}',
         fresh_zip(), n % 2000, n % 300, states[(n % #states) + 1])
      count_write = count_write + 1
      req = wrk.format("POST", "/zipcodes", post_headers, body)
   else
      local zip = 10000 + ((n * 7919 + id * 104729) % 40000)
      count_read = count_read + 1
      req = wrk.format("GET", "/zipcodes/" .. zip)
   end
   n = n + 1
   return req
end

function done(summary, latency, requests)
   perflab.report({ "read", "write" })
   perflab.write_percentiles(summary, latency)
end
