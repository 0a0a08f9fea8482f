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
        listen 127.0.0.1:{port} backlog=4096;
        location = / {{
            default_type "text/plain; charset=utf-8";
            return 200 "Hello, World!";
        }}
        location = /json {{
            default_type application/json;
            return 200 '{{"message":"Hello, World!"}}';
        }}
    }}
}}
"""


def prefix(port: int) -> Path:
    return paths.WORK / "nginx" / str(port)


def prepare(run_dir: Path, port: int, workers: int) -> None:
    root = prefix(port)
    (root / "tmp").mkdir(parents=True, exist_ok=True)
    (root / "nginx.conf").write_text(CONF.format(prefix=root, port=port))


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
