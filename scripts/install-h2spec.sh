#!/usr/bin/env bash
# Install h2spec, the HTTP/2 conformance suite the tests run (tests/e2e/test_h2spec.py),
# from the Go module proxy into $(go env GOPATH)/bin, unless it is there already.
set -euo pipefail

version="v2.2.1+incompatible"
if ! command -v go >/dev/null 2>&1; then
    echo "install-h2spec: Go is needed to install h2spec ($version)" >&2
    exit 1
fi
bin="$(go env GOPATH)/bin/h2spec"
if [ -x "$bin" ]; then
    exit 0
fi
echo "install-h2spec: go install github.com/summerwind/h2spec/cmd/h2spec@$version" >&2
go install "github.com/summerwind/h2spec/cmd/h2spec@$version"
"$bin" --version >/dev/null
