"""Tornado with old-style `@gen.coroutine` handlers (the field's Tornado 4 code)."""

import os
import time

import tornado.ioloop
import tornado.web
from tornado import gen


class Plaintext(tornado.web.RequestHandler):
    @gen.coroutine
    def get(self):
        self.set_header("Content-Type", "text/plain; charset=utf-8")
        self.write("Hello, World!")


class Json(tornado.web.RequestHandler):
    @gen.coroutine
    def get(self):
        self.write({"message": "Hello, World!"})


class Sleep(tornado.web.RequestHandler):
    @gen.coroutine
    def get(self, ms):
        yield gen.sleep(int(ms) / 1000)
        self.write("ok")


@gen.coroutine
def work():
    yield gen.sleep(0.05)


class Hard(tornado.web.RequestHandler):
    @gen.coroutine
    def get(self):
        yield work()
        yield [work(), work()]
        try:
            yield gen.with_timeout(tornado.ioloop.IOLoop.current().time() + 0.025, work())
        except gen.TimeoutError:
            pass
        self.write("ok")


class Block(tornado.web.RequestHandler):
    @gen.coroutine
    def get(self):
        yield tornado.ioloop.IOLoop.current().run_in_executor(None, time.sleep, 0.5)
        self.write("ok")


def no_log(handler):
    pass


if __name__ == "__main__":
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
    tornado.ioloop.IOLoop.current().start()
