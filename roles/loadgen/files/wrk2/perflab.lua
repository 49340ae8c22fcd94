-- Shared by the perflab wrk2 workloads (loaded with dofile from the script's directory):
-- per-thread ids, the deterministic per-request draw, the request counters and the percentile
-- table every script's done() writes.
local perflab = {}

-- Environment, as for vegeta's targets: KEY_PHASE (0..9) keeps warm-up and measured keys apart.
perflab.key_phase = tonumber(os.getenv("KEY_PHASE") or "0")

-- Several loadgen hosts share a run: host PERFLAB_HOST_INDEX of PERFLAB_HOSTS plays threads
-- index x WRK_THREADS .. of one run with PERFLAB_HOSTS x WRK_THREADS threads, so that every
-- host's requests differ (vegeta's scenario_play.py --host-index/--hosts does the same).
perflab.host_index = tonumber(os.getenv("PERFLAB_HOST_INDEX") or "0")
perflab.hosts = tonumber(os.getenv("PERFLAB_HOSTS") or "1")
perflab.threads_per_host = tonumber(os.getenv("WRK_THREADS") or "64")

local threads = {}
local next_id = 0

-- setup() runs in the main thread once per wrk thread, before it starts.
function perflab.setup(thread)
   thread:set("id", perflab.host_index * perflab.threads_per_host + next_id)
   next_id = next_id + 1
   table.insert(threads, thread)
end

function perflab.thread_count()
   return next_id
end

-- Deterministic, evenly spread draw in [0, 1) for the n-th request of a thread: the
-- golden-ratio (Weyl) sequence offset per thread, so the mix is the same in every stretch.
local GOLDEN = 0.6180339887498949
function perflab.draw(n, id)
   local x = (n + 1) * GOLDEN + id * 0.7548776662466927
   return x - math.floor(x)
end

-- Prints how many requests each operation got, summed over the threads (done() runs in the main
-- thread after the run; each thread keeps its own counters in globals named count_<op>), and in
-- which second each was sent (perflab/sent.py reads that line): a thread marks every second it
-- sends in, sent_first .. sent_last, with its counters as that second began, in globals named
-- sent_<unix second>_<op's index>. Flat numbers only: wrk2's thread:get copies a table wrong
-- (script_copy_value swaps keys and values, and a nested table corrupts the stack: wrk2 crashed).
function perflab.report(operations)
   local totals, seconds = {}, {}
   for index = 1, #operations do
      totals[index] = 0
   end
   for _, thread in ipairs(threads) do
      local counts = {}
      for index, op in ipairs(operations) do
         counts[index] = thread:get("count_" .. op) or 0
         totals[index] = totals[index] + counts[index]
      end
      local first, last = thread:get("sent_first"), thread:get("sent_last")
      local marks = {}
      for second = first or 1, last or 0 do
         if thread:get("sent_" .. second .. "_1") then
            table.insert(marks, second)
         end
      end
      for m, second in ipairs(marks) do
         local row = seconds[second]
         if not row then
            row = {}
            for index = 1, #operations do
               row[index] = 0
            end
            seconds[second] = row
         end
         for index = 1, #operations do
            local upto = marks[m + 1] and thread:get("sent_" .. marks[m + 1] .. "_" .. index) or counts[index]
            row[index] = row[index] + upto - thread:get("sent_" .. second .. "_" .. index)
         end
      end
   end
   local parts, names, order, rows = {}, {}, {}, {}
   for index, op in ipairs(operations) do
      table.insert(parts, op .. "=" .. string.format("%d", totals[index]))
      table.insert(names, string.format("%q", op))
   end
   io.write("perflab wrk2 requests by operation: " .. table.concat(parts, " ") .. "\n")
   for second in pairs(seconds) do
      table.insert(order, second)
   end
   table.sort(order)
   for _, second in ipairs(order) do
      local counts = {}
      for index = 1, #operations do
         counts[index] = string.format("%d", seconds[second][index])
      end
      table.insert(rows, string.format("[%d,[%s]]", second, table.concat(counts, ",")))
   end
   io.write('perflab wrk2 requests by second: {"names":[' .. table.concat(names, ",") .. '],"seconds":[' ..
      table.concat(rows, ",") .. "]}\n")
end

-- wrk2 prints ~30 percentiles; the table has enough to rebuild the histogram (to merge several
-- loadgen hosts, to draw the spectrum): HdrHistogram's layout, `ticks` rows per half of the
-- distance to 100%, down to one request's worth, then 100. Values are wrk2's corrected latency
-- (from each request's intended send time), in microseconds. Written to $PERFLAB_PERCENTILES
-- as JSON (format perflab-wrk2-percentiles/1, read by perflab/wrk2.py).
function perflab.write_percentiles(summary, latency)
   local path = os.getenv("PERFLAB_PERCENTILES")
   if not path or path == "" then
      return
   end
   local threads = tonumber(os.getenv("WRK_THREADS") or "1")
   local connections = tonumber(os.getenv("WRK_CONNECTIONS") or "0")
   -- The role's figure (perflab/wrk2.py calibration_ms), not worked out again here.
   local calibration_ms = tonumber(os.getenv("PERFLAB_WRK2_CALIBRATION_MS") or "")
   if not calibration_ms then
      io.stderr:write("perflab: PERFLAB_WRK2_CALIBRATION_MS is not set: the table says no calibration\n")
      calibration_ms = -1
   end
   local recorded = #latency
   local rows = {}
   if recorded > 0 then
      -- wrk2's own printed percentiles are rows too, so that merged tables are exact there.
      local levels = { 50, 75, 90, 99, 99.9, 99.99, 99.999 }
      local ticks, p, half = 10, 0.0, 50.0
      while 100.0 - p > 100.0 / recorded do
         for _ = 1, ticks do
            table.insert(levels, p)
            p = p + half / ticks
         end
         half = half / 2
      end
      table.sort(levels)
      local last
      for _, level in ipairs(levels) do
         if level ~= last then
            table.insert(rows, string.format("[%.12g,%d]", level, latency:percentile(level)))
            last = level
         end
      end
      -- percentile(100), not latency.max: max can sit a bucket below the histogram's top value.
      table.insert(rows, string.format("[100,%d]", latency:percentile(100)))
   end
   local e = summary.errors
   local file = assert(io.open(path, "w"))
   file:write(string.format(
      '{"format":"perflab-wrk2-percentiles/1","runtime_us":%d,"requests":%d,"bytes":%d,"recorded":%d,' ..
      '"calibration_ms":%d,"threads":%d,"connections":%d,' ..
      '"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d},' ..
      '"min_us":%d,"max_us":%d,"mean_us":%.3f,"stdev_us":%.3f,"percentiles":[%s]}\n',
      summary.duration, summary.requests, summary.bytes, recorded,
      calibration_ms, threads, connections,
      e.connect, e.read, e.write, e.status, e.timeout,
      recorded > 0 and latency.min or 0, recorded > 0 and latency.max or 0,
      recorded > 0 and latency.mean or 0, recorded > 0 and latency.stdev or 0,
      table.concat(rows, ",")))
   file:close()
end

return perflab
