"""h11 as the oracle: what it makes of the same bytes, in the corpus's terms."""

from __future__ import annotations

import h11

from .cases import Incomplete, Outcome, Reject, Request


def h11_outcomes(raw: bytes) -> list[Outcome]:
    """Feeds ``raw`` to an h11 server connection, answering each request with an
    empty 404 (neither a 101 nor a 2xx to CONNECT, so no protocol switch), until it
    errors, closes or needs more data."""
    conn = h11.Connection(h11.SERVER)
    conn.receive_data(raw)
    out: list[Outcome] = []
    current: dict[str, object] | None = None
    body = bytearray()
    while True:
        try:
            event = conn.next_event()
        except h11.RemoteProtocolError as exc:
            out.append(Reject(exc.error_status_hint))
            return out
        if event is h11.NEED_DATA:
            if current is not None or conn.trailing_data[0]:
                out.append(Incomplete())
            return out
        if isinstance(event, h11.Request):
            current = {
                "method": event.method.decode("latin-1"),
                "target": event.target.decode("latin-1"),
                "version": event.http_version.decode("latin-1"),
                "headers": [(n.decode("latin-1"), v.decode("latin-1")) for n, v in event.headers.raw_items()],
            }
            body.clear()
        elif isinstance(event, h11.Data):
            body += event.data
        elif isinstance(event, h11.EndOfMessage):
            assert current is not None
            conn.send(h11.Response(status_code=404, headers=[("Content-Length", "0")]))
            conn.send(h11.EndOfMessage())
            # Whether h11 keeps the connection shows once its response is sent.
            keep_alive = conn.our_state is not h11.MUST_CLOSE
            out.append(Request(body=bytes(body), keep_alive=keep_alive, **current))  # type: ignore[arg-type]
            current = None
            if not keep_alive:
                return out
            conn.start_next_cycle()
        else:  # ConnectionClosed or PAUSED: nothing more to read
            return out


def same_request(veter: Request, oracle: Request) -> bool:
    """The parsed fields agree. h11 lower-cases Transfer-Encoding values (its own
    normalisation), so those compare without case; keep-alive is compared apart."""

    def fold(headers: list[tuple[str, str]]) -> list[tuple[str, str]]:
        return [(n, v.lower() if n.lower() == "transfer-encoding" else v) for n, v in headers]

    return (veter.method, veter.target, veter.version, fold(veter.headers), veter.body) == (
        oracle.method,
        oracle.target,
        oracle.version,
        fold(oracle.headers),
        oracle.body,
    )
