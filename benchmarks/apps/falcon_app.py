"""Falcon (WSGI) for gunicorn sync workers."""

import time

import falcon


class Plaintext:
    def on_get(self, req, resp):
        resp.content_type = falcon.MEDIA_TEXT
        resp.text = "Hello, World!"


class Json:
    def on_get(self, req, resp):
        resp.media = {"message": "Hello, World!"}


class Block:
    def on_get(self, req, resp):
        # Sync workers: blocking is the model, each worker serves one request at a time.
        time.sleep(0.5)
        resp.content_type = falcon.MEDIA_TEXT
        resp.text = "ok"


app = falcon.App()
app.add_route("/", Plaintext())
app.add_route("/json", Json())
app.add_route("/block", Block())
