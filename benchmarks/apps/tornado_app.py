"""Tornado with `async def` handlers on its default asyncio loop; access log off."""

import asyncio
import os
import time

import tornado.web


class Plaintext(tornado.web.RequestHandler):
    async def get(self):
        self.set_header("Content-Type", "text/plain; charset=utf-8")
        self.write("Hello, World!")


class Json(tornado.web.RequestHandler):
    async def get(self):
        self.write({"message": "Hello, World!"})


class Sleep(tornado.web.RequestHandler):
    async def get(self, ms: str):
        await asyncio.sleep(int(ms) / 1000)
        self.write("ok")


async def work() -> None:
    await asyncio.sleep(0.05)


class Hard(tornado.web.RequestHandler):
    async def get(self):
        await work()
        await asyncio.gather(work(), work())
        try:
            await asyncio.wait_for(work(), 0.025)
        except TimeoutError:
            pass
        self.write("ok")


class Block(tornado.web.RequestHandler):
    async def get(self):
        await tornado.ioloop.IOLoop.current().run_in_executor(None, time.sleep, 0.5)
        self.write("ok")


def no_log(handler: tornado.web.RequestHandler) -> None:
    pass


async def main() -> None:
    app = tornado.web.Application(
        [
            (r"/", Plaintext),
            (r"/json", Json),
            (r"/sleep(\d+)", Sleep),
            (r"/hard", Hard),
            (r"/block", Block),
        ],
        log_function=no_log,
    )
    app.listen(int(os.environ["PORT"]), address="127.0.0.1", backlog=4096)
    await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(main())
