"""A Django project in one module, served both ways Django offers: WSGI
(``get_wsgi_application()``, plain and inside ``wsgiref.validate.validator``) and
ASGI (``get_asgi_application()``)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import AsyncIterator, Iterator
from wsgiref.validate import validator

import django
from django.conf import settings

settings.configure(
    DEBUG=False,
    SECRET_KEY="veter-tests-only",
    ALLOWED_HOSTS=["*"],
    ROOT_URLCONF=__name__,
    MIDDLEWARE=[],
    INSTALLED_APPS=[],
    DATA_UPLOAD_MAX_MEMORY_SIZE=None,
    LOGGING_CONFIG=None,
)
django.setup()

from django.core.asgi import get_asgi_application  # noqa: E402
from django.core.wsgi import get_wsgi_application  # noqa: E402
from django.http import (  # noqa: E402
    HttpRequest,
    HttpResponse,
    JsonResponse,
    StreamingHttpResponse,
)
from django.urls import path  # noqa: E402


def index(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"hello": "world"})


def item(request: HttpRequest, item_id: int) -> JsonResponse:
    return JsonResponse({"item_id": item_id, "q": request.GET.get("q")})


def echo(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"method": request.method, "json": json.loads(request.body)}, status=201)


def form(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"name": request.POST["name"], "age": int(request.POST["age"])})


def upload(request: HttpRequest) -> JsonResponse:
    f = request.FILES["file"]
    data = f.read()
    return JsonResponse(
        {
            "filename": f.name,
            "size": len(data),
            "sha256": hashlib.sha256(data).hexdigest(),
            "note": request.POST["note"],
        }
    )


def stream(request: HttpRequest) -> StreamingHttpResponse:
    def pieces() -> Iterator[bytes]:
        for i in range(5):
            yield f"piece {i}\n".encode()

    return StreamingHttpResponse(pieces(), content_type="text/plain")


async def async_stream(request: HttpRequest) -> StreamingHttpResponse:
    async def pieces() -> AsyncIterator[bytes]:
        for i in range(3):
            yield f"async {i}\n".encode()

    return StreamingHttpResponse(pieces(), content_type="text/plain")


def meta(request: HttpRequest) -> JsonResponse:
    return JsonResponse(
        {
            "path": request.path,
            "path_info": request.path_info,
            "script_name": request.META.get("SCRIPT_NAME"),
            "host": request.get_host(),
            "secure": request.is_secure(),
            "agent": request.headers.get("user-agent"),
        }
    )


def fail(request: HttpRequest) -> HttpResponse:
    raise RuntimeError("the view failed")


urlpatterns = [
    path("", index),
    path("items/<int:item_id>", item),
    path("echo", echo),
    path("form", form),
    path("upload", upload),
    path("stream", stream),
    path("async-stream", async_stream),
    path("meta", meta),
    path("fail", fail),
]

wsgi = get_wsgi_application()
wsgi_validated = validator(wsgi)
asgi = get_asgi_application()
