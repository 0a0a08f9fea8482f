"""Just enough HTTP/2 client to poll a server over h2c and to make a core's input bytes.

Frames are built by hand (RFC 9113), header blocks with HPACK literals that are never
indexed and never Huffman-coded (RFC 7541 6.2.2): every request's block is the same
bytes, whatever came before on the connection. Reading an answer goes as far as its
`:status`, which a server sends indexed (200 is static entry 8) or as a literal,
possibly Huffman-coded (digits only are decoded here).
"""

import socket
import struct
from collections.abc import Iterator

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

DATA, HEADERS, RST_STREAM, SETTINGS, GOAWAY, WINDOW_UPDATE = 0x0, 0x1, 0x3, 0x4, 0x7, 0x8
END_STREAM, ACK, END_HEADERS, PADDED, PRIORITY = 0x1, 0x1, 0x4, 0x8, 0x20

#: RFC 7541 Appendix A: the static table's indices used here (4 is `:path: /`, and the
#: name `:path` for a literal of any other path).
_AUTHORITY, _METHOD_GET, _METHOD_POST, _PATH, _SCHEME_HTTP = 1, 2, 3, 4, 6
_CONTENT_LENGTH, _CONTENT_TYPE = 28, 31
#: Static entries 8-14 are `:status` with 200, 204, 206, 304, 400, 404 and 500.
_STATUS_BY_INDEX = {8: 200, 9: 204, 10: 206, 11: 304, 12: 400, 13: 404, 14: 500}
#: RFC 7541 Appendix B, the digits' codes: (code, bit length) -> digit.
_HUFFMAN_DIGITS = {(i, 5): str(i) for i in range(3)} | {(0x19 + i - 3, 6): str(i) for i in range(3, 10)}


def frame(kind: int, flags: int, stream: int, payload: bytes = b"") -> bytes:
    return struct.pack(">I", len(payload))[1:] + bytes((kind, flags)) + struct.pack(">I", stream) + payload


_INITIAL_WINDOW_SIZE = 0x4
#: The default flow-control window (RFC 9113 6.9.2), of a stream and of the connection.
DEFAULT_WINDOW = 65_535


def settings(ack: bool = False, initial_window: int | None = None) -> bytes:
    """A SETTINGS frame (every setting at its default but the stream window, if named),
    or its acknowledgement."""
    if ack:
        return frame(SETTINGS, ACK, 0)
    payload = struct.pack(">HI", _INITIAL_WINDOW_SIZE, initial_window) if initial_window is not None else b""
    return frame(SETTINGS, 0, 0, payload)


def window_update(stream: int, increment: int) -> bytes:
    return frame(WINDOW_UPDATE, 0, stream, struct.pack(">I", increment))


def open_windows(window: int = (1 << 30) - 1) -> bytes:
    """SETTINGS and a connection WINDOW_UPDATE giving streams and the connection `window`
    bytes to send to us (h2load's default, 2**30 - 1): a client that sent no WINDOW_UPDATE
    would find the connection's window of 65,535 bytes spent after a few thousand answers."""
    return settings(initial_window=window) + window_update(0, window - DEFAULT_WINDOW)


def _integer(value: int, prefix_bits: int, first: int) -> bytes:
    """RFC 7541 5.1: `value` in a prefix of `prefix_bits`, `first` holding the pattern bits."""
    limit = (1 << prefix_bits) - 1
    if value < limit:
        return bytes((first | value,))
    out, value = [first | limit], value - limit
    while value >= 128:
        out.append(value % 128 + 128)
        value //= 128
    return bytes((*out, value))


def literal(name_index: int, value: str) -> bytes:
    """A literal header field never indexed, its name a static table entry, its value raw."""
    raw = value.encode()
    return _integer(name_index, 4, 0x10) + _integer(len(raw), 7, 0) + raw


def request_block(method: str, path: str, authority: str, headers: tuple[tuple[int, str], ...] = ()) -> bytes:
    """The header block of a request (`headers`: static name index, value)."""
    methods = {"GET": _METHOD_GET, "POST": _METHOD_POST}
    block = bytes((0x80 | methods[method], 0x80 | _SCHEME_HTTP))
    block += bytes((0x80 | _PATH,)) if path == "/" else literal(_PATH, path)
    block += literal(_AUTHORITY, authority)
    return block + b"".join(literal(index, value) for index, value in headers)


def get(stream: int, path: str, authority: str) -> bytes:
    """A GET as one HEADERS frame that ends the stream."""
    return frame(HEADERS, END_HEADERS | END_STREAM, stream, request_block("GET", path, authority))


def post(stream: int, path: str, authority: str, body: bytes) -> bytes:
    """A POST: a HEADERS frame (with content-length and an octet-stream content-type),
    then the body in one DATA frame that ends the stream."""
    fields = ((_CONTENT_LENGTH, str(len(body))), (_CONTENT_TYPE, "application/octet-stream"))
    head = frame(HEADERS, END_HEADERS, stream, request_block("POST", path, authority, fields))
    return head + frame(DATA, END_STREAM, stream, body)


def frames(data: bytes) -> Iterator[tuple[int, int, int, bytes]]:
    """(type, flags, stream, payload) of each whole frame in `data`; a partial one ends it."""
    at = 0
    while at + 9 <= len(data):
        length = int.from_bytes(data[at : at + 3], "big")
        if at + 9 + length > len(data):
            return
        kind, flags = data[at + 3], data[at + 4]
        stream = int.from_bytes(data[at + 5 : at + 9], "big") & 0x7FFFFFFF
        yield kind, flags, stream, data[at + 9 : at + 9 + length]
        at += 9 + length


def status_of(flags: int, payload: bytes) -> int | None:
    """The `:status` a HEADERS frame's block starts with (RFC 9113 8.3.2: first), or None
    when it is not there in a form read here."""
    if flags & PADDED:
        payload = payload[1 : len(payload) - payload[0]]
    if flags & PRIORITY:
        payload = payload[5:]
    if not payload:
        return None
    first = payload[0]
    if first & 0x80:
        return _STATUS_BY_INDEX.get(first & 0x7F)
    # A literal whose name is a :status entry: with indexing (01xxxxxx), without or
    # never indexed (000xxxxx, 0001xxxx); 8-14 fit every prefix.
    name = first & 0x3F if first & 0x40 else first & 0x0F
    if name not in _STATUS_BY_INDEX or len(payload) < 2:
        return None
    huffman, length = payload[1] & 0x80, payload[1] & 0x7F
    raw = payload[2 : 2 + length]
    text = _huffman_digits(raw) if huffman else raw.decode("ascii", "replace")
    return int(text) if text and text.isdigit() else None


def _huffman_digits(raw: bytes) -> str | None:
    """A Huffman-coded string of digits (the padding is 1 bits), or None if not one."""
    bits = "".join(f"{byte:08b}" for byte in raw)
    out, code, size = [], 0, 0
    for bit in bits:
        code, size = code * 2 + (bit == "1"), size + 1
        digit = _HUFFMAN_DIGITS.get((code, size))
        if digit is not None:
            out.append(digit)
            code, size = 0, 0
        elif size > 7:
            return None
    return "".join(out) if code == (1 << size) - 1 else None


class NotHttp2(RuntimeError):
    """The server answered the HTTP/2 preface with something else (an HTTP/1.1 error, say)."""


def status(port: int, path: str, timeout: float = 1.0) -> int | None:
    """One GET over a fresh h2c connection (prior knowledge); the `:status` of the answer,
    or None if nothing answered over HTTP/2 (raises NotHttp2 when HTTP/1.1 answered)."""
    authority = f"127.0.0.1:{port}"
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
            sock.sendall(PREFACE + settings() + get(1, path, authority))
            data = b""
            while len(data) < 1 << 16:
                chunk = sock.recv(1 << 16)
                if not chunk:
                    break
                data += chunk
                if data.startswith(b"HTTP/"):
                    line = data.split(b"\r\n", 1)[0].decode("latin-1")
                    raise NotHttp2(f"answered the HTTP/2 preface with {line!r}")
                for kind, flags, stream, payload in frames(data):
                    if kind == HEADERS and stream == 1:
                        return status_of(flags, payload)
                    if kind == GOAWAY or (kind == RST_STREAM and stream == 1):
                        return None
    except OSError:
        return None
    return None
