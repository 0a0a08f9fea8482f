"""veter for the redis+log scenario: one Redis SET and one log line per request."""

import veter
from redis_log import set_and_log

app = veter.App()


@app.get("/")
def plaintext(request):
    return "Hello, World!"


@app.get("/redis")
async def redis_route(request):
    await set_and_log("/redis")
    return "ok"
