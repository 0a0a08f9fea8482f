"""Falcon on gunicorn sync workers for the db scenario: one psycopg connection per worker."""

import os
import random

import falcon
import psycopg

QUERY = "SELECT id, name, qty FROM items WHERE id = %s"
ROWS = 10_000
_conn: psycopg.Connection | None = None


def connection() -> psycopg.Connection:
    # Opened in the worker after gunicorn forks, never shared between processes.
    global _conn
    if _conn is None or _conn.closed:
        _conn = psycopg.connect(os.environ["DATABASE_URL"], autocommit=True)
    return _conn


class Plaintext:
    def on_get(self, req, resp):
        resp.content_type = falcon.MEDIA_TEXT
        resp.text = "Hello, World!"


class Db:
    def on_get(self, req, resp):
        row = connection().execute(QUERY, (random.randint(1, ROWS),)).fetchone()
        resp.media = {"id": row[0], "name": row[1], "qty": row[2]}


app = falcon.App()
app.add_route("/", Plaintext())
app.add_route("/db", Db())
