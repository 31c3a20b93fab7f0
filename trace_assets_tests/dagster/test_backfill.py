"""`trace-assets backfill` makes a real Dagster backfill that the real daemon runs, one run per partition."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import dagster as dg

from trace_assets_tests.support.helpers import PROJECT_DIR, SAMPLE_RUN, SAMPLE_TRACES

BIN = Path(sys.executable).parent


def test_backfill_across_a_sweep_runs_one_run_per_partition(tmp_path):
    home = tmp_path / "dagster_home"
    home.mkdir()
    shutil.copyfile(PROJECT_DIR / "dagster.yaml", home / "dagster.yaml")
    traces = tmp_path / "sweep"
    for run in ("sweep-run-1", "sweep-run-2"):
        shutil.copytree(SAMPLE_TRACES / SAMPLE_RUN, traces / run)
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRACE_ASSETS_")}
    env.update(
        DAGSTER_HOME=str(home),
        TRACE_ASSETS_TRACES_ROOT=str(traces),
        TRACE_ASSETS_PUBLISH_ROOT=str(tmp_path / "published"),
        TRACE_ASSETS_STAGING_ROOT=str(tmp_path / "staging"),
        TRACE_ASSETS_SETTLE_SECONDS="100000",  # keep the sensor from exporting on its own
    )
    daemon = subprocess.Popen(
        [str(BIN / "dagster-daemon"), "run", "-w", str(PROJECT_DIR / "workspace.yaml")],
        cwd=PROJECT_DIR,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=(tmp_path / "daemon.log").open("w"),
        start_new_session=True,
    )
    try:
        done = subprocess.run(
            [str(BIN / "trace-assets"), "backfill", "--all", "--on-secret", "allow", "--wait"],
            capture_output=True,
            text=True,
            env=env,
            timeout=420,
        )
    finally:
        os.killpg(daemon.pid, signal.SIGTERM)
        daemon.wait(timeout=60)
    assert done.returncode == 0, done.stderr + (tmp_path / "daemon.log").read_text()[-3000:]
    result = json.loads(done.stdout.splitlines()[-1])
    assert result["status"] == "COMPLETED_SUCCESS"
    assert result["run_ids"] == ["sweep-run-1", "sweep-run-2"]

    with dg.DagsterInstance.from_config(str(home)) as instance:
        runs = instance.get_runs(filters=dg.RunsFilter(tags={"dagster/backfill": result["backfill_id"]}))
        assert sorted(run.tags["dagster/partition"] for run in runs) == result["run_ids"]
        assert all(run.status == dg.DagsterRunStatus.SUCCESS for run in runs)
        assert all(run.tags["trace_assets/store"] == "read" for run in runs)
    for run in result["run_ids"]:
        coverage = json.loads((tmp_path / "published" / run / "coverage.json").read_text())
        assert coverage["run_id"] == run and coverage["exported"] == 28
