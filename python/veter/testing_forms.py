"""Form bodies for the test client: ``data=`` (fields) and ``files=`` (uploads),
as ``httpx`` and Starlette's test client take them."""

from __future__ import annotations

import secrets
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import urlencode

__all__ = ["encode_form"]

#: ``files=``: ``{name: content}``, ``{name: (filename, content)}`` or
#: ``{name: (filename, content, content_type)}``, or a list of ``(name, ...)`` pairs
#: for several files of one name.
Files = Mapping[str, Any] | Iterable[tuple[str, Any]]


def encode_form(data: Mapping[str, Any] | None, files: Files | None) -> tuple[bytes, str]:
    """The body and its Content-Type: urlencoded for fields only, multipart with files."""
    fields = _pairs(data or {})
    if not files:
        return urlencode(fields).encode(), "application/x-www-form-urlencoded"
    boundary = secrets.token_hex(16)
    out = bytearray()
    for name, value in fields:
        out += f'--{boundary}\r\nContent-Disposition: form-data; name="{_quoted(name)}"\r\n\r\n'.encode()
        out += value.encode() + b"\r\n"
    for name, spec in files.items() if isinstance(files, Mapping) else files:
        filename, content, content_type = _file(name, spec)
        out += (
            f'--{boundary}\r\nContent-Disposition: form-data; name="{_quoted(name)}"; '
            f'filename="{_quoted(filename)}"\r\nContent-Type: {content_type}\r\n\r\n'
        ).encode()
        out += content + b"\r\n"
    out += f"--{boundary}--\r\n".encode()
    return bytes(out), f"multipart/form-data; boundary={boundary}"


def _pairs(data: Mapping[str, Any]) -> list[tuple[str, str]]:
    pairs = []
    for name, value in data.items():
        for item in value if isinstance(value, (list, tuple)) else [value]:
            pairs.append((name, str(item)))
    return pairs


def _file(name: str, spec: Any) -> tuple[str, bytes, str]:
    if isinstance(spec, (bytes, str)):
        spec = (name, spec)
    filename, content, *rest = spec
    if hasattr(content, "read"):
        content = content.read()
    if isinstance(content, str):
        content = content.encode()
    return filename, content, rest[0] if rest else "application/octet-stream"


def _quoted(text: str) -> str:
    # As browsers send names: quotes and line breaks percent-encoded (HTML's rules).
    return text.replace('"', "%22").replace("\r", "%0D").replace("\n", "%0A")
