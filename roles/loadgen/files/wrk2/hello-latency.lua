-- Report 2: GET /hello/{latency} with a server-side delay of LATENCY_MS. One fixed request:
-- wrk2 builds it once, so the script costs nothing per request.
wrk.method = "GET"
wrk.path = "/hello/" .. (os.getenv("LATENCY_MS") or "100")
