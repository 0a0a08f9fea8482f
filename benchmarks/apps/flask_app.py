"""Flask, the WSGI app every WSGI server here serves (veter, gunicorn, Granian)."""

from flask import Flask, Response, jsonify

app = Flask(__name__)


@app.get("/")
def plaintext():
    return Response("Hello, World!", mimetype="text/plain")


@app.get("/json")
def json_():
    return jsonify(message="Hello, World!")
