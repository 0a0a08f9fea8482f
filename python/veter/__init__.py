"""veter: a fast Python web framework and server for microservices."""

from veter._core import Request, Response
from veter.app import App
from veter.background import BackgroundTasks
from veter.concurrency import run_in_thread
from veter.datastructures import Headers, QueryParams, State
from veter.exceptions import HTTPException
from veter.forms import FormData, UploadFile
from veter.openapi import OpenAPI
from veter.responses import json, redirect, text
from veter.routers import Router
from veter.sse import EventSourceResponse
from veter.staticfiles import FileResponse
from veter.streaming import StreamingResponse
from veter.websockets import WebSocket, WebSocketDisconnect

__all__ = [
    "App",
    "BackgroundTasks",
    "EventSourceResponse",
    "FileResponse",
    "FormData",
    "HTTPException",
    "Headers",
    "OpenAPI",
    "QueryParams",
    "Request",
    "Response",
    "Router",
    "State",
    "StreamingResponse",
    "UploadFile",
    "WebSocket",
    "WebSocketDisconnect",
    "json",
    "redirect",
    "run_in_thread",
    "text",
]
