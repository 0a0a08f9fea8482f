"""nginx as a peer: a config per port under .work, `return 200` for the hello routes."""

from pathlib import Path

from . import paths

CONF = """\
worker_processes 1;
daemon off;
pid {prefix}/nginx.pid;
error_log {prefix}/error.log warn;
events {{ worker_connections 8192; }}
http {{
    access_log off;
    keepalive_requests 1000000;
    client_body_temp_path {prefix}/tmp;
    proxy_temp_path {prefix}/tmp;
    fastcgi_temp_path {prefix}/tmp;
    uwsgi_temp_path {prefix}/tmp;
    scgi_temp_path {prefix}/tmp;
    server {{
        listen 127.0.0.1:{port}{listen_flags} backlog=4096;
        location = / {{
            default_type "text/plain; charset=utf-8";
            return 200 "Hello, World!";
        }}
        location = /json {{
            default_type application/json;
            return 200 '{{"message":"Hello, World!"}}';
        }}
{locations}    }}
}}
"""

# The http2 scenario's POST /upload, answered with the body's length. `return` alone
# would answer without reading the body, and over HTTP/2 nginx 1.22 then stalls (the
# discarded bodies' flow-control window is never given back: 55k answers in the first
# second, none after). `mirror` reads the whole body first (mirror_request_body is on);
# the static handler refuses the POST with 405, which error_page turns into the answer.
UPLOAD = """\
        location = /upload {
            client_body_buffer_size 64k;
            mirror /mirror-sink;
            error_page 405 =200 @length;
        }
        location = /mirror-sink {
            internal;
            return 204;
        }
        location @length {
            default_type "text/plain; charset=utf-8";
            return 200 "$content_length";
        }
"""


def prefix(port: int) -> Path:
    return paths.WORK / "nginx" / str(port)


def prepare(run_dir: Path, port: int, workers: int) -> None:
    root = prefix(port)
    (root / "tmp").mkdir(parents=True, exist_ok=True)
    (root / "nginx.conf").write_text(CONF.format(prefix=root, port=port, listen_flags="", locations=""))


def prepare_h2c(run_dir: Path, port: int, workers: int) -> None:
    """HTTP/2 over cleartext by prior knowledge only (`listen ... http2` without ssl:
    nginx 1.22 answers no HTTP/1.1 there), plus POST /upload."""
    root = prefix(port)
    (root / "tmp").mkdir(parents=True, exist_ok=True)
    (root / "html").mkdir(exist_ok=True)
    (root / "html" / "upload").touch()  # the static file whose 405 becomes the answer
    conf = CONF.format(prefix=root, port=port, listen_flags=" http2", locations=UPLOAD)
    (root / "nginx.conf").write_text(conf)


PROXY_CONF = """\
worker_processes 1;
daemon off;
pid {prefix}/nginx.pid;
error_log {prefix}/error.log warn;
events {{ worker_connections 8192; }}
http {{
    access_log off;
    keepalive_requests 1000000;
    client_body_temp_path {prefix}/tmp;
    proxy_temp_path {prefix}/tmp;
    fastcgi_temp_path {prefix}/tmp;
    uwsgi_temp_path {prefix}/tmp;
    scgi_temp_path {prefix}/tmp;
    upstream app {{
        server 127.0.0.1:{app_port};
        keepalive 128;
    }}
    server {{
        listen 127.0.0.1:{port} backlog=4096;
        location / {{
            proxy_pass http://app;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host $host;
        }}
    }}
}}
"""


def front(port: int, app_port: int) -> list[str]:
    """Write a reverse-proxy config (port -> app_port) and return the shell prefix that
    starts nginx beside the app in the same process group."""
    root = prefix(port)
    (root / "tmp").mkdir(parents=True, exist_ok=True)
    (root / "nginx.conf").write_text(PROXY_CONF.format(prefix=root, port=port, app_port=app_port))
    nginx = f"/usr/sbin/nginx -p {root} -c nginx.conf -e error.log"
    return ["sh", "-c", f'{nginx} & exec "$@"', "nginx+app"]
