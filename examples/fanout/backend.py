"""The "other services" the fanout example calls: a user, recommendations and ads,
each answering after a short simulated delay (FANOUT_DELAY_MS, default 2 ms).

    veter run examples.fanout.backend:app --port 8001
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

import veter

DELAY = float(os.environ.get("FANOUT_DELAY_MS", "2")) / 1000

app = veter.App()


@app.get("/")
def index(request: veter.Request) -> str:
    return "backend"


@app.get("/users/{user_id:int}")
async def user(request: veter.Request, user_id: int) -> dict[str, Any]:
    await asyncio.sleep(DELAY)
    return {"id": user_id, "name": f"user-{user_id}", "segment": user_id % 7}


@app.get("/recommendations/{segment:int}")
async def recommendations(request: veter.Request, segment: int) -> list[int]:
    await asyncio.sleep(DELAY)
    return [segment * 100 + i for i in range(5)]


@app.get("/ads/{segment:int}")
async def ads(request: veter.Request, segment: int) -> list[str]:
    await asyncio.sleep(DELAY)
    return [f"ad-{segment}-{i}" for i in range(3)]
