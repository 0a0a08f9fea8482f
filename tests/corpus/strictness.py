"""Where veter and h11 deliberately differ, with the reason for each.

docs/security.md ("Stricter than h11") is the written list; a test checks that it
names every id here. A corpus case where h11 differs carries one of these ids in
its ``h11`` field; the differential tests check the difference goes the way the
entry says (veter refuses what h11 accepts or waits for, never the other way round).
"""

from __future__ import annotations

#: veter refuses (or refuses sooner) what h11 accepts or keeps waiting for.
STRICTER: dict[str, str] = {
    "bare-lf": "h11 accepts a bare LF as a line end; a front end that does not sees a different head",
    "bare-cr": "a bare CR followed by anything but LF is refused at once; h11 keeps waiting for more",
    "obs-fold": "h11 unfolds continuation lines; RFC 9112 lets a server refuse them, and folded framing "
    "fields are a smuggling classic",
    "field-value-controls": "control bytes and DEL in field values are not field-vchar (RFC 9110 5.5); "
    "h11 accepts them",
    "cl-and-te": "RFC 9112 6.3 lets a server drop Content-Length when Transfer-Encoding is present; a "
    "front end that reads the length instead is the CL.TE attack, so both is a 400",
    "cl-repeated": "repeated equal Content-Length values are allowed by RFC 9112 6.3 and h11; any second "
    "value is refused, so two parsers can never pick different ones",
    "chunk-ext-syntax": "chunk extensions are checked against their grammar, without the BWS RFC 9112 allows "
    "around ';' and '='; h11 skips extensions unread",
    "chunk-size-overflow": "a chunk size over 64 bits (or over the body limit) is refused at its line; h11 "
    "parses it with int() and waits for the data",
    "trailer-fields": "Content-Length, Transfer-Encoding and Host may not be trailers (RFC 9110 6.5.1); h11 "
    "accepts a well-formed Content-Length or Host there",
    "connection-tokens": "every Connection element must be a token; h11 does not look",
    "host-syntax": "Host must be a valid uri-host[:port] (RFC 9112 3.2); h11 only checks that there is one",
    "target-form": "the request target must be a form its method allows (RFC 9112 3.2); h11 accepts any "
    "visible characters",
    "version": "versions other than HTTP/1.0 and 1.1 get 505; h11 accepts any HTTP/x.y",
    "te-in-http10": "Transfer-Encoding in an HTTP/1.0 request is refused (RFC 9112 6.1 allows treating it "
    "as faulty); h11 accepts it",
    "http09": "a request line without a version (HTTP/0.9) is refused at its CRLF; h11 waits for a head",
    "limits": "veter's default limits (start line, field count and bytes, body, chunk count, extension and "
    "trailer bytes) refuse what h11, with no such limits, accepts or waits for",
}

#: Not a matter of what is accepted: both accept, then behave differently.
DIFFERENT: dict[str, str] = {
    "http10-keep-alive": "veter keeps an HTTP/1.0 connection open when the request asks with "
    "Connection: keep-alive (RFC 9112 9.3 allows it); h11 always closes after HTTP/1.0",
}
