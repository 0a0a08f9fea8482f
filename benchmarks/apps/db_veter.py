"""veter for the db scenario (behind nginx): one random row as JSON."""

import veter
from pgpool import LazyPool

app = veter.App()
pool = LazyPool()


@app.get("/")
def plaintext(request):
    return "Hello, World!"


@app.get("/db")
async def db(request):
    return await pool.random_item()
