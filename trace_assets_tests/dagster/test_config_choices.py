"""A mistyped closed choice is refused everywhere it can be given, naming the allowed values."""

from __future__ import annotations

import subprocess

import dagster as dg
import pytest

from trace_assets.definitions import build_definitions, export_trace_run, trace_runs
from trace_assets.defs.resources import config_from_env
from trace_assets_tests.support.helpers import PROJECT_DIR, SAMPLE_RUN, SAMPLE_TRACES

TYPO = "blokc"


def test_run_config_refuses_an_unknown_on_secret(tmp_path):
    config = config_from_env(
        {"DAGSTER_HOME": str(tmp_path)}, traces_root=str(SAMPLE_TRACES), publish_root=str(tmp_path / "out")
    )
    job = build_definitions(config).resolve_job_def(export_trace_run.name)
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions(trace_runs.name, [SAMPLE_RUN])
        with pytest.raises(dg.DagsterInvalidConfigError, match=f"not in enum type .* got {TYPO}"):
            job.execute_in_process(
                instance=instance,
                partition_key=SAMPLE_RUN,
                run_config={"resources": {"trace_config": {"config": {"on_secret": TYPO}}}},
            )
    assert not (tmp_path / "out").exists()


def _cli(tmp_path, *args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(PROJECT_DIR / ".venv" / "bin" / "trace-assets"), "materialize", SAMPLE_RUN, *args],
        capture_output=True,
        text=True,
        env={"DAGSTER_HOME": str(tmp_path), "PATH": "/usr/bin:/bin", **env},
        timeout=120,
    )


def test_cli_refuses_an_unknown_on_secret(tmp_path):
    option = _cli(tmp_path, "--on-secret", TYPO)
    assert option.returncode == 2
    assert "invalid choice: 'blokc' (choose from 'block', 'redact', 'allow')" in option.stderr
    environment = _cli(tmp_path, TRACE_ASSETS_ON_SECRET=TYPO)
    assert environment.returncode == 2
    assert "TRACE_ASSETS_ON_SECRET='blokc': must be one of block, redact, allow" in environment.stderr
