#!/usr/bin/env bash
# A CPython newer than the machine's Debian release ships (3.14, 3.15), from Debian's
# development suite (sid) as binary packages, unpacked into a private root: the
# system's own apt and libc are never touched (no dpkg -i; sid's libc would replace
# bookworm's). Prints the interpreter's path. Idempotent: an interpreter already in
# the root that runs is reused.
#
# Usage: scripts/install-python.sh VERSION        (e.g. 3.14)
# The root is $VETER_PYTHONS/VERSION (default ~/.local/share/veter-pythons/VERSION).
#
# How: a second apt source list for sid, used only through -o Dir::... options that
# point apt's lists and cache at a private directory; `apt-get download` of the
# interpreter's packages and the libraries it links (~26 MB); `dpkg -x` of each into
# the root; patchelf points the interpreter at the root's dynamic loader with an
# RPATH into the root's libraries (DT_RPATH, so extension modules find them too).
set -euo pipefail
version=${1:?usage: install-python.sh VERSION}
base=${VETER_PYTHONS:-$HOME/.local/share/veter-pythons}
root=$base/$version
exe=$root/usr/bin/python$version
libdir=$root/usr/lib/x86_64-linux-gnu

if [ -x "$exe" ] && "$exe" -c "import ssl, sqlite3, ctypes, lzma, bz2, zlib" 2>/dev/null; then
    echo "$exe"
    exit 0
fi
if [ "$(uname -m)" != x86_64 ]; then
    echo "install-python: only x86_64 is set up (got $(uname -m))" >&2
    exit 1
fi

apt_dir=$base/.apt
mkdir -p "$apt_dir/parts" "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial" "$apt_dir/debs-$version"
: >"$apt_dir/sources.list"
# The mirror the machine's apt already uses, with sid instead of its suites.
uri=$(awk '/^URIs:/ && $2 !~ /security/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
uri=${uri:-http://deb.debian.org/debian}
cat >"$apt_dir/parts/sid.sources" <<EOF
Types: deb
URIs: $uri
Suites: sid
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
apt_opts=(
    -o "Dir::Etc::SourceList=$apt_dir/sources.list"
    -o "Dir::Etc::SourceParts=$apt_dir/parts"
    -o "Dir::State::Lists=$apt_dir/lists"
    -o "Dir::Cache=$apt_dir/cache"
    -o "APT::Sandbox::User=root"
)
echo "install-python: Python $version from Debian sid into $root" >&2
apt-get "${apt_opts[@]}" -qq update >&2

packages=(
    "python$version" "python$version-minimal" "python$version-venv" "python$version-dev"
    "libpython$version" "libpython$version-minimal" "libpython$version-stdlib" "libpython$version-dev"
    python3-pip-whl python3-setuptools-whl
    libc6 libgcc-s1 libssl3t64 libffi8 zlib1g libexpat1 libsqlite3-0 libbz2-1.0 liblzma5 libzstd1
    libmpdec4 libncursesw6 libtinfo6 libreadline8t64 libuuid1 libdb5.3t64
)
(cd "$apt_dir/debs-$version" && rm -f ./*.deb && apt-get "${apt_opts[@]}" -qq download "${packages[@]}" >&2)

command -v patchelf >/dev/null 2>&1 || {
    apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends patchelf >/dev/null
}
rm -rf "$root.new"
mkdir -p "$root.new"
for deb in "$apt_dir/debs-$version"/*.deb; do
    dpkg -x "$deb" "$root.new"
done
patchelf --set-interpreter "$root/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2" \
    --force-rpath --set-rpath "$libdir" "$root.new/usr/bin/python$version"
rm -rf "$root"
mv "$root.new" "$root"
"$exe" -c "import ssl, sqlite3, ctypes, lzma, bz2, zlib" >&2
echo "$exe"
