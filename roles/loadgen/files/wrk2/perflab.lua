-- Shared by the perflab wrk2 workloads (loaded with dofile from the script's directory):
-- per-thread ids, the deterministic per-request draw and the request counters.
local perflab = {}

-- Environment, as for the k6 scripts: KEY_PHASE (0..9) keeps warm-up and measured keys apart.
perflab.key_phase = tonumber(os.getenv("KEY_PHASE") or "0")

local threads = {}
local next_id = 0

-- setup() runs in the main thread once per wrk thread, before it starts.
function perflab.setup(thread)
   thread:set("id", next_id)
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

-- Prints how many requests each operation got, summed over the threads (done() runs in the
-- main thread after the run; each thread keeps its own counters in globals named count_<op>).
function perflab.report(operations)
   local parts = {}
   for _, op in ipairs(operations) do
      local total = 0
      for _, thread in ipairs(threads) do
         total = total + (thread:get("count_" .. op) or 0)
      end
      table.insert(parts, op .. "=" .. total)
   end
   io.write("perflab wrk2 requests by operation: " .. table.concat(parts, " ") .. "\n")
end

return perflab
