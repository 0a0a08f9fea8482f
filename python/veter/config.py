"""Server settings: one dataclass, every limit with its documented default."""

from __future__ import annotations

import ipaddress
from dataclasses import asdict, dataclass, fields, replace
from typing import Any, Literal

from veter.binds import parse as parse_bind

__all__ = ["ServerConfig"]

LoopName = Literal["auto", "uvloop", "asyncio"]
LogFormat = Literal["text", "json"]


@dataclass(frozen=True)
class ServerConfig:
    """How a veter server listens and what it accepts. See docs/guide.md, "Limits"."""

    host: str = "127.0.0.1"
    port: int = 8000
    #: Listen on these instead of host:port: "HOST:PORT", "[IPV6]:PORT", "unix:PATH", "fd://N".
    bind: tuple[str, ...] = ()
    #: Listen on this Unix socket path instead of host:port (with fd and systemd's sockets, if any).
    uds: str | None = None
    #: Permissions of the Unix socket file, octal.
    uds_mode: str = "0660"
    #: Serve an inherited listening socket (its descriptor number) instead of host:port.
    fd: int | None = None
    #: Event loop: uvloop when installed ("auto"), or force one.
    loop: LoopName = "auto"
    #: Listen backlog passed to listen(2).
    backlog: int = 2048
    #: Seconds an idle keep-alive connection stays open (checked once a second).
    keepalive_timeout: float = 5.0
    #: Seconds from the first byte of a request head to its end (slowloris); 408 after it.
    header_timeout: float = 10.0
    #: Seconds of silence allowed while a request body is incomplete; 408 after it.
    body_timeout: float = 30.0
    #: Seconds a client may leave the response buffer full (not reading) before it is dropped.
    write_timeout: float = 30.0
    #: A handler's deadline in seconds (0: none): its task is cancelled and the client gets 504.
    request_timeout: float = 60.0
    #: Handlers in flight per worker (0: no cap); above it the worker stops reading new requests.
    max_concurrency: int = 0
    #: Connections one worker serves at once (0: no cap); more are accepted but not read until one closes.
    max_connections: int = 0
    #: Seconds a request may wait before its handler starts (0: off); later ones get 503 + Retry-After.
    queue_timeout: float = 0.0
    #: Warn (naming the route and its stack) when the event loop is blocked this long (0: off).
    lag_threshold: float = 0.25
    #: Seconds SIGTERM/SIGINT waits for in-flight requests before closing connections.
    graceful_timeout: float = 30.0
    #: Believe X-Forwarded-For/-Proto/-Host and Forwarded from trusted proxies (docs/deploy.md).
    proxy_headers: bool = False
    #: Trusted proxies: comma-separated addresses and CIDR networks, "unix" for the Unix socket, "*" for any.
    forwarded_allow_ips: str = "127.0.0.1,unix"
    #: Seconds a stopping instance keeps serving, /readyz answering 503 and every answer closing its
    #: connection, before it drains (so a load balancer stops sending it traffic first; 0: off).
    drain_delay: float = 0.0
    #: Value of the Server header; None sends no Server header.
    server_header: str | None = "veter"
    #: Longest request line in bytes (414 above it).
    max_start_line: int = 8192
    #: Most header fields in a request (431 above it).
    max_header_count: int = 100
    #: Most bytes of header fields in a request (431 above it).
    max_header_bytes: int = 16384
    #: Largest request body in bytes, after chunked decoding (413 above it).
    max_body_bytes: int = 10 * 1024 * 1024
    #: Most bytes of extensions on one chunk-size line (400 above it).
    max_chunk_ext_bytes: int = 1024
    #: Most bytes of trailer fields after a chunked body; 0 refuses any (431 above it).
    max_trailer_bytes: int = 16384
    #: Most chunks in one chunked body, the last one included (413 above it).
    max_chunk_count: int = 16384
    #: Handlers of one connection in flight at once; further pipelined requests wait unread.
    max_pipelined: int = 64
    #: Threads for blocking=True routes and run_in_thread.
    max_threads: int = 40
    #: TLS certificate chain (PEM); with ssl_keyfile, the server speaks HTTPS.
    ssl_certfile: str | None = None
    #: TLS private key (PEM); may be the certfile itself when it holds both.
    ssl_keyfile: str | None = None
    #: Password of an encrypted ssl_keyfile.
    ssl_keyfile_password: str | None = None
    #: Serve Prometheus metrics at this path (e.g. "/metrics"); None: off.
    metrics_path: str | None = None
    #: Header carrying the request id, in and out; None turns request ids off.
    request_id_header: str | None = "X-Request-ID"
    #: Access log destination: "-" for stdout, a file path, or None for off.
    access_log: str | None = "-"
    #: Access log format: "text", "json", or a template of {fields} (docs/toolkit.md).
    access_log_format: str = "text"
    #: Whether health probes (/healthz, /readyz) appear in the access log.
    access_log_health: bool = False
    #: Bytes of access log lines a worker buffers before writing them at once.
    log_buffer_bytes: int = 65536
    #: Seconds a buffered access log line may wait before it is written (0: at the end of its loop iteration).
    log_flush_interval: float = 0.05
    #: Application log destination: None for stderr, or a file path.
    log_file: str | None = None
    #: Application log format.
    log_format: LogFormat = "text"
    #: Application log level (debug, info, warning, error, critical).
    log_level: str = "info"
    #: Rotate log files (access log and log_file) when one passes this many bytes (0: never).
    log_max_bytes: int = 0
    #: Rotate log files every this many seconds (0: never).
    log_rotate_interval: float = 0.0
    #: Rotated files kept (name.1 is the newest); older ones are deleted.
    log_backups: int = 7
    #: Largest WebSocket message accepted, in bytes (a bigger one closes with 1009).
    ws_max_message_size: int = 1024 * 1024
    #: Bytes of received WebSocket messages a connection holds before it stops reading.
    ws_max_queue: int = 4 * 1024 * 1024
    #: Seconds between keep-alive pings on a quiet WebSocket (0: no pings).
    ws_ping_interval: float = 20.0
    #: Seconds a ping waits for its pong before the connection is closed (1011).
    ws_ping_timeout: float = 20.0
    #: Seconds close() waits for the peer's close frame before dropping the connection.
    ws_close_timeout: float = 5.0
    #: Agree to permessage-deflate (RFC 7692) when a WebSocket client offers it.
    ws_deflate: bool = True
    #: The server's largest WebSocket compression window, 9-15 (2**bits bytes; zlib
    #: also keeps 128 KiB of state per compressing connection).
    ws_deflate_window_bits: int = 12
    #: zlib level of WebSocket compression, 1 (fastest) to 9 (smallest).
    ws_deflate_level: int = 1
    #: WebSocket messages shorter than this many bytes are sent uncompressed.
    ws_deflate_min_size: int = 128

    def __post_init__(self) -> None:
        # "off" turns these off from a flag, the environment or a TOML file alike.
        for name in ("access_log", "request_id_header", "metrics_path"):
            if isinstance(getattr(self, name), str) and getattr(self, name).strip().lower() == "off":
                object.__setattr__(self, name, None)
        positive = (
            "backlog",
            "max_start_line",
            "max_header_count",
            "max_header_bytes",
            "max_chunk_count",
            "max_pipelined",
            "max_threads",
            "log_buffer_bytes",
            "ws_max_message_size",
            "ws_max_queue",
        )
        for name in positive:
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
        for name in ("max_body_bytes", "max_chunk_ext_bytes", "max_trailer_bytes"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)}")
        for name in (
            "keepalive_timeout",
            "graceful_timeout",
            "header_timeout",
            "body_timeout",
            "write_timeout",
        ):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be a positive number of seconds")
        for name in ("ws_ping_interval", "ws_ping_timeout"):
            if not getattr(self, name) >= 0:
                raise ValueError(f"{name} must be a number of seconds >= 0 (0: off)")
        if not self.ws_close_timeout > 0:
            raise ValueError("ws_close_timeout must be a positive number of seconds")
        if not 9 <= self.ws_deflate_window_bits <= 15:
            raise ValueError(f"ws_deflate_window_bits must be 9 to 15, got {self.ws_deflate_window_bits}")
        if not 1 <= self.ws_deflate_level <= 9:
            raise ValueError(f"ws_deflate_level must be 1 to 9, got {self.ws_deflate_level}")
        if self.ws_deflate_min_size < 0:
            raise ValueError(f"ws_deflate_min_size must be >= 0, got {self.ws_deflate_min_size}")
        if not 0 <= self.drain_delay <= 3600:
            raise ValueError(f"drain_delay must be 0-3600 seconds (0: off), got {self.drain_delay}")
        if not self.lag_threshold >= 0:
            raise ValueError("lag_threshold must be a number of seconds >= 0 (0: off)")
        if self.max_connections < 0:
            raise ValueError("max_connections must be >= 0 (0: no cap)")
        if self.max_concurrency < 0:
            raise ValueError("max_concurrency must be >= 0 (0: no cap)")
        if not self.queue_timeout >= 0:
            raise ValueError("queue_timeout must be a number of seconds >= 0 (0: off)")
        if not self.request_timeout >= 0:
            raise ValueError("request_timeout must be a number of seconds >= 0 (0: no deadline)")
        if not 0 <= self.port <= 65535:
            raise ValueError(f"port must be 0-65535, got {self.port}")
        if self.log_format not in ("text", "json"):
            raise ValueError(f"log_format must be text or json, got {self.log_format!r}")
        if self.log_level.upper() not in ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"):
            raise ValueError(
                f"log_level must be debug, info, warning, error or critical, got {self.log_level!r}"
            )
        if self.access_log_format not in ("text", "json") and "{" not in self.access_log_format:
            raise ValueError(
                f"access_log_format must be text, json or a template of {{fields}}, got {self.access_log_format!r}"
            )
        if not 0 <= self.log_flush_interval <= 60:
            raise ValueError("log_flush_interval must be 0-60 seconds (0: at the end of each loop iteration)")
        if self.log_max_bytes < 0:
            raise ValueError("log_max_bytes must be >= 0 (0: no size rotation)")
        if not self.log_rotate_interval >= 0:
            raise ValueError("log_rotate_interval must be a number of seconds >= 0 (0: no time rotation)")
        if self.log_backups < 1:
            raise ValueError("log_backups must be at least 1")
        if self.ssl_keyfile is not None and self.ssl_certfile is None:
            raise ValueError("ssl_keyfile needs ssl_certfile")
        if self.metrics_path is not None and not self.metrics_path.startswith("/"):
            raise ValueError(f"metrics_path must start with '/', got {self.metrics_path!r}")
        if self.access_log == "":
            raise ValueError("access_log must be '-' (stdout), a path, or None (off)")
        _check_trusted(self.forwarded_allow_ips)
        for item in self.bind:
            parse_bind(item)
        try:
            mode = int(self.uds_mode, 8)
        except ValueError:
            mode = -1
        if not 0 <= mode <= 0o777:
            raise ValueError(f"uds_mode must be octal permissions such as 0660, got {self.uds_mode!r}")
        if self.fd is not None and self.fd < 0:
            raise ValueError(f"fd must be a descriptor number >= 0, got {self.fd}")
        if self.loop not in ("auto", "uvloop", "asyncio"):
            raise ValueError(f"loop must be auto, uvloop or asyncio, got {self.loop!r}")

    def with_(self, **changes: Any) -> ServerConfig:
        """A copy with ``changes`` applied (unknown names raise TypeError)."""
        known = {f.name for f in fields(self)}
        unknown = set(changes) - known
        if unknown:
            raise TypeError(f"unknown server setting(s): {', '.join(sorted(unknown))}")
        return replace(self, **changes)

    def dispatcher_kwargs(self) -> dict[str, Any]:
        keys = (
            "server_header",
            "keepalive_timeout",
            "header_timeout",
            "body_timeout",
            "write_timeout",
            "request_timeout",
            "max_concurrency",
            "max_connections",
            "queue_timeout",
            "max_start_line",
            "max_header_count",
            "max_header_bytes",
            "max_body_bytes",
            "max_chunk_ext_bytes",
            "max_trailer_bytes",
            "max_chunk_count",
            "max_pipelined",
            "request_id_header",
            "access_log_format",
        )
        values = asdict(self)
        kwargs = {k: values[k] for k in keys}
        kwargs["forwarded_allow_ips"] = self.forwarded_allow_ips if self.proxy_headers else None
        kwargs["secure"] = self.ssl_certfile is not None
        return kwargs


def _check_trusted(spec: str) -> None:
    """The same rules as the core's parser (src/proxy.rs), checked before any worker starts."""
    for item in (part.strip() for part in spec.split(",")):
        if not item or item in ("*", "unix"):
            continue
        try:
            ipaddress.ip_network(item, strict=False)
        except ValueError:
            raise ValueError(
                f"forwarded_allow_ips: {item!r} is not an IP address, a CIDR network (10.0.0.0/8), 'unix' or '*'"
            ) from None
