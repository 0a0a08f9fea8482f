"""veter for the redis+log scenario: one Redis SET per request; the log line is
veter's own access log line (the scenario runs it with --access-log LOG_FILE)."""

import veter
from redis_log import set_key

app = veter.App()


@app.get("/")
def plaintext(request):
    return "Hello, World!"


@app.get("/redis")
async def redis_route(request):
    await set_key()
    return "ok"
