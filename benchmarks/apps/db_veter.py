"""veter for the db scenario (behind nginx): one random row as JSON, through veter's
own PostgreSQL pool (veter.pools, what a veter app uses; the peers' apps use asyncpg's
pool directly, as their docs show). Same query, same pool size as the others."""

import os
import random

import veter
from pgpool import POOL_SIZE, QUERY, ROWS
from veter.pools import PostgresPool

app = veter.App()
pg = PostgresPool(app, dsn=os.environ["DATABASE_URL"], min_size=POOL_SIZE, max_size=POOL_SIZE)


@app.get("/")
def plaintext(request):
    return "Hello, World!"


@app.get("/db")
async def db(request):
    row = await pg.fetchrow(QUERY, random.randint(1, ROWS))
    return dict(row)
