#!/usr/bin/env bash
# Install the servers the integration tests start for themselves (PostgreSQL,
# Redis, MariaDB, and nginx, HAProxy and ApacheBench for the deployment and proxy
# tests, h2load for HTTP/2), and Chromium for the browser test, skipping what is already there. Idempotent. The tests never use the system services: they run private
# instances on free loopback ports (tests/services.py).
set -euo pipefail

pkgs=()
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || pkgs+=(postgresql)
command -v redis-server >/dev/null 2>&1 || pkgs+=(redis-server)
[ -x /usr/sbin/nginx ] || pkgs+=(nginx-light)
[ -x /usr/sbin/haproxy ] || pkgs+=(haproxy)
command -v ab >/dev/null 2>&1 || pkgs+=(apache2-utils)
# h2load, the HTTP/2 load generator of the HTTP/2 tests and benchmark.
command -v h2load >/dev/null 2>&1 || pkgs+=(nghttp2-client)
command -v valgrind >/dev/null 2>&1 || pkgs+=(valgrind)
# For the Pythons Debian 12 does not package (scripts/install-python.sh): here, with
# the other apt installs, not later beside them (two apt-gets at once fight over dpkg).
command -v patchelf >/dev/null 2>&1 || pkgs+=(patchelf)
[ -x /usr/bin/chromium ] || pkgs+=(chromium)
{ command -v mariadbd >/dev/null 2>&1 || [ -x /usr/sbin/mariadbd ]; } || pkgs+=(mariadb-server)

if [ "${#pkgs[@]}" -eq 0 ]; then
    exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
    echo "install-services: need root to install ${pkgs[*]} (or install them yourself)" >&2
    exit 1
fi
echo "install-services: apt-get install ${pkgs[*]}" >&2
apt-get update -qq
# policy-rc.d exit 101: do not start the system services the packages ship.
policy=/usr/sbin/policy-rc.d
own_policy=0
if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' >"$policy"
    chmod +x "$policy"
    own_policy=1
fi
trap 'if [ "$own_policy" = 1 ]; then rm -f "$policy"; fi' EXIT
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >/dev/null
