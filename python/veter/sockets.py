"""The listening socket(s) a server or its workers serve on."""

from __future__ import annotations

import ctypes
import socket
import struct

__all__ = ["HANDSHAKE_GRACE", "bind", "reserve", "stop_handshakes"]

#: Seconds a listening socket that stops taking handshakes waits before it closes,
#: so that handshakes already under way (SYN answered, final ACK not yet in) end in
#: the accept queue instead of being reset by the close. Well above a handshake's
#: round trip between a proxy and its upstreams.
HANDSHAKE_GRACE = 0.05

_SO_ATTACH_FILTER = getattr(socket, "SO_ATTACH_FILTER", 26)
# A classic BPF socket filter run on each TCP segment for the listening socket, the
# data starting at the TCP header: drop a segment whose flags are SYN without ACK
# (a new handshake), keep every other one (the ACKs that finish handshakes already
# under way). Instructions are (code, jump if true, jump if false, k).
_DROP_NEW_HANDSHAKES = (
    (0x30, 0, 0, 13),  # ld byte at 13: the TCP flags
    (0x54, 0, 0, 0x12),  # and SYN|ACK
    (0x15, 1, 0, 0x02),  # == SYN alone? then skip to the drop
    (0x06, 0, 0, 0xFFFFFFFF),  # keep the segment
    (0x06, 0, 0, 0),  # drop it
)


def bind(host: str, port: int, backlog: int, *, reuse_port: bool = False) -> socket.socket:
    """A listening TCP socket, non-blocking, inheritable by forked workers.

    With ``reuse_port`` each worker binds its own socket with SO_REUSEPORT and the
    kernel spreads connections across them; without it (the default) the master
    binds once and every worker accepts from the same socket (see docs/design.md
    for why that is the default).
    """
    sock = _bound(host, port, reuse_port=reuse_port)
    try:
        sock.listen(backlog)
        sock.setblocking(False)
    except BaseException:
        sock.close()
        raise
    return sock


def reserve(host: str, port: int) -> socket.socket:
    """A socket bound with SO_REUSEPORT but not listening: it holds the port (the
    one the kernel picked, for port 0) so that every ``--reuse-port`` worker binds
    the same one. It never receives a connection: only listening sockets do."""
    return _bound(host, port, reuse_port=True)


def _bound(host: str, port: int, *, reuse_port: bool) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if reuse_port:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind((host, port))
    except BaseException:
        sock.close()
        raise
    return sock


def stop_handshakes(sock: socket.socket) -> bool:
    """Makes the kernel ignore new connection attempts (SYNs) to ``sock`` while
    handshakes already under way still complete into its accept queue.

    Called before a listening socket closes for good: a client whose SYN is
    ignored sends it again a second later and by then finds the socket closed
    (refused: safe to retry elsewhere) or, with ``--reuse-port``, another worker's
    socket. Closing without this resets every handshake whose final ACK arrives
    after the close, and the client may have sent its request by then. The filter
    applies to the socket, so to every process that shares it. Returns False where
    the platform has no socket filters (the socket then just closes).
    """
    raw = b"".join(struct.pack("HBBI", *insn) for insn in _DROP_NEW_HANDSHAKES)
    program = ctypes.create_string_buffer(raw, len(raw))
    # struct sock_fprog {unsigned short len; struct sock_filter *filter;}: the
    # kernel copies the program during the call, so the buffer may go after it.
    fprog = struct.pack("HP", len(_DROP_NEW_HANDSHAKES), ctypes.addressof(program))
    try:
        sock.setsockopt(socket.SOL_SOCKET, _SO_ATTACH_FILTER, fprog)
    except OSError:
        return False
    return True
