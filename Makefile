# Two entry points: `make demo` (export the bundled sample run) and `make test` (everything,
# installing what its tests need). `make test-unit` runs the pure tests only; `make lint` the gates.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
export DAGSTER_HOME ?= $(CURDIR)/.dagster_home

.PHONY: demo test test-unit lint services dev venv lock clean

$(DAGSTER_HOME)/dagster.yaml: dagster.yaml
	mkdir -p $(DAGSTER_HOME)
	cp dagster.yaml $@

# Exactly the versions in constraints.txt (`make lock` writes it), so a fresh machine installs
# what the suite last passed on, whatever the registry serves that day.
# uv installs them (a fifth of pip's time on a fresh machine); pip only brings uv itself.
# Byte-compiled once here: where PYTHONDONTWRITEBYTECODE is set (this machine), every process
# otherwise compiled each module it imports again (Dagster, datasets: 2 s of each test-unit start).
$(BIN)/trace-assets: pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet -c constraints.txt uv
	$(BIN)/uv pip install --quiet --compile-bytecode --python $(BIN)/python -c constraints.txt -e '.[test]'
	touch $@

venv: $(BIN)/trace-assets

demo: $(BIN)/trace-assets $(DAGSTER_HOME)/dagster.yaml
	$(BIN)/trace-assets materialize rl-sample-run --traces-root sample_traces --publish-root published --on-secret redact

# PostgreSQL and Chromium for the service tests (Debian packages; needs root, skipped otherwise).
services:
	bash .ci/install-services.sh

# Everything: installs what the service tests need, and runs the suite beside one S3 server.
test: $(BIN)/trace-assets $(DAGSTER_HOME)/dagster.yaml services
	bash .ci/with-s3-server.sh $(BIN)/pytest

# Only unit/ is collected: the other folders' modules import Dagster's test tooling for nothing.
# No unit test uses Hypothesis: its plugin is not loaded (importing it was a second of each run).
# One pytest worker a core (pytest-xdist): the pure tests share no file, port or process; a
# file's tests go to one worker, so its module fixtures (a staged run, a batch scan) run once.
test-unit: $(BIN)/trace-assets
	$(BIN)/pytest -p no:hypothesispytest -n auto --dist loadfile -m "not dagster and not services and not slow" trace_assets_tests/unit

lint: $(BIN)/trace-assets
	$(BIN)/ruff format --check trace_assets trace_assets_tests benchmarks
	$(BIN)/ruff check trace_assets trace_assets_tests benchmarks
	$(BIN)/mypy
	VIRTUAL_ENV=$(CURDIR)/$(VENV) $(BIN)/dg check defs

# The roots have no defaults in the package: the UI uses the bundled sample's. The definitions load
# without them (a run or a sensor tick reads them when it starts), so `dg check defs` needs none.
dev: export TRACE_ASSETS_TRACES_ROOT ?= $(CURDIR)/sample_traces
dev: export TRACE_ASSETS_PUBLISH_ROOT ?= $(CURDIR)/published
# The UI's port: `make dev PORT=3001` beside another UI on 3000.
PORT ?= 3000

dev: $(BIN)/trace-assets $(DAGSTER_HOME)/dagster.yaml
	VIRTUAL_ENV=$(CURDIR)/$(VENV) $(BIN)/dg dev --port $(PORT)

# The newest versions pyproject.toml allows, resolved by uv and pinned in constraints.txt.
lock: $(BIN)/trace-assets
	$(BIN)/uv pip compile pyproject.toml --extra test --python-version 3.11 --upgrade --quiet \
		--custom-compile-command 'make lock' -o constraints.txt

clean:
	rm -rf $(VENV) published .dagster_home *.egg-info
