#!/usr/bin/env bash
# Debian packages the service tests start for real: a PostgreSQL server (test_postgres_instance.py)
# and headless Chromium (test_ui_end_to_end.py screenshots the Dagster UI). Safe to run again:
# apt is only called when a binary is missing. `make test` runs it first.
set -euo pipefail

PG_BIN=/usr/lib/postgresql/15/bin

missing=()
[ -x "$PG_BIN/initdb" ] && [ -x "$PG_BIN/pg_ctl" ] || missing+=(postgresql)
[ -x /usr/bin/chromium ] || missing+=(chromium)
# Without a font the screenshot's text renders as boxes.
[ -d /usr/share/fonts/truetype/dejavu ] || missing+=(fonts-dejavu-core)

if [ ${#missing[@]} -eq 0 ]; then
    echo "install-services: postgresql, chromium and fonts already installed"
    exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
    echo "install-services: not root, cannot install ${missing[*]}; the tests that need them will fail" >&2
    exit 1
fi
echo "install-services: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update
apt-get install -y --no-install-recommends "${missing[@]}"
