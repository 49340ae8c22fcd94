-- Report 4: GET /books (a list that grows), POST /books, POST /orders linking a seeded book
-- (1..100) and a seeded user (1..1000). The operation of each request is a deterministic draw
-- against the weights GET_BOOKS_WEIGHT, POST_BOOKS_WEIGHT, POST_ORDERS_WEIGHT.
local script_dir = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
local perflab = dofile(script_dir .. "perflab.lua")

local weights = {
   tonumber(os.getenv("GET_BOOKS_WEIGHT") or "1"),
   tonumber(os.getenv("POST_BOOKS_WEIGHT") or "1"),
   tonumber(os.getenv("POST_ORDERS_WEIGHT") or "1"),
}
local total = weights[1] + weights[2] + weights[3]
local post_headers = { ["Content-Type"] = "application/json" }

function setup(thread)
   perflab.setup(thread)
end

-- Thread-local state (`id` comes from setup).
count_get_books = 0
count_post_books = 0
count_post_orders = 0
local n = 0

function request()
   local u = perflab.draw(n, id) * total
   local req
   if u < weights[1] then
      count_get_books = count_get_books + 1
      req = wrk.format("GET", "/books")
   elseif u < weights[1] + weights[2] then
      count_post_books = count_post_books + 1
      req = wrk.format("POST", "/books", post_headers,
         string.format('{"title":"Load %d-%d","author":"Author %02d"}', id, n, id % 37))
   else
      count_post_orders = count_post_orders + 1
      req = wrk.format("POST", "/orders", post_headers,
         string.format('{"bookId":%d,"userId":%d}', 1 + ((n * 31 + id) % 100), 1 + ((n * 7 + id * 13) % 1000)))
   end
   n = n + 1
   return req
end

function done(summary, latency, requests)
   perflab.report({ "get_books", "post_books", "post_orders" })
   perflab.write_percentiles(summary, latency)
end
