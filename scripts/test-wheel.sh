#!/usr/bin/env bash
# The wheel a user installs: built with `maturin build --release`, installed into a
# fresh virtualenv by pip with no Rust toolchain on PATH and binary packages only,
# then serving examples/hello.py from a directory outside the repository. Fails on
# any step; prints what the server logged when the check fails.
#   scripts/test-wheel.sh [PYTHON]   (default: .venv/bin/python, which has maturin)
set -euo pipefail
cd "$(dirname "$0")/.."
builder=${1:-.venv/bin/python}
work=$(mktemp -d)
server=
cleanup() {
    if [ -n "$server" ] && kill -0 "$server" 2>/dev/null; then kill -9 "$server" || true; fi
    rm -rf "$work"
}
trap cleanup EXIT

echo "== wheel: maturin build --release"
"$builder" -m maturin build --release --quiet --interpreter "$builder" --out "$work/dist" >"$work/build.log" 2>&1 || { cat "$work/build.log" >&2; exit 1; }
wheel=$(ls "$work"/dist/veter-*.whl)
echo "   built $(basename "$wheel")"

# The toolchain stays out of reach: a PATH without cargo's bin dir or any rustc.
python=$("$builder" -c 'import sys; print(sys._base_executable)')
clean_path=/usr/bin:/bin
if env PATH=$clean_path sh -c 'command -v rustc || command -v cargo' >/dev/null; then
    echo "error: rustc or cargo is on $clean_path; the check would prove nothing" >&2
    exit 1
fi
env -i PATH=$clean_path HOME="$work" bash scripts/make-venv.sh "$python" "$work/venv"
env -i PATH=$clean_path HOME="$work" "$work/venv/bin/pip" install --quiet --disable-pip-version-check --only-binary :all: "$wheel"
echo "   installed into a fresh venv without Rust: $("$work/venv/bin/python" -c 'import veter._core as c; print(c.__file__)')"

cp examples/hello.py "$work/hello.py"
port=$("$work/venv/bin/python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
(cd "$work" && exec env -i PATH=$clean_path HOME="$work" "$work/venv/bin/veter" run hello:app --port "$port" --workers 2 >"$work/server.log" 2>&1) &
server=$!
for _ in $(seq 1 300); do
    grep -q "veter serving on" "$work/server.log" && break
    kill -0 "$server" 2>/dev/null || break
    sleep 0.1
done
got=$(curl -fsS "http://127.0.0.1:$port/items/7?q=x" || true)
posted=$(curl -fsS -X POST --data-binary 'ping' -H 'Content-Type: text/plain' "http://127.0.0.1:$port/echo" || true)
kill -TERM "$server"
wait "$server" && code=0 || code=$?
server=
if [ "$got" != '{"id":7,"q":"x"}' ] || [ "$posted" != "ping" ] || [ "$code" -ne 0 ]; then
    echo "error: GET answered '$got', POST answered '$posted', exit status $code; server log:" >&2
    cat "$work/server.log" >&2
    exit 1
fi
echo "   served examples/hello.py: GET /items/7?q=x -> $got, POST /echo -> $posted, exit 0 on SIGTERM"
