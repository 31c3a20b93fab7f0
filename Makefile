# Two entry points: `make demo` (export the bundled sample run) and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
export DAGSTER_HOME ?= $(CURDIR)/.dagster_home

.PHONY: demo test dev venv clean

$(DAGSTER_HOME)/dagster.yaml: dagster.yaml
	mkdir -p $(DAGSTER_HOME)
	cp dagster.yaml $@

$(BIN)/trace-assets: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $@

venv: $(BIN)/trace-assets

demo: $(BIN)/trace-assets $(DAGSTER_HOME)/dagster.yaml
	$(BIN)/trace-assets materialize rl-sample-run --traces-root sample_traces --publish-root published

test: $(BIN)/trace-assets $(DAGSTER_HOME)/dagster.yaml
	$(BIN)/pytest

dev: $(BIN)/trace-assets $(DAGSTER_HOME)/dagster.yaml
	$(BIN)/dagster dev -w workspace.yaml

clean:
	rm -rf $(VENV) published .dagster_home *.egg-info
