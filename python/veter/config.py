"""Server settings: one dataclass, every limit with its documented default."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, fields, replace
from typing import Any, Literal

from veter.binds import parse as parse_bind
from veter.options import check, setting

__all__ = ["ServerConfig"]

LoopName = Literal["auto", "uvloop", "asyncio"]
LogFormat = Literal["text", "json"]
Interface = Literal["auto", "veter", "asgi", "wsgi"]
LifespanMode = Literal["auto", "on", "off"]


@dataclass(frozen=True)
class ServerConfig:
    """How a veter server listens and what it accepts: every setting declared once
    (``veter.options``); docs/settings.md is the table made from these lines."""

    host: str = setting("127.0.0.1", "Interface to bind (:: for IPv6).")
    port: int = setting(8000, "Port to bind (0: any free port).", ge=0, le=65535)
    bind: tuple[str, ...] = setting(
        (),
        "Listen here instead of host:port; repeat for several: HOST:PORT, [IPV6]:PORT, unix:PATH or fd://N.",
    )
    uds: str | None = setting(None, "Listen on this Unix socket path instead of host:port.")
    uds_mode: str = setting("0660", "Permissions of the Unix socket file, octal.")
    fd: int | None = setting(
        None,
        "Serve this inherited listening socket descriptor instead of host:port "
        "(systemd's LISTEN_FDS are used without it).",
        ge=0,
    )
    loop: LoopName = setting("auto", "Event loop: uvloop when installed (auto), or force one.")
    backlog: int = setting(2048, "Listen backlog passed to listen(2).", ge=1)
    keepalive_timeout: float = setting(5.0, "Seconds an idle keep-alive connection stays open.", gt=0)
    header_timeout: float = setting(
        10.0, "Seconds from the first byte of a request head to its end (slowloris); 408 after it.", gt=0
    )
    body_timeout: float = setting(
        30.0, "Seconds of silence allowed while a request body is incomplete; 408 after it.", gt=0
    )
    write_timeout: float = setting(
        30.0, "Seconds a client may leave the response buffer full (not reading) before it is dropped.", gt=0
    )
    request_timeout: float = setting(
        60.0,
        "A handler's deadline in seconds: its task is cancelled and the client gets 504 (0: none).",
        ge=0,
    )
    linger_timeout: float = setting(
        2.0,
        "Seconds a connection the server closes keeps reading (and dropping) what the client still "
        "sends, so that the client reads the last answer (a 413, a 400) instead of a reset (0: close at once).",
        ge=0,
    )
    linger_bytes: int = setting(
        4 << 20,
        "Bytes a closing connection reads and drops (linger_timeout) before it closes anyway (0: none).",
        ge=0,
    )
    max_concurrency: int = setting(
        0, "Handlers in flight per worker; above it the worker stops reading new requests (0: no cap).", ge=0
    )
    max_connections: int = setting(
        0, "Connections one worker serves at once; more wait unread until one closes (0: no cap).", ge=0
    )
    queue_timeout: float = setting(
        0.0,
        "Seconds a request may wait before its handler starts; later ones get 503 + Retry-After (0: off).",
        ge=0,
    )
    gc_freeze: bool = setting(
        True,
        "Once the app has started, exempt every object then alive (the app, its imports, what startup "
        "hooks made) from the cyclic garbage collector (gc.freeze), so a full collection scans only what "
        "serving made since: pauses of milliseconds instead of tens of them under a large app.",
    )
    gc_threshold: int = setting(
        20_000,
        "The most tracked objects a worker may make (net of those freed) before the collector's "
        "young generation is collected (gc.set_threshold's first value; 0: Python's own, 700 or "
        "2,000, left alone). Above what requests in flight hold, so a collection walks garbage, "
        "not live requests.",
        ge=0,
    )
    gc_adaptive: bool = setting(
        True,
        "After each young collection, size its threshold to find about 500 dead objects "
        "(cycles) the next time, between Python's own and gc_threshold: short pauses for apps "
        "that leave cycles behind (Flask), the ceiling for those that leave none (off: "
        "gc_threshold, fixed).",
    )
    lag_threshold: float = setting(
        0.25, "Warn, naming the route and its stack, when the event loop is blocked this long (0: off).", ge=0
    )
    graceful_timeout: float = setting(
        30.0, "Seconds SIGTERM/SIGINT waits for in-flight requests before closing connections.", gt=0
    )
    proxy_headers: bool = setting(
        False,
        "Take the client's address, scheme and host from X-Forwarded-* and Forwarded headers "
        "sent by a trusted proxy (forwarded_allow_ips; docs/deploy.md).",
    )
    forwarded_allow_ips: str = setting(
        "127.0.0.1,unix",
        "Trusted proxies: comma-separated addresses and CIDR networks, 'unix' for the Unix socket, '*' for any.",
    )
    drain_delay: float = setting(
        0.0,
        "Seconds a stopping instance keeps serving, /readyz answering 503 and every answer closing its "
        "connection, before it drains (a load balancer stops sending it traffic first; 0: off).",
        ge=0,
        le=3600,
    )
    server_header: str | None = setting(
        "veter", "Value of the Server header.", none_flag=("--no-server-header", "Send no Server header.")
    )
    max_start_line: int = setting(8192, "Longest request line in bytes (414 above it).", ge=1)
    max_header_count: int = setting(100, "Most header fields in a request (431 above it).", ge=1)
    max_header_bytes: int = setting(16384, "Most bytes of header fields in a request (431 above it).", ge=1)
    max_body_bytes: int = setting(
        10 * 1024 * 1024, "Largest request body in bytes, after chunked decoding (413 above it).", ge=0
    )
    max_chunk_ext_bytes: int = setting(
        1024, "Most bytes of extensions on one chunk-size line (400 above it).", ge=0
    )
    max_trailer_bytes: int = setting(
        16384, "Most bytes of trailer fields after a chunked body; 0 refuses any (431 above it).", ge=0
    )
    max_chunk_count: int = setting(
        16384, "Most chunks in one chunked body, the last one included (413 above it).", ge=1
    )
    max_json_depth: int = setting(
        200,
        "Deepest nesting ([ and { levels) of a typed handler's JSON body; a deeper one gets 400 before "
        "it is decoded.",
        ge=1,
        le=500,
    )
    form_max_fields: int = setting(
        1000,
        "Most fields and files in one form body, request.form() and Form() parameters (413 above it).",
        ge=1,
    )
    form_max_files: int = setting(100, "Most files in one multipart form body (413 above it).", ge=0)
    form_max_field_bytes: int = setting(
        1024 * 1024, "Largest text field of a form body, in bytes after decoding (413 above it).", ge=1
    )
    form_max_file_bytes: int = setting(
        0,
        "Largest file of a multipart form body in bytes (413 above it); 0: only max_body_bytes bounds it.",
        ge=0,
    )
    form_max_part_header_bytes: int = setting(
        16384, "Most bytes of one multipart part's headers (413 above it).", ge=1
    )
    form_spool_bytes: int = setting(
        1024 * 1024,
        "A form's file is kept in memory up to this many bytes, then in a temporary file on disk.",
        ge=0,
    )
    max_pipelined: int = setting(
        64, "Handlers of one connection in flight at once; further pipelined requests wait unread.", ge=1
    )
    max_threads: int = setting(40, "Threads for blocking=True routes and run_in_thread.", ge=1)
    ssl_certfile: str | None = setting(
        None, "TLS certificate chain (PEM); with ssl_keyfile, the server speaks HTTPS."
    )
    ssl_keyfile: str | None = setting(
        None, "TLS private key (PEM); may be the certfile itself when it holds both."
    )
    ssl_keyfile_password: str | None = setting(None, "Password of an encrypted ssl_keyfile.")
    http2: bool = setting(
        True,
        "Serve HTTP/2 beside HTTP/1.1: h2 by ALPN over TLS, and h2c (clear text) per the h2c setting.",
    )
    h2c: bool = setting(
        True,
        "With http2, serve clear-text HTTP/2 to clients that start with its preface (prior knowledge).",
    )
    h2c_upgrade: bool = setting(
        True,
        "With http2, switch a clear-text HTTP/1.1 request without a body that asks for `Upgrade: h2c` to HTTP/2.",
    )
    http1: bool = setting(
        True,
        "Serve HTTP/1.1; false: HTTP/2 only (ALPN offers h2 alone, and a clear-text connection that does "
        "not start with the HTTP/2 preface is closed unanswered), as gRPC and h2c upstream ports are.",
    )
    h2_max_concurrent_streams: int = setting(
        100, "HTTP/2 streams one client may have open at once; more are refused (REFUSED_STREAM).", ge=1
    )
    h2_max_header_list_size: int = setting(
        16 * 1024,
        "Bytes of one HTTP/2 request's decoded header list (HPACK sizes); more is answered 431.",
        ge=1024,
    )
    h2_header_table_size: int = setting(
        4096, "Bytes of the HPACK table a client's encoder may use on one connection.", ge=0, le=1 << 20
    )
    h2_max_frame_size: int = setting(
        16 * 1024, "Largest HTTP/2 frame accepted, in bytes (16 KiB to 16 MiB).", ge=1 << 14, le=(1 << 24) - 1
    )
    h2_initial_window_size: int = setting(
        256 * 1024,
        "Bytes of a request body an HTTP/2 client may send ahead of the app, per stream (flow control).",
        ge=1,
        le=(1 << 31) - 1,
    )
    h2_connection_window: int = setting(
        1024 * 1024,
        "Bytes an HTTP/2 client may have in flight on one connection, all streams together.",
        ge=65535,
        le=(1 << 31) - 1,
    )
    h2_max_continuation_frames: int = setting(
        32, "CONTINUATION frames allowed in one HTTP/2 header block (CVE-2024-27316).", ge=1
    )
    h2_max_resets_per_second: int = setting(
        200,
        "HTTP/2 streams reset per second per connection (by the client, or for its errors) before "
        "the connection is closed with ENHANCE_YOUR_CALM (Rapid Reset, CVE-2023-44487).",
        ge=1,
    )
    h2_max_control_frames_per_second: int = setting(
        1000,
        "HTTP/2 frames per second per connection that make no progress (SETTINGS, PING, PRIORITY, "
        "empty DATA...) before the connection is closed with ENHANCE_YOUR_CALM.",
        ge=1,
    )
    h2_max_queued_control_bytes: int = setting(
        64 * 1024,
        "Bytes of HTTP/2 control frames (acks, resets) a client leaves unread before the connection "
        "is closed with ENHANCE_YOUR_CALM.",
        ge=1024,
    )
    metrics_path: str | None = setting(
        None, "Serve Prometheus metrics at this path (e.g. /metrics); 'off': none."
    )
    request_id_header: str | None = setting(
        "X-Request-ID",
        "Header carrying the request id, in and out; 'off' turns request ids off.",
        none_flag=("--no-request-id", "No request ids (nothing echoed, none in logs)."),
    )
    access_log: str | None = setting(
        "-",
        "Access log destination: '-' for stdout, a file path, or 'off'.",
        metavar="DEST",
        shown_default="-",
    )
    access_log_format: str = setting(
        "text", "Access log format: text, json, or a template of {fields} (docs/toolkit.md)."
    )
    access_log_health: bool = setting(
        False, "Whether health probes (/healthz, /readyz) appear in the access log."
    )
    log_buffer_bytes: int = setting(
        65536, "Bytes of access log lines a worker buffers before writing them at once.", ge=1
    )
    log_flush_interval: float = setting(
        0.05,
        "Seconds a buffered access log line may wait before it is written (0: at the end of its loop iteration).",
        ge=0,
        le=60,
    )
    log_file: str | None = setting(None, "Application log file (off: stderr).")
    log_format: LogFormat = setting("text", "Application log format.")
    log_level: str = setting(
        "info",
        "Application log level.",
        choices=("debug", "info", "warning", "error", "critical"),
        case_insensitive=True,
    )
    log_max_bytes: int = setting(
        0, "Rotate log files (access log and log_file) when one passes this many bytes (0: never).", ge=0
    )
    log_rotate_interval: float = setting(0.0, "Rotate log files every this many seconds (0: never).", ge=0)
    log_backups: int = setting(7, "Rotated files kept (name.1 is the newest); older ones are deleted.", ge=1)
    ws_max_message_size: int = setting(
        1024 * 1024, "Largest WebSocket message accepted, in bytes (a bigger one closes with 1009).", ge=1
    )
    ws_max_queue: int = setting(
        4 * 1024 * 1024,
        "Bytes of received WebSocket messages a connection holds before it stops reading.",
        ge=1,
    )
    ws_ping_interval: float = setting(
        20.0, "Seconds between keep-alive pings on a quiet WebSocket (0: no pings).", ge=0
    )
    ws_ping_timeout: float = setting(
        20.0, "Seconds a ping waits for its pong before the connection is closed (1011; 0: no limit).", ge=0
    )
    ws_close_timeout: float = setting(
        5.0, "Seconds close() waits for the peer's close frame before dropping the connection.", gt=0
    )
    ws_deflate: bool = setting(
        True, "Agree to permessage-deflate (RFC 7692) when a WebSocket client offers it."
    )
    ws_deflate_window_bits: int = setting(
        12,
        "The server's largest WebSocket compression window, 9-15 (2**bits bytes; zlib also keeps "
        "128 KiB of state per compressing connection).",
        ge=9,
        le=15,
    )
    ws_deflate_level: int = setting(
        1, "zlib level of WebSocket compression, 1 (fastest) to 9 (smallest).", ge=1, le=9
    )
    ws_deflate_min_size: int = setting(
        128, "WebSocket messages shorter than this many bytes are sent uncompressed.", ge=0
    )
    interface: Interface = setting(
        "auto",
        "What MODULE:APP is: a veter.App, an ASGI 3 app or a WSGI app (auto: told by inspecting it; "
        "docs/asgi.md).",
    )
    threads: int = setting(
        10,
        "Threads that run a hosted WSGI app's requests (the event loop never runs its code); "
        "requests beyond them wait for one.",
        ge=1,
    )
    root_path: str = setting(
        "", "A hosted ASGI app's root_path: the path prefix a proxy mounts it at (leads scope path too)."
    )
    lifespan: LifespanMode = setting(
        "auto",
        "A hosted ASGI app's lifespan protocol: on (its failure stops the worker), off, "
        "or auto (on unless the app does not speak it).",
    )

    def __post_init__(self) -> None:
        # "off" turns these off from a flag, the environment or a TOML file alike.
        for name in ("access_log", "request_id_header", "metrics_path"):
            if isinstance(getattr(self, name), str) and getattr(self, name).strip().lower() == "off":
                object.__setattr__(self, name, None)
        check(self)
        if self.access_log_format not in ("text", "json") and "{" not in self.access_log_format:
            raise ValueError(
                f"access_log_format must be text, json or a template of {{fields}}, got {self.access_log_format!r}"
            )
        if self.ssl_keyfile is not None and self.ssl_certfile is None:
            raise ValueError("ssl_keyfile needs ssl_certfile")
        if not self.http1 and not (self.http2 and (self.h2c or self.ssl_certfile)):
            raise ValueError(
                "http1 off needs HTTP/2 on (http2, and h2c or TLS): the server would speak nothing"
            )
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

    def with_(self, **changes: Any) -> ServerConfig:
        """A copy with ``changes`` applied (unknown names raise TypeError)."""
        known = {f.name for f in fields(self)}
        unknown = set(changes) - known
        if unknown:
            raise TypeError(f"unknown server setting(s): {', '.join(sorted(unknown))}")
        return replace(self, **changes)


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
