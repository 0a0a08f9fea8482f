"""Flask for the db scenario, on every WSGI server: one psycopg connection per
thread (a sync worker has one thread; gthread, uWSGI, Granian and veter several)."""

import os
import random
import threading

import psycopg
from flask import Flask, Response, jsonify

QUERY = "SELECT id, name, qty FROM items WHERE id = %s"
ROWS = 10_000
_local = threading.local()


def connection() -> psycopg.Connection:
    # Opened in the thread that uses it, after any fork: never shared.
    conn = getattr(_local, "conn", None)
    if conn is None or conn.closed:
        conn = _local.conn = psycopg.connect(os.environ["DATABASE_URL"], autocommit=True)
    return conn


app = Flask(__name__)


@app.get("/")
def plaintext():
    return Response("Hello, World!", mimetype="text/plain")


@app.get("/db")
def db():
    row = connection().execute(QUERY, (random.randint(1, ROWS),)).fetchone()
    return jsonify(id=row[0], name=row[1], qty=row[2])
