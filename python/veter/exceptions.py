"""Exceptions a handler raises to answer with an error status."""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["HTTPException", "RequestValidationError"]


class HTTPException(Exception):
    """Raise to answer the request with ``status`` and ``detail`` as the body.

    ``detail`` defaults to the status's reason phrase; ``headers`` are added to the
    response (e.g. ``WWW-Authenticate`` for 401, ``Retry-After`` for 503).
    """

    def __init__(
        self,
        status: int,
        detail: str | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        if not 400 <= status <= 599:
            raise ValueError(f"HTTPException status must be 400-599, got {status}")
        self.status = status
        self.detail = detail if detail is not None else _reason(status)
        self.headers = dict(headers or {})
        super().__init__(status, self.detail)

    def __repr__(self) -> str:
        return f"HTTPException({self.status}, {self.detail!r})"


class RequestValidationError(HTTPException):
    """A typed handler's request did not validate: answered 422 with every problem.

    ``errors`` is a list of ``{"type", "loc", "msg"}`` dicts (plus ``"input"``, the
    offending value, except for headers and cookies, which may hold secrets); the
    answer's JSON body is ``{"detail": errors}``, the shape FastAPI clients read.
    Register an exception handler for it (or for ``HTTPException``) to change it.
    """

    def __init__(self, errors: list[dict[str, object]]) -> None:
        super().__init__(422)
        self.errors = errors

    def __repr__(self) -> str:
        return f"RequestValidationError({self.errors!r})"


def _reason(status: int) -> str:
    from http import HTTPStatus

    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Error"
