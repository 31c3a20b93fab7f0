#!/usr/bin/env bash
# Run a command with one moto S3 server for it (TRACE_ASSETS_TEST_S3_ENDPOINT), stopped after.
# `make test` runs the suite this way; without the variable each test session starts moto in a
# thread of its own, which works too but is slower. The Hub stand-in is always the tests' own.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -n "${TRACE_ASSETS_TEST_S3_ENDPOINT:-}" ]; then
    exec "$@"
fi
port=$(.venv/bin/python -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
.venv/bin/moto_server -H 127.0.0.1 -p "$port" > moto-server.log 2>&1 &
moto_pid=$!
trap 'kill "$moto_pid" 2>/dev/null || true' EXIT
for _ in $(seq 50); do
    curl -fs "http://127.0.0.1:$port/moto-api/" > /dev/null 2>&1 && break
    sleep 0.2
done
export TRACE_ASSETS_TEST_S3_ENDPOINT="http://127.0.0.1:$port"
"$@"
