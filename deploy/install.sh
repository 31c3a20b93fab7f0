#!/bin/sh
# The image's install, into the virtualenv named by $1: the project (not editable) with its `deploy`
# extra (PostgreSQL storage, the Kubernetes run launcher), at exactly the versions of constraints.txt,
# installed by uv as `make venv` does. deploy/Dockerfile runs it; trace_assets_tests/services/
# test_cluster_kit.py runs it too, so the test installs what the image holds.
set -eu
venv="$1"
cd "$(dirname "$0")/.."
uv venv --quiet --python "${PYTHON:-python3}" "$venv"
uv pip install --quiet --compile-bytecode --python "$venv/bin/python" -c constraints.txt '.[deploy]'
