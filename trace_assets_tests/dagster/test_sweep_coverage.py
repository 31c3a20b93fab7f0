"""A publish leads to a refresh of `sweep_coverage`, whose table, Parquet file and plot hold every
published scope, read from the instance even once staging is gone; `trace-assets status` prints it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import dagster as dg
import pyarrow.parquet as pq

from trace_assets.definitions import build_definitions, export_trace_run
from trace_assets.defs.partitions import register_scopes
from trace_assets.defs.resources import config_from_env
from trace_assets.defs.sweep_coverage import refresh_sweep_coverage, sweep_coverage, sweep_coverage_after_export
from trace_assets.sweep.view import SWEEP_FILE, SWEEP_PLOT
from trace_assets_tests.support.generate_traces import generate_run
from trace_assets_tests.support.helpers import PROJECT_DIR, SAMPLE_RUN, SAMPLE_TRACES

CLI = str(Path(sys.executable).with_name("trace-assets"))
SCOPES = ["sweep-a", "sweep-b"]


def _tick(instance: dg.DagsterInstance, defs: dg.Definitions, cursor: str | None) -> tuple[list, str | None]:
    context = dg.build_sensor_context(instance=instance, cursor=cursor, definitions=defs)
    result = sweep_coverage_after_export.evaluate_tick(context)
    return result.run_requests or [], result.cursor


def test_a_publish_refreshes_the_sweep_view(tmp_path):
    home = tmp_path / "dagster_home"
    home.mkdir()
    shutil.copyfile(PROJECT_DIR / "dagster.yaml", home / "dagster.yaml")
    traces, published, staging = tmp_path / "traces", tmp_path / "published", tmp_path / "staging"
    for scope in SCOPES:
        shutil.copytree(SAMPLE_TRACES / SAMPLE_RUN, traces / scope)
    config = config_from_env(
        {},
        traces_root=str(traces),
        publish_root=str(published),
        staging_root=str(staging),
        on_secret="allow",
        on_unverified="keep",
    )
    defs = build_definitions(config)
    with dg.DagsterInstance.from_config(str(home)) as instance:
        register_scopes(instance, SCOPES)
        requests, cursor = _tick(instance, defs, None)
        assert requests == []  # nothing published yet

        export = defs.resolve_job_def(export_trace_run.name)
        assert export.execute_in_process(instance=instance, partition_key="sweep-a").success
        requests, cursor = _tick(instance, defs, cursor)
        assert len(requests) == 1 and sweep_coverage_after_export.job_name == refresh_sweep_coverage.name
        assert _tick(instance, defs, cursor)[0] == []  # the same publish is not seen twice

        assert export.execute_in_process(instance=instance, partition_key="sweep-b").success
        requests, cursor = _tick(instance, defs, cursor)
        assert len(requests) == 1
        shutil.rmtree(staging)  # the view reads the instance, not staging
        refresh = defs.resolve_job_def(refresh_sweep_coverage.name)
        assert refresh.execute_in_process(instance=instance, run_config=requests[0].run_config).success

        event = instance.get_latest_materialization_event(sweep_coverage.key)
        assert event is not None and event.asset_materialization is not None
        metadata = {k: v.value for k, v in event.asset_materialization.metadata.items()}
    table = [r.data for r in metadata["scopes"].records]
    assert [r["scope"] for r in table] == SCOPES
    assert (table[0]["state"], table[0]["exported"], table[0]["verdict"]) == ("published", 28, "live")
    assert "published_to" not in table[0]  # in the Parquet file
    assert metadata["dagster/row_count"] == 2 and "█" in metadata["status"]

    rows = pq.read_table(published / SWEEP_FILE).to_pylist()
    assert [r["scope"] for r in rows] == SCOPES and rows[1]["exported"] == 28
    assert metadata["parquet"] == str(published / SWEEP_FILE)
    assert "mean reward of exported trials" in (published / SWEEP_PLOT).read_text()

    env = {k: v for k, v in os.environ.items() if not k.startswith("TRACE_ASSETS_")}
    done = subprocess.run([CLI, "status"], capture_output=True, text=True, env={**env, "DAGSTER_HOME": str(home)})
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split()[0] == "scope" and [lines[1].split()[0], lines[3].split()[0]] == SCOPES
    assert lines[1].split()[1:6] == ["published", "36", "34", "28", "82.4%"]


def test_a_mixed_sweep_lists_a_whole_run_beside_a_runs_steps(tmp_path):
    """The demo's run (no step folders) and a run with step folders in one instance: every row of
    the table has the same fields and no empty value; the Parquet file keeps nulls."""
    traces, published = tmp_path / "traces", tmp_path / "published"
    shutil.copytree(SAMPLE_TRACES / SAMPLE_RUN, traces / SAMPLE_RUN)
    generate_run(traces, "stepped", trials=6, seed=5, nested_steps=2)
    config = config_from_env(
        {},
        traces_root=str(traces),
        publish_root=str(published),
        staging_root=str(tmp_path / "staging"),
        on_secret="allow",
        on_unverified="keep",
    )
    defs = build_definitions(config)
    scopes = [SAMPLE_RUN, "stepped/step-1", "stepped/step-2"]
    with dg.instance_for_test() as instance:
        register_scopes(instance, scopes)
        export = defs.resolve_job_def(export_trace_run.name)
        for scope in scopes:
            assert export.execute_in_process(instance=instance, partition_key=scope).success
        refresh = defs.resolve_job_def(refresh_sweep_coverage.name)
        assert refresh.execute_in_process(instance=instance, raise_on_error=False).success
        event = instance.get_latest_materialization_event(sweep_coverage.key)
        assert event is not None and event.asset_materialization is not None
        table = event.asset_materialization.metadata["scopes"].value
    records = [r.data for r in table.records]
    assert [r["scope"] for r in records] == [SAMPLE_RUN, "stepped/step-1", "stepped/step-2"]
    assert {c.name for c in table.schema.columns} == set(records[0])
    assert all(value not in (None, "") for r in records for value in r.values())
    rows = pq.read_table(published / SWEEP_FILE).to_pylist()
    assert [r["step"] for r in rows] == [None, 1, 2]
