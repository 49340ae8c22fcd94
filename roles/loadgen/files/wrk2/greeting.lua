-- Report 3: GET /greeting/{name}. One fixed request: wrk2 builds it once.
wrk.method = "GET"
wrk.path = "/greeting/" .. (os.getenv("GREETING_NAME") or "perflab")
