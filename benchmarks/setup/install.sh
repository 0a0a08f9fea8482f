#!/usr/bin/env bash
# Install everything the suite needs, skipping what is already there.
# Usage: setup/install.sh [SCENARIO]   (db and redis+log also need PostgreSQL / Redis)
# A peer whose install fails is reported here and again, with its reason, in the results.
set -uo pipefail
cd "$(dirname "$0")/.."
SCENARIO="${1:-all}"
WORK=.work
mkdir -p "$WORK/bin" "$WORK/logs"
say() { printf '[install] %s\n' "$*" >&2; }

need_db=0; need_redis=0
case "$SCENARIO" in all|db|fanout) need_db=1;; esac
case "$SCENARIO" in all|redis+log) need_redis=1;; esac

# Debian packages: wrk, h2load (HTTP/2), nginx, and the databases only when a scenario wants them.
pkgs=()
command -v wrk >/dev/null || pkgs+=(wrk)
command -v h2load >/dev/null || pkgs+=(nghttp2-client)
[ -x /usr/sbin/nginx ] || pkgs+=(nginx-light)
command -v taskset >/dev/null || pkgs+=(util-linux)
if [ "$need_db" = 1 ] && ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then pkgs+=(postgresql); fi
if [ "$need_redis" = 1 ] && ! command -v redis-server >/dev/null; then pkgs+=(redis-server); fi
if [ "${#pkgs[@]}" -gt 0 ]; then
    say "apt: ${pkgs[*]}"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${pkgs[@]}" \
        || say "apt install failed: ${pkgs[*]}"
fi

# oha, the open-loop load generator (crates.io; --locked is required to build).
if [ ! -x "$WORK/cargo/bin/oha" ]; then
    say "cargo install --locked oha (takes a few minutes)"
    cargo install --locked --quiet oha --root "$WORK/cargo" || say "oha install failed"
fi

# Peers (and the runner's matplotlib) in their own virtualenv.
if [ ! -x "$WORK/venv-peers/bin/python" ]; then
    say "virtualenv for the peers"
    python3 -m venv "$WORK/venv-peers"
fi
stamp="$WORK/venv-peers/.installed-$(sha1sum setup/requirements-peers.txt | cut -c1-12)"
if [ ! -e "$stamp" ]; then
    say "pip install peers"
    "$WORK/venv-peers/bin/pip" install -q --disable-pip-version-check -r setup/requirements-peers.txt \
        && touch "$stamp" || say "pip install of the peers failed"
fi

# uvicorn on zuvloop needs Python 3.14+: a second peers venv on the 3.14 that
# scripts/find-python.sh finds (pyenv, PATH, or unpacked from Debian sid's packages).
case "$SCENARIO" in all|asgi)
    if [ ! -x "$WORK/venv-peers-3.14/bin/python" ]; then
        say "virtualenv for the peers on Python 3.14"
        py314=$(bash ../scripts/find-python.sh 3.14) \
            && bash ../scripts/make-venv.sh "$py314" "$WORK/venv-peers-3.14" \
            || { say "no Python 3.14: the 3.14 peers will be reported as not available"; rm -rf "$WORK/venv-peers-3.14"; }
    fi
    stamp="$WORK/venv-peers-3.14/.installed-$(sha1sum setup/requirements-peers-3.14.txt | cut -c1-12)"
    if [ -x "$WORK/venv-peers-3.14/bin/python" ] && [ ! -e "$stamp" ]; then
        say "pip install peers on Python 3.14"
        "$WORK/venv-peers-3.14/bin/pip" install -q --disable-pip-version-check -r setup/requirements-peers-3.14.txt \
            && touch "$stamp" || say "pip install of the 3.14 peers failed"
    fi
    ;;
esac

# The pythons scenario runs veter on the repo's venvs of each Python (.venv, .venv-3.12 ...
# .venv-3.15: `make py-versions-prepare EXTRA_PYTHONS="3.12 3.13 3.14 3.15"` makes them) and,
# on 3.14, on zuvloop: zuvloop goes into a --target dir put on PYTHONPATH, not into the venv
# (--no-deps: its opentelemetry-api and typing-extensions are in .venv-3.14 already).
case "$SCENARIO" in all|pythons)
    if [ -x ../.venv-3.14/bin/python ] && [ ! -d "$WORK/zuvloop-3.14/zuvloop" ]; then
        say "zuvloop for veter's Python 3.14 (.work/zuvloop-3.14)"
        ../.venv-3.14/bin/python -m pip install -q --disable-pip-version-check --no-deps --target "$WORK/zuvloop-3.14" zuvloop \
            || say "zuvloop install failed: the zuvloop rows will be reported as not available"
    fi
    for v in 3.12 3.13 3.14 3.15; do
        [ -x "../.venv-$v/bin/python" ] || say "no ../.venv-$v: veter on $v will be reported as not available (make py-versions-prepare)"
    done
    ;;
esac

# Japronto only builds for Python 3.7: a venv from pyenv's 3.7.
if [ ! -x "$WORK/venv-japronto/bin/python" ]; then
    py37=""
    if command -v pyenv >/dev/null; then
        py37="$(ls -d "$(pyenv root)"/versions/3.7*/bin/python3.7 2>/dev/null | tail -1)"
    fi
    if [ -n "$py37" ]; then
        say "virtualenv for japronto ($py37)"
        "$py37" -m venv "$WORK/venv-japronto" \
            && "$WORK/venv-japronto/bin/pip" install -q --disable-pip-version-check japronto \
            || { say "japronto install failed"; rm -rf "$WORK/venv-japronto"; }
    else
        say "no Python 3.7 from pyenv: japronto will be reported as not available"
    fi
fi

# Go net/http peer, standard library only.
if [ ! -x "$WORK/bin/gohttp" ] || [ go/main.go -nt "$WORK/bin/gohttp" ]; then
    if command -v go >/dev/null; then
        say "go build"
        (cd go && go build -o ../"$WORK"/bin/gohttp .) || say "go build failed"
    else
        say "no Go toolchain: go-nethttp will be reported as not available"
    fi
fi
# wsload, the ws scenario's load generator (gorilla/websocket from the Go module proxy).
if [ ! -x "$WORK/bin/wsload" ] || [ -n "$(find go/wsload -newer "$WORK/bin/wsload" -type f 2>/dev/null)" ]; then
    if command -v go >/dev/null; then
        say "go build wsload"
        (cd go/wsload && go build -o ../../"$WORK"/bin/wsload .) || say "go build of wsload failed"
    else
        say "no Go toolchain: the ws scenario will report every server as not available"
    fi
fi
# veter runs on the lead's interpreter (VETER_PYTHON, default ../.venv/bin/python): the db and
# redis+log scenarios need the same clients the peers use, installed for that interpreter
# into a --target dir that only those scenarios put on PYTHONPATH.
VETER_PY="${VETER_PYTHON:-../.venv/bin/python}"
# (.installed-2: psycopg joined, for the Flask app on veter's WSGI pool.)
if [ -x "$VETER_PY" ] && [ ! -e "$WORK/veter-extras/.installed-2" ]; then
    say "asyncpg, psycopg and redis for veter's interpreter ($VETER_PY)"
    "$VETER_PY" -m pip install -q --disable-pip-version-check --upgrade --target "$WORK/veter-extras" asyncpg \
        'psycopg[binary]' 'redis[hiredis]' \
        && touch "$WORK/veter-extras/.installed-2" || say "veter extras install failed"
fi
# The wheels scenario: veter's current code built as one abi3 wheel (Python 3.11+),
# into its own venv, rebuilt on every install so it is always the code being measured
# (cargo's cache in target/abi3 makes an unchanged build quick).
case "$SCENARIO" in all|wheels)
    if [ -x "$VETER_PY" ]; then
        say "abi3 wheel of veter for the wheels scenario"
        rm -rf "$WORK/wheels-abi3"
        # Absolute, but not resolved: the venv's python (with maturin), not its base.
        veter_py_abs="$(cd "$(dirname "$VETER_PY")" && pwd)/$(basename "$VETER_PY")"
        base_py=$("$veter_py_abs" -c 'import sys; print(sys._base_executable)')
        if ( cd .. && CARGO_TARGET_DIR=target/abi3 "$veter_py_abs" -m maturin build --release --quiet \
                --features pyo3/abi3-py311 --out benchmarks/"$WORK"/wheels-abi3 ) >"$WORK/logs/abi3-build.log" 2>&1 \
            && { [ -x "$WORK/venv-abi3/bin/python" ] || "$base_py" -m venv "$WORK/venv-abi3"; } \
            && "$WORK/venv-abi3/bin/pip" install -q --disable-pip-version-check --force-reinstall \
                "$WORK"/wheels-abi3/veter-*.whl >>"$WORK/logs/abi3-build.log" 2>&1; then
            :
        else
            say "abi3 wheel build failed (see $WORK/logs/abi3-build.log): veter-abi3 will be reported as not available"
            rm -rf "$WORK/venv-abi3"
        fi
    fi
    ;;
esac
# The pythons scenario's "3.11, Debian's build": veter as a wheel of the current code for
# Debian's own /usr/bin/python3.11 (built with PGO and LTO, as Debian's 3.14 and 3.15 are;
# pyenv's are not), in its own venv; rebuilt every install like the abi3 wheel (cargo's
# cache in target/py3.11-debian). A wheel, not `maturin develop`: that would write the
# extension into python/veter under the name the repo's pyenv 3.11 uses.
case "$SCENARIO" in all|pythons)
    if [ -x /usr/bin/python3.11 ] && [ -x "$VETER_PY" ]; then
        say "veter wheel for Debian's Python 3.11 (pythons scenario)"
        rm -rf "$WORK/wheels-3.11-debian"
        veter_py_abs="$(cd "$(dirname "$VETER_PY")" && pwd)/$(basename "$VETER_PY")"
        venv="$WORK/venv-veter-3.11-debian"
        if ( cd .. && CARGO_TARGET_DIR=target/py3.11-debian "$veter_py_abs" -m maturin build --release --quiet \
                --interpreter /usr/bin/python3.11 --out benchmarks/"$WORK"/wheels-3.11-debian ) \
                >"$WORK/logs/py3.11-debian-build.log" 2>&1 \
            && { [ -x "$venv/bin/python" ] || /usr/bin/python3.11 -m venv "$venv"; } \
            && "$venv/bin/pip" install -q --disable-pip-version-check --force-reinstall \
                "$WORK"/wheels-3.11-debian/veter-*.whl >>"$WORK/logs/py3.11-debian-build.log" 2>&1; then
            :
        else
            say "wheel for Debian's 3.11 failed (see $WORK/logs/py3.11-debian-build.log): its rows will be reported as not available"
            rm -rf "$venv"
        fi
    fi
    ;;
esac
say "done"
