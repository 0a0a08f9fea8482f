"""Where a server listens: TCP addresses (IPv4 and IPv6), Unix sockets, inherited
descriptors and systemd socket activation, several at once.

The listening set comes from the settings, first match wins:

- ``bind``: a list of ``HOST:PORT``, ``[IPV6]:PORT``, ``unix:PATH`` or ``fd://N``;
- ``uds`` (a Unix socket path) and ``fd`` (an inherited listening descriptor), and
  the sockets systemd passes (``LISTEN_FDS``, for this process's ``LISTEN_PID``);
  any of these together;
- otherwise ``host:port``.

Binding errors are ``BindError`` with a message that says what to do, never a
traceback: an address in use, a Unix socket path where another server listens or
where a file that is not a socket lies, a descriptor that is not a listening
stream socket. A Unix socket file left behind by a server that died (nobody
accepts on it) is replaced; the file a server created is removed when it stops.
"""

from __future__ import annotations

import contextlib
import errno
import os
import socket
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from veter.sockets import bind as bind_tcp
from veter.sockets import reserve

if TYPE_CHECKING:
    from veter.config import ServerConfig

__all__ = [
    "BindError",
    "Endpoint",
    "adopted",
    "endpoints_for",
    "listen",
    "listen_all",
    "parse",
    "remove_unix_file",
    "systemd_fds",
    "url_of",
]

#: The first descriptor systemd passes (SD_LISTEN_FDS_START).
SYSTEMD_FIRST_FD = 3

#: Unix socket files this process made, by the socket's own inode (the same for
#: its duplicates): (path, device, inode of the file), so that only those are
#: removed, and only while no other server has replaced them.
_created: dict[int, tuple[str, int, int]] = {}
#: Descriptors of inherited sockets: another process (systemd) keeps listening on
#: them after this one stops, so nothing may change them for good.
_adopted: set[int] = set()


def adopted(sock: socket.socket) -> bool:
    """Whether ``sock`` was inherited (``--fd``, systemd) rather than bound here."""
    return sock.fileno() in _adopted


class BindError(Exception):
    """A listening socket could not be had; the message says why and what to do."""


@dataclass(frozen=True)
class Endpoint:
    """One place to listen."""

    kind: Literal["tcp", "unix", "fd"]
    host: str = ""
    port: int = 0
    path: str = ""
    fd: int = -1

    def __str__(self) -> str:
        if self.kind == "unix":
            return f"unix:{self.path}"
        if self.kind == "fd":
            return f"fd://{self.fd}"
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"


def parse(text: str) -> Endpoint:
    """``HOST:PORT``, ``[IPV6]:PORT``, ``unix:PATH`` or ``fd://N``."""
    value = text.strip()
    if value.startswith("unix:"):
        path = value[len("unix:") :]
        if not path:
            raise ValueError(f"bind {text!r}: unix: needs a path (unix:/run/app.sock)")
        return Endpoint("unix", path=path)
    if value.startswith("fd://"):
        number = value[len("fd://") :]
        if not number.isdigit():
            raise ValueError(f"bind {text!r}: fd:// needs a descriptor number (fd://3)")
        return Endpoint("fd", fd=int(number))
    if value.startswith("["):
        host, sep, port = value[1:].partition("]:")
    else:
        host, sep, port = value.rpartition(":")
        if ":" in host:
            raise ValueError(f"bind {text!r}: write an IPv6 address in brackets ([::1]:8000)")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"bind {text!r}: expected HOST:PORT, [IPV6]:PORT, unix:PATH or fd://N")
    return Endpoint("tcp", host=host, port=int(port))


def systemd_fds(environ: Mapping[str, str] | None = None) -> list[int]:
    """The listening descriptors systemd passed to this process (socket activation)."""
    environ = os.environ if environ is None else environ
    count, pid = environ.get("LISTEN_FDS", ""), environ.get("LISTEN_PID", "")
    if not count or not pid.isdigit() or int(pid) != os.getpid():
        return []
    if not count.isdigit():
        raise BindError(f"LISTEN_FDS={count!r} is not a number of descriptors")
    return list(range(SYSTEMD_FIRST_FD, SYSTEMD_FIRST_FD + int(count)))


def endpoints_for(
    bind: tuple[str, ...],
    uds: str | None,
    fd: int | None,
    host: str,
    port: int,
    environ: Mapping[str, str] | None = None,
) -> list[Endpoint]:
    """The listening set the settings ask for (see the module's docstring)."""
    if bind:
        return [parse(item) for item in bind]
    found = [Endpoint("fd", fd=n) for n in systemd_fds(environ)]
    if uds:
        found.append(Endpoint("unix", path=uds))
    if fd is not None:
        found.append(Endpoint("fd", fd=fd))
    return found or [Endpoint("tcp", host=host, port=port)]


def listen(
    endpoint: Endpoint, backlog: int, *, uds_mode: int = 0o660, reuse_port: bool = False
) -> socket.socket:
    """A non-blocking listening socket for ``endpoint``; ``BindError`` when it cannot be had."""
    if endpoint.kind == "tcp":
        try:
            return bind_tcp(endpoint.host, endpoint.port, backlog, reuse_port=reuse_port)
        except OSError as exc:
            raise BindError(_tcp_problem(endpoint, exc)) from None
    if endpoint.kind == "unix":
        return _listen_unix(endpoint.path, backlog, uds_mode)
    return adopt(endpoint.fd)


def reserve_port(endpoint: Endpoint) -> socket.socket:
    """``sockets.reserve`` with ``BindError`` (for ``--reuse-port``)."""
    try:
        return reserve(endpoint.host, endpoint.port)
    except OSError as exc:
        raise BindError(_tcp_problem(endpoint, exc)) from None


def _tcp_problem(endpoint: Endpoint, exc: OSError) -> str:
    where = f"cannot listen on {endpoint}"
    if exc.errno == errno.EADDRINUSE:
        return (
            f"{where}: the address is in use (another server listens there; "
            f"`ss -ltnp 'sport = :{endpoint.port}'` shows which)"
        )
    if exc.errno == errno.EADDRNOTAVAIL:
        return f"{where}: no network interface of this machine has that address"
    if exc.errno == errno.EACCES:
        return f"{where}: permission denied (ports below 1024 need privileges)"
    if isinstance(exc, socket.gaierror):
        return f"{where}: unknown host {endpoint.host!r} ({exc.strerror})"
    return f"{where}: {exc.strerror or exc}"


def _listen_unix(path: str, backlog: int, mode: int) -> socket.socket:
    where = f"cannot listen on unix:{path}"
    try:
        existing = os.lstat(path)
    except FileNotFoundError:
        existing = None
    except OSError as exc:
        raise BindError(f"{where}: {exc.strerror}") from None
    if existing is not None:
        if not stat.S_ISSOCK(existing.st_mode):
            raise BindError(f"{where}: the path exists and is not a socket (not removing it)")
        if _someone_listens(path):
            raise BindError(f"{where}: another server listens on it")
        os.unlink(path)  # stale: left by a server that did not stop cleanly
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.bind(path)
        os.chmod(path, mode)
        sock.listen(backlog)
        sock.setblocking(False)
        made = os.stat(path)
    except OSError as exc:
        sock.close()
        raise BindError(f"{where}: {exc.strerror or exc}") from None
    _created[os.fstat(sock.fileno()).st_ino] = (path, made.st_dev, made.st_ino)
    return sock


def _someone_listens(path: str) -> bool:
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.connect(path)
    except OSError:
        return False
    finally:
        probe.close()
    return True


def adopt(fd: int) -> socket.socket:
    """The inherited listening socket ``fd`` (``--fd``, systemd), checked."""
    where = f"cannot serve on fd://{fd}"
    try:
        sock = socket.socket(fileno=fd)
    except OSError as exc:
        raise BindError(f"{where}: {exc.strerror or exc} (is the descriptor open in this process?)") from None
    try:
        if sock.type != socket.SOCK_STREAM:
            raise BindError(f"{where}: not a stream socket")
        if not sock.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN):
            raise BindError(f"{where}: the socket is not listening")
        if sock.family not in (socket.AF_INET, socket.AF_INET6, socket.AF_UNIX):
            raise BindError(f"{where}: not a TCP or Unix socket")
        sock.setblocking(False)
        os.set_inheritable(fd, True)
        _adopted.add(fd)
    except BaseException:
        sock.detach()  # not ours to close: the error leaves the descriptor as it was
        raise
    return sock


def url_of(sock: socket.socket, scheme: str = "http") -> str:
    """How logs name a listening socket: ``http://127.0.0.1:8000``, ``http://[::1]:8000``,
    ``unix:/run/app.sock``."""
    if sock.family == socket.AF_UNIX:
        name = sock.getsockname()
        return f"unix:{name.decode() if isinstance(name, bytes) else name}"
    host, port = sock.getsockname()[:2]
    return f"{scheme}://[{host}]:{port}" if sock.family == socket.AF_INET6 else f"{scheme}://{host}:{port}"


def remove_unix_file(sock: socket.socket) -> None:
    """Removes the file of a Unix socket this process bound, when it stops; not if
    another server has put its own socket at the path since."""
    if sock.family != socket.AF_UNIX:
        return
    with contextlib.suppress(OSError):
        made = _created.pop(os.fstat(sock.fileno()).st_ino, None)
        if made is None:
            return
        path, device, inode = made
        now = os.stat(path)
        if (now.st_dev, now.st_ino) == (device, inode):
            os.unlink(path)


def listen_all(config: ServerConfig, *, reuse_port: bool = False) -> list[socket.socket]:
    """Listening sockets for every endpoint ``config`` names (``binds.BindError``
    when one cannot be had; those already made are closed)."""
    made: list[socket.socket] = []
    try:
        for endpoint in endpoints_for(config.bind, config.uds, config.fd, config.host, config.port):
            made.append(
                listen(endpoint, config.backlog, uds_mode=int(config.uds_mode, 8), reuse_port=reuse_port)
            )
    except BaseException:
        for sock in made:
            remove_unix_file(sock)
            sock.close()
        raise
    return made
