"""`trace-assets backfill` makes a real Dagster backfill, through the GraphQL API of a webserver it
starts, that the real daemon runs, one run per partition; `--wait` prints a line per run. A
webserver behind an authenticating proxy is reached with the headers configured for it."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import dagster as dg
import pytest

from trace_assets.cli.backfill_api import GraphQLError, backfill_status, failure_reason
from trace_assets_tests.support.fault_proxy import FaultProxy
from trace_assets_tests.support.helpers import PROJECT_DIR, SAMPLE_RUN, SAMPLE_TRACES
from trace_assets_tests.support.service_processes import running_webserver, service_env

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
    # The instance's schemas first, as `make dev` has them by the time a user runs `backfill`: a
    # daemon and the CLI creating SQLite schemas at once on a fresh home can leave two alembic heads.
    subprocess.run([str(BIN / "trace-assets"), "status"], env=env, check=True, capture_output=True, timeout=120)
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
        blocked = subprocess.run(  # the sample's live keys block publishing under the default policy
            [str(BIN / "trace-assets"), "backfill", "sweep-run-2", "--wait"],
            capture_output=True,
            text=True,
            env=env,
            timeout=420,
        )
    finally:
        os.killpg(daemon.pid, signal.SIGTERM)
        daemon.wait(timeout=60)
    assert done.returncode == 0, done.stderr + (tmp_path / "daemon.log").read_text()[-3000:]
    *run_lines, result = [json.loads(line) for line in done.stdout.splitlines()]
    assert result["status"] == "COMPLETED_SUCCESS"
    assert result["run_ids"] == ["sweep-run-1", "sweep-run-2"]
    assert [(r["run_id"], r["status"], r["exported"], r["scored"]) for r in run_lines] == [
        ("sweep-run-1", "SUCCESS", 28, 34),
        ("sweep-run-2", "SUCCESS", 28, 34),
    ]
    assert "sweep-run-1: SUCCESS; 36 trial folders, 34 scored, 28 exported (82.35% of scored)" in done.stderr

    assert blocked.returncode == 1, blocked.stderr
    [run_line, summary] = [json.loads(line) for line in blocked.stdout.splitlines()]
    assert (run_line["run_id"], run_line["status"], run_line["exported"]) == ("sweep-run-2", "FAILURE", 28)
    assert "no_live_secrets" in run_line["reason"], run_line
    assert summary["run_ids"] == ["sweep-run-2"]

    with dg.DagsterInstance.from_config(str(home)) as instance:
        records = instance.get_run_records(dg.RunsFilter(tags={"dagster/backfill": result["backfill_id"]}))
        runs = [record.dagster_run for record in records]
        assert sorted(run.tags["dagster/partition"] for run in runs) == result["run_ids"]
        assert {run.tags["trace_assets/sweep"] for run in runs} == {"sweep"}  # for tag concurrency limits
        assert all(run.status == dg.DagsterRunStatus.SUCCESS for run in runs)
        # Asset backfills run Dagster's implicit asset job: the limit on their partition tag holds them.
        assert {run.job_name for run in runs} == {"__ASSET_JOB"}, {run.job_name for run in runs}
        for run in runs:  # steps in the run worker itself: no process of their own per step
            workers = instance.get_records_for_run(run.run_id, of_type=dg.DagsterEventType.STEP_WORKER_STARTING)
            assert not workers.records, run.job_name
    coverage = json.loads((tmp_path / "published" / "sweep-run-1" / "coverage.json").read_text())
    assert coverage["run_id"] == "sweep-run-1" and coverage["exported"] == 28
    blocked_folder = tmp_path / "published" / "sweep-run-2"  # the blocked republish withdrew the version
    assert sorted(p.name for p in blocked_folder.iterdir()) == ["secret_scan.json", "versions.json"]


def test_backfill_calls_carry_the_configured_headers(tmp_path, monkeypatch):
    """The real webserver behind a proxy that answers 401 to a request without the right headers."""
    home = tmp_path / "dagster_home"
    home.mkdir()
    shutil.copytree(SAMPLE_TRACES / SAMPLE_RUN, tmp_path / "traces" / SAMPLE_RUN)
    env = service_env(
        home,
        TRACE_ASSETS_TRACES_ROOT=str(tmp_path / "traces"),
        TRACE_ASSETS_PUBLISH_ROOT=str(tmp_path / "published"),
        TRACE_ASSETS_STAGING_ROOT=str(tmp_path / "staging"),
    )
    secret = "Bearer s3cret-token"
    required = {"Authorization": secret, "X-Team": "rl=1"}
    with running_webserver(home, env) as webserver, FaultProxy(webserver.url, required_headers=required) as proxy:
        command = [str(BIN / "trace-assets"), "backfill", SAMPLE_RUN, "--on-secret", "allow", "--webserver", proxy.url]
        refused = subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)
        assert refused.returncode == 2 and proxy.stats["requests"] == 0
        assert "HTTP 401" in refused.stderr and "TRACE_ASSETS_DAGSTER_HEADERS" in refused.stderr, refused.stderr

        headers = f"Authorization={secret}; X-Team=rl=1"  # a value may hold '='
        env["TRACE_ASSETS_DAGSTER_HEADERS"] = headers
        done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)
        assert done.returncode == 0, done.stderr
        launched = json.loads(done.stdout)
        assert launched["status"] == "REQUESTED" and launched["run_ids"] == [SAMPLE_RUN]
        assert proxy.stats["requests"] == 1 and proxy.stats["unauthorized"] == 1  # the refused launch only

        # What `--wait` asks, with the headers given as a dict (the CLI's option) rather than the environment.
        assert backfill_status(proxy.url, launched["backfill_id"], headers=required).name == "REQUESTED"
        with pytest.raises(GraphQLError, match="RunNotFoundError"):
            failure_reason(proxy.url, "no-such-run", headers=required)
        monkeypatch.setenv("TRACE_ASSETS_DAGSTER_HEADERS", headers)
        assert backfill_status(proxy.url, launched["backfill_id"]).name == "REQUESTED"
        assert proxy.stats["requests"] == 4 and proxy.stats["unauthorized"] == 1
    assert secret not in refused.stderr + done.stderr
