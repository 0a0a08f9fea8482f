"""Patterns of HTTP syntax that several modules check: a token (RFC 9110 5.6.2) and
a host name (RFC 1123 labels), as regular expressions and as pattern text to build
on."""

from __future__ import annotations

import re

__all__ = ["HOST_NAME", "TOKEN"]

#: A token: header names, cookie names, Access-Control-* list items.
TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")

_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?"
#: Pattern text of a host name: dot-separated labels of letters, digits and inner
#: hyphens (no leading or trailing dot; the callers add what they allow).
HOST_NAME = rf"{_LABEL}(?:\.{_LABEL})*"
