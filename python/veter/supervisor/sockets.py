"""The listening socket(s) workers serve on."""

from __future__ import annotations

import socket

__all__ = ["bind"]


def bind(host: str, port: int, backlog: int, *, reuse_port: bool = False) -> socket.socket:
    """A listening TCP socket, non-blocking, inheritable by forked workers.

    With ``reuse_port`` each worker binds its own socket with SO_REUSEPORT and the
    kernel spreads connections across them; without it (the default) the master
    binds once and every worker accepts from the same socket (see docs/design.md
    for why that is the default).
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if reuse_port:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind((host, port))
        sock.listen(backlog)
        sock.setblocking(False)
    except BaseException:
        sock.close()
        raise
    return sock
