"""``Set-Cookie`` headers, checked against RFC 6265 and what browsers enforce.

``Response.set_cookie`` and ``StreamingResponse.set_cookie`` (and their
``delete_cookie``) format their header here. Everything is checked when the header
is made, so a cookie a browser would silently drop is an error in the handler
instead: a name that is not a token, a value with characters RFC 6265 does not
allow in a cookie (encode such values first, e.g. with ``urllib.parse.quote`` or
base64), ``SameSite=None`` or ``Partitioned`` without ``Secure``, the ``__Secure-``
and ``__Host-`` prefixes without what they require, and a name and value longer
than the 4,096 bytes browsers keep.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Literal, TypedDict

from veter.syntax import HOST_NAME, TOKEN

__all__ = [
    "CookieAttributes",
    "DeleteCookieAttributes",
    "SameSite",
    "delete_cookie_header",
    "set_cookie_header",
]

SameSite = Literal["lax", "strict", "none"]


class DeleteCookieAttributes(TypedDict, total=False):
    """The keywords of ``delete_cookie`` (those the cookie was set with)."""

    path: str | None
    domain: str | None
    secure: bool
    httponly: bool
    samesite: SameSite | None
    partitioned: bool


class CookieAttributes(DeleteCookieAttributes, total=False):
    """The keywords of ``set_cookie`` (see ``set_cookie_header``)."""

    max_age: int | timedelta | None
    expires: datetime | int | None


#: RFC 9110 token: what a cookie name may be (RFC 6265, section 4.1.1).
#: cookie-octet: printable US-ASCII but space, '"', ',', ';' and '\'. A value is
#: octets, optionally in one pair of double quotes.
_OCTET = r"[\x21\x23-\x2b\x2d-\x3a\x3c-\x5b\x5d-\x7e]"
_VALUE = re.compile(f'{_OCTET}*|"{_OCTET}*"')
#: Path and Domain values: no control characters and no ';' (RFC 6265 av-octet).
_ATTRIBUTE = re.compile(r"[\x20-\x3a\x3c-\x7e]*")
#: A host name (an optional leading dot, which browsers ignore), or an IP literal.
_DOMAIN = re.compile(rf"\.?{HOST_NAME}")
#: What browsers keep of one cookie: its name and value together (RFC 6265bis).
MAX_NAME_AND_VALUE = 4096
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def set_cookie_header(
    key: str,
    value: str = "",
    *,
    max_age: int | timedelta | None = None,
    expires: datetime | int | None = None,
    path: str | None = "/",
    domain: str | None = None,
    secure: bool = False,
    httponly: bool = False,
    samesite: SameSite | None = "lax",
    partitioned: bool = False,
) -> str:
    """The value of a ``Set-Cookie`` header; ``ValueError`` names what is wrong.

    ``max_age`` is in seconds (0 expires the cookie now); ``expires`` is an aware
    ``datetime`` or a number of seconds from now; ``path`` defaults to ``/`` (None
    leaves it out, so the browser uses the request's directory); ``samesite``
    defaults to ``lax``, what browsers assume when it is absent.
    """
    _check_name(key)
    if not isinstance(value, str):
        raise TypeError(f"cookie {key!r}: the value must be a str, not {type(value).__name__}")
    if not _VALUE.fullmatch(value):
        # The first character outside cookie-octet, or a misplaced double quote.
        bad = next((c for c in value if not re.fullmatch(_OCTET, c)), '"')
        raise ValueError(
            f"cookie {key!r}: {bad!r} is not allowed in a cookie value (RFC 6265 allows printable "
            "ASCII but space, '\"', ',', ';' and '\\'); encode the value first, e.g. with "
            "urllib.parse.quote or base64"
        )
    if len(key) + len(value) > MAX_NAME_AND_VALUE:  # both ASCII by now
        raise ValueError(
            f"cookie {key!r}: name and value are {len(key) + len(value)} bytes, over the "
            f"{MAX_NAME_AND_VALUE} browsers keep (they would drop the cookie)"
        )
    parts = [f"{key}={value}"]
    if max_age is not None:
        parts.append(f"Max-Age={_seconds(key, max_age)}")
    if expires is not None:
        parts.append(f"Expires={_http_date(key, expires)}")
    if domain is not None:
        if not _DOMAIN.fullmatch(domain) or len(domain) > 253:
            raise ValueError(f"cookie {key!r}: {domain!r} is not a domain name")
        parts.append(f"Domain={domain}")
    if path is not None:
        if not path.startswith("/") or not _ATTRIBUTE.fullmatch(path):
            raise ValueError(
                f"cookie {key!r}: the path must start with '/' and hold no control characters or ';', "
                f"got {path!r}"
            )
        parts.append(f"Path={path}")
    if secure:
        parts.append("Secure")
    if httponly:
        parts.append("HttpOnly")
    if samesite is not None:
        parts.append(f"SameSite={_samesite(key, samesite, secure)}")
    if partitioned:
        if not secure:
            raise ValueError(f"cookie {key!r}: Partitioned needs secure=True (browsers drop it otherwise)")
        parts.append("Partitioned")
    _check_prefix(key, secure=secure, path=path, domain=domain)
    return "; ".join(parts)


def delete_cookie_header(
    key: str,
    *,
    path: str | None = "/",
    domain: str | None = None,
    secure: bool = False,
    httponly: bool = False,
    samesite: SameSite | None = "lax",
    partitioned: bool = False,
) -> str:
    """A ``Set-Cookie`` that removes cookie ``key``: empty, ``Max-Age=0`` and an
    ``Expires`` in the past. ``path`` and ``domain`` must be those it was set with
    (browsers key cookies by name, path and domain)."""
    return set_cookie_header(
        key,
        "",
        max_age=0,
        expires=_EPOCH,
        path=path,
        domain=domain,
        secure=secure,
        httponly=httponly,
        samesite=samesite,
        partitioned=partitioned,
    )


def _check_name(key: object) -> None:
    if not isinstance(key, str):
        raise TypeError(f"a cookie name must be a str, not {type(key).__name__}")
    if not TOKEN.fullmatch(key):
        raise ValueError(
            f"{key!r} is not a valid cookie name: it must be a non-empty token (letters, digits and "
            "!#$%&'*+-.^_`|~; no spaces, '=' or separators)"
        )


def _seconds(key: str, max_age: int | timedelta) -> int:
    if isinstance(max_age, timedelta):
        seconds = int(max_age.total_seconds())
    elif isinstance(max_age, int) and not isinstance(max_age, bool):
        seconds = max_age
    else:
        raise TypeError(f"cookie {key!r}: max_age must be an int of seconds or a timedelta")
    if seconds < 0:
        raise ValueError(f"cookie {key!r}: max_age must be >= 0 (0 expires the cookie now), got {seconds}")
    return seconds


def _http_date(key: str, expires: datetime | int) -> str:
    if isinstance(expires, datetime):
        if expires.tzinfo is None:
            raise ValueError(
                f"cookie {key!r}: expires must be an aware datetime (e.g. datetime.now(timezone.utc) + ...); "
                "a naive one does not say which time zone it is in"
            )
        when = expires.astimezone(UTC)
    elif isinstance(expires, int) and not isinstance(expires, bool):
        when = datetime.now(UTC) + timedelta(seconds=expires)
    else:
        raise TypeError(f"cookie {key!r}: expires must be an aware datetime or an int of seconds from now")
    return format_datetime(when, usegmt=True)


def _samesite(key: str, samesite: str, secure: bool) -> str:
    canonical = {"lax": "Lax", "strict": "Strict", "none": "None"}.get(str(samesite).lower())
    if canonical is None:
        raise ValueError(
            f"cookie {key!r}: samesite must be 'lax', 'strict', 'none' or None, got {samesite!r}"
        )
    if canonical == "None" and not secure:
        raise ValueError(f"cookie {key!r}: SameSite=None needs secure=True (browsers drop it otherwise)")
    return canonical


def _check_prefix(key: str, *, secure: bool, path: str | None, domain: str | None) -> None:
    # Browsers match the prefixes case-insensitively (RFC 6265bis, section 4.1.3).
    lowered = key.lower()
    if lowered.startswith("__secure-") and not secure:
        raise ValueError(f"cookie {key!r}: the __Secure- prefix needs secure=True")
    if lowered.startswith("__host-") and (not secure or path != "/" or domain is not None):
        raise ValueError(f"cookie {key!r}: the __Host- prefix needs secure=True, path='/' and no domain")
