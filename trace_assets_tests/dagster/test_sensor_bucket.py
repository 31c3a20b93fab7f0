"""The sensor on a Hub Storage Bucket root (`hf://buckets/...`, the project's Hub stand-in): a tick's
requests follow what changed, as on S3: one listing of the root's run folders a tick once the runs
have settled; and the sweep view of that root."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import dagster as dg

from trace_assets.definitions import build_definitions, export_trace_run
from trace_assets.defs.partitions import register_scopes
from trace_assets.defs.resources import config_from_env
from trace_assets.defs.sweep import status_text
from trace_assets_tests.support.helpers import SAMPLE_RUN, SAMPLE_TRACES
from trace_assets_tests.support.hub_server import HubStandIn
from trace_assets_tests.support.sensor_ticks import sensor_tick

pytest_plugins = ["trace_assets_tests.support.hub_server"]

BUCKET = "org/traces"
RUNS = 30
TRIALS = sorted(p for p in (SAMPLE_TRACES / SAMPLE_RUN / "trace_jobs").iterdir() if p.is_dir())[:2]


def _listings(hub: HubStandIn, since: int) -> list[str]:
    return [f"{r.path}?{r.query}" for r in hub.requests[since:] if r.path.startswith("/api/buckets/")]


def test_a_tick_over_thirty_settled_runs_lists_the_root_once(tmp_path, hub_server):
    hub_server.create_bucket(BUCKET)
    files = {
        f"sweeps/run-{n:02d}/trace_jobs/{trial.name}/{p.relative_to(trial).as_posix()}": p.read_bytes()
        for n in range(RUNS)
        for trial in TRIALS
        for p in trial.rglob("*")
        if p.is_file()
    }
    hub_server.put_bucket_files(BUCKET, files, uploaded_at=datetime.now(UTC) - timedelta(days=1))  # settled
    config = config_from_env(
        {},
        traces_root=f"hf://buckets/{BUCKET}/sweeps",
        publish_root=str(tmp_path / "published"),
        staging_root=str(tmp_path / "staging"),
        settle_seconds=600,
    )
    defs = build_definitions(config)

    with dg.instance_for_test() as instance:
        first = sensor_tick(defs, instance, None)
        assert sorted(r.partition_key for r in first.run_requests) == [f"run-{n:02d}" for n in range(RUNS)]
        before = len(hub_server.requests)
        second = sensor_tick(defs, instance, first.cursor)
        listed = _listings(hub_server, before)
        assert second.run_requests == []
        assert len(listed) <= 3, listed
        assert listed == ["/api/buckets/org/traces/tree/sweeps?recursive=false"]

        # a new run costs its own listings: its trace_jobs/ level and its scope in full
        hub_server.put_bucket_files(BUCKET, {"sweeps/run-31/trace_jobs/new__x/result.json": b"{}"})
        before = len(hub_server.requests)
        third = sensor_tick(defs, instance, second.cursor)
        assert [list(r.partition_keys) for r in third.dynamic_partitions_requests] == [["run-31"]]
        assert json.loads(third.cursor)["scopes"]["run-31"][2] is None  # settling: not requested yet
        assert len(_listings(hub_server, before)) == 3


def test_an_export_from_a_bucket_shows_in_the_sweep_view_of_that_root(tmp_path, hub_server):
    hub_server.create_bucket(BUCKET)
    local = SAMPLE_TRACES / SAMPLE_RUN
    files = {
        f"sweeps/{SAMPLE_RUN}/{p.relative_to(local).as_posix()}": p.read_bytes()
        for p in local.rglob("*")
        if p.is_file()
    }
    hub_server.put_bucket_files(BUCKET, files)
    root = f"hf://buckets/{BUCKET}/sweeps"
    config = config_from_env(
        {},
        traces_root=root,
        publish_root=str(tmp_path / "published"),
        staging_root=str(tmp_path / "staging"),
        on_secret="allow",
        on_unverified="keep",
    )
    defs = build_definitions(config)
    with dg.instance_for_test() as instance:
        register_scopes(instance, [SAMPLE_RUN])
        assert (
            defs.resolve_job_def(export_trace_run.name)
            .execute_in_process(instance=instance, partition_key=SAMPLE_RUN)
            .success
        )
        assert (tmp_path / "published" / SAMPLE_RUN / "README.md").exists()
        [row] = [line.split() for line in status_text(instance, root).splitlines() if line.startswith(SAMPLE_RUN)]
        assert row[1:5] == ["published", "36", "34", "28"]  # state, trial folders, scored, exported
        assert SAMPLE_RUN not in status_text(instance, "hf://buckets/org/other")  # another root's view
