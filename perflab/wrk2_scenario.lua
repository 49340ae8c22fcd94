-- wrk2's player of a compiled perflab scenario (perflab/scenario.py's compile_lua writes the data
-- file, PERFLAB_SCENARIO_DATA): the one Lua script of every scenario. Thread `id`'s n-th request
-- is drawn from (id, n) alone with perflab/scenario_play.py's arithmetic (its docstring), so
-- vegeta's targets, played there from the same document, are the same requests. Deployed beside
-- perflab.lua (roles/loadgen/files/wrk2/), which numbers the threads across loadgen hosts, draws,
-- counts and writes the percentile table.
-- Per request: a draw, one table.concat per template into a buffer built once, and wrk.format; a
-- request that uses no variable is formatted once per thread, and a scenario of one such request
-- is left to wrk2 itself (no request() at all), as wrk2 does best.
local script_dir = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
local perflab = dofile(script_dir .. "perflab.lua")
local data = dofile(assert(os.getenv("PERFLAB_SCENARIO_DATA"), "PERFLAB_SCENARIO_DATA names no compiled scenario"))

local requests, variables, bounds, turns = data.requests, data.variables, data.bounds, data.turns
local total = bounds[#bounds]
local slots = perflab.threads_per_host * perflab.hosts
local format, concat = string.format, table.concat

-- The document counts from 0 (perflab/scenario_play.py): its indices are resolved here, once.
-- Each template becomes a buffer holding its literal text, and the positions the variables fill.
local function buffer_of(template)
   if not template then
      return nil
   end
   local buffer, fills = {}, {}
   for position, part in ipairs(template) do
      if type(part) == "string" then
         buffer[position] = part
      else
         buffer[position] = ""
         table.insert(fills, { position = position, var = part.var,
            values = part.values and data.values[part.values + 1] })
      end
   end
   return { buffer = buffer, fills = fills }
end

for _, request in ipairs(requests) do
   request.counter = "count_" .. request.name
   request.path_buffer = buffer_of(request.path)
   request.body_buffer = buffer_of(request.body)
   request.static = #request.vars == 0
   local headers = {}
   for _, header in ipairs(request.headers) do
      headers[header[1]] = header[2]
   end
   request.headers = headers
   _G[request.counter] = 0
end
for _, variable in ipairs(variables) do
   if variable.kind == "integer" then
      variable.format = variable.digits > 0 and ("%0" .. variable.digits .. "d") or "%d"
   elseif variable.kind == "key" then
      variable.pattern = "%0" .. variable.digits .. "d"
      variable.span = 10 ^ (variable.digits - 1)
      variable.base = variable.span * perflab.key_phase
      -- The format as runs of digits ({first, last}) and literal text, one # a digit.
      local pieces, position = {}, 0
      local shape = variable.format or string.rep("#", variable.digits)
      local at = 1
      while at <= #shape do
         local first, last = shape:find("^#+", at)
         if first then
            table.insert(pieces, { position + 1, position + last - first + 1 })
            position = position + last - first + 1
            at = last + 1
         else
            first, last = shape:find("^[^#]+", at)
            table.insert(pieces, shape:sub(first, last))
            at = last + 1
         end
      end
      variable.pieces = pieces
      -- The same as one string.format of the key's value: each run of digits is that value's digits there
      -- (floor(value / 10^digits after it) % 10^its length), the literal text between them kept.
      local runs, shape_format = {}, {}
      for _, piece in ipairs(pieces) do
         if type(piece) == "table" then
            local width = piece[2] - piece[1] + 1
            table.insert(runs, { 10 ^ (variable.digits - piece[2]), 10 ^ width })
            table.insert(shape_format, "%0" .. width .. "d")
         else
            table.insert(shape_format, (piece:gsub("%%", "%%%%")))
         end
      end
      variable.runs, variable.shape_format = runs, table.concat(shape_format)
   end
end

local function fill(template, current)
   if not template then
      return nil
   end
   local buffer, fills = template.buffer, template.fills
   for f = 1, #fills do
      local slot = fills[f]
      local value = current[slot.var]
      if slot.values then
         value = slot.values[value + 1]
      end
      buffer[slot.position] = value
   end
   return concat(buffer)
end

local single = #requests == 1 and requests[1].static
if single then
   -- wrk2 builds a request it is given this way once, and calls no Lua per request.
   local only = requests[1]
   wrk.method = only.method
   wrk.path = only.path[1]
   for name, value in pairs(only.headers) do
      wrk.headers[name] = value
   end
   wrk.body = only.body and only.body[1] or nil
end

function setup(thread)
   perflab.setup(thread)
end

-- Thread-local state (`id` comes from setup).
local n = 0
local current = {}
-- The second (os.time: the vDSO's clock, nanoseconds a request) this thread last sent in; at each
-- new one its counters as it began are kept for perflab.report (sent_first, sent_last, sent_<s>_<i>).
local clock = os.time
local this_second
local function mark(second)
   for index, request in ipairs(requests) do
      _G["sent_" .. second .. "_" .. index] = _G[request.counter]
   end
   sent_first = sent_first or second
   sent_last = second
   this_second = second
end
local key_uses = {}
for index = 1, #variables do
   key_uses[index] = 0
end

-- init() runs in each thread after wrk has set the Host header: the fixed requests carry it.
function init(args)
   for _, request in ipairs(requests) do
      if request.static then
         request.formatted = wrk.format(request.method, fill(request.path_buffer, current), request.headers,
            fill(request.body_buffer, current))
      end
   end
end

-- Each variable as a function of (n, id) that sets current[index]: the kind is looked at once.
local function drawer(index, variable)
   if variable.kind == "integer" then
      local start, step, thread_step, modulo, pattern =
         variable.start, variable.step, variable.thread_step, variable.modulo, variable.format
      if modulo > 0 and variable.digits == 0 and start + modulo < 1e14 then
         -- Left a number: table.concat writes it as "%.14g" does, the integer's digits below 10^14,
         -- and a string.format per request is saved.
         return function()
            current[index] = start + (n * step + id * thread_step) % modulo
         end
      elseif modulo > 0 then
         return function()
            current[index] = format(pattern, start + (n * step + id * thread_step) % modulo)
         end
      end
      return function()
         current[index] = format(pattern, start + n * step + id * thread_step)
      end
   elseif variable.kind == "index" then
      local step, thread_step, count = variable.step, variable.thread_step, variable.count
      return function()
         current[index] = (n * step + id * thread_step) % count
      end
   end
   local pattern, span, base, pieces = variable.pattern, variable.span, variable.base, variable.pieces
   local whole = #pieces == 1 and type(pieces[1]) == "table"
   local runs, shape_format = variable.runs, variable.shape_format
   -- The key's next value: this thread's next slot of the phase's span.
   local function next_value()
      local offset = key_uses[index] * slots + id
      -- Past the phase's span the key would be the next phase's: stop rather than repeat one.
      if offset >= span then
         error("perflab: key ${" .. variable.name .. "} ran out of the " .. span .. " fresh keys of a phase: raise its digits")
      end
      key_uses[index] = key_uses[index] + 1
      return base + offset
   end
   if #runs == 2 and not whole then
      -- A key of two runs of digits ("#####-####", a ZIP+4): one string.format a request, where cutting the
      -- digits and joining the pieces cost wrk2 a fifth more CPU per request than the per-scenario scripts
      -- did (make bench-loadgen-alone, zipcodes at 20,000 req/s).
      local first_below, first_span, second_below, second_span = runs[1][1], runs[1][2], runs[2][1], runs[2][2]
      local floor = math.floor
      return function()
         local value = next_value()
         current[index] = format(shape_format, floor(value / first_below) % first_span,
            floor(value / second_below) % second_span)
      end
   end
   return function()
      local digits = format(pattern, next_value())
      if whole then
         current[index] = digits
         return
      end
      local key = ""
      for p = 1, #pieces do
         local piece = pieces[p]
         key = key .. (type(piece) == "string" and piece or digits:sub(piece[1], piece[2]))
      end
      current[index] = key
   end
end

for _, request in ipairs(requests) do
   local drawers = {}
   for _, index in ipairs(request.vars) do
      table.insert(drawers, drawer(index, variables[index + 1]))
   end
   request.drawers = drawers
end

local function draw_variables(request)
   local drawers = request.drawers
   for d = 1, #drawers do
      drawers[d]()
   end
end

local by_turns = data.mix == "turns"
local function choose()
   if by_turns then
      return requests[turns[(n + id) % #turns + 1] + 1]
   end
   local u = perflab.draw(n, id) * total
   for index = 1, #bounds - 1 do
      if u < bounds[index] then
         return requests[index]
      end
   end
   return requests[#bounds]
end

if not single then
   function request()
      local chosen = choose()
      local second = clock()
      if second ~= this_second then
         mark(second)
      end
      _G[chosen.counter] = _G[chosen.counter] + 1
      local req = chosen.formatted
      if not chosen.static then
         draw_variables(chosen)
         req = wrk.format(chosen.method, fill(chosen.path_buffer, current), chosen.headers,
            fill(chosen.body_buffer, current))
      end
      n = n + 1
      return req
   end
end

function done(summary, latency, requests_made)
   if single then
      io.write("perflab wrk2 requests by operation: " .. requests[1].name .. "=" .. summary.requests .. "\n")
   else
      local names = {}
      for _, request in ipairs(requests) do
         table.insert(names, request.name)
      end
      perflab.report(names)
   end
   perflab.write_percentiles(summary, latency)
end
