"""The sensor, tick by tick, with Dagster's own test utilities on a real temporary instance."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import dagster as dg
import pytest

from trace_assets.core.run_tags import SWEEP_TAG
from trace_assets.definitions import build_definitions
from trace_assets.defs.recheck import RECHECK_METADATA, request_rechecks
from trace_assets.defs.resources import config_from_env
from trace_assets.defs.sweep import scope_statuses
from trace_assets.sweep.discovery import (
    BACKOFF_START,
)
from trace_assets.sweep.scope_state import ScopeState
from trace_assets_tests.support.helpers import PROJECT_DIR, SAMPLE_RUN, SAMPLE_TRACES
from trace_assets_tests.support.sensor_ticks import evaluated_tick


@pytest.fixture
def traces_root(tmp_path):
    root = tmp_path / "traces"
    root.mkdir()
    return root


def _defs(traces_root, settle_seconds: float) -> dg.Definitions:
    published = str(traces_root.parent / "published")
    return build_definitions(
        config_from_env({}, traces_root=str(traces_root), publish_root=published, settle_seconds=settle_seconds)
    )


def test_ticks_new_growing_settled_stepped_and_published_runs(traces_root):
    defs = _defs(traces_root, settle_seconds=60)
    run = traces_root / "run-a"
    shutil.copytree(SAMPLE_TRACES / SAMPLE_RUN, run)  # copied with its files' old times: settled long ago

    with dg.instance_for_test() as instance:
        first = evaluated_tick(defs, instance, None)  # a finished run is requested at once
        assert [list(r.partition_keys) for r in first.dynamic_partitions_requests] == [["run-a"]]
        assert [r.partition_key for r in first.run_requests] == ["run-a"]
        assert first.run_requests[0].tags[SWEEP_TAG] == "traces"  # the traces root's last segment

        unchanged = evaluated_tick(defs, instance, first.cursor)
        assert unchanged.run_requests == [] and "export requested, not published yet" in unchanged.skip_message

        stepped = traces_root / "run-b" / "trace_jobs"
        for step in ("step-1", "step-2"):
            shutil.copytree(SAMPLE_TRACES / SAMPLE_RUN / "trace_jobs", stepped / step)
        (stepped / "step-2" / "late-trial__x").mkdir()
        (stepped / "step-2" / "late-trial__x" / "trial.log").write_text("still running")  # written now
        steps = evaluated_tick(defs, instance, unchanged.cursor)
        assert [r.partition_key for r in steps.run_requests] == ["run-b/step-1"]
        assert sorted(k for r in steps.dynamic_partitions_requests for k in r.partition_keys) == [
            "run-b/step-1",
            "run-b/step-2",
        ]
        assert "'run-b/step-2': settling, 1 min left" in evaluated_tick(defs, instance, steps.cursor).skip_message

        # a scope the CLI or a backfill published after its newest object is never exported again
        instance.report_runless_asset_event(dg.AssetMaterialization(asset_key="published_shards", partition="run-c"))
        shutil.copytree(SAMPLE_TRACES / SAMPLE_RUN, traces_root / "run-c")
        published = evaluated_tick(defs, instance, steps.cursor)
        assert "run-c" not in [r.partition_key for r in published.run_requests]
        afresh = evaluated_tick(defs, instance, None)  # a deleted cursor re-checks all, re-exports only the unpublished
        assert sorted(r.partition_key for r in afresh.run_requests) == ["run-a", "run-b/step-1"]

        cursor = json.loads(published.cursor)
        assert set(cursor["scopes"]) == {"run-a", "run-b/step-1", "run-b/step-2", "run-c"}
        assert len(published.cursor) < 600


def test_recheck_lists_a_published_scope_at_the_next_tick(traces_root, tmp_path):
    defs = _defs(traces_root, settle_seconds=60)
    shutil.copytree(SAMPLE_TRACES / SAMPLE_RUN, traces_root / "run-a")
    home = tmp_path / "dagster_home"
    home.mkdir()
    shutil.copyfile(PROJECT_DIR / "dagster.yaml", home / "dagster.yaml")
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRACE_ASSETS_")}

    def recheck(*keys: str) -> subprocess.CompletedProcess:
        cli = str(Path(sys.executable).with_name("trace-assets"))
        return subprocess.run(
            [cli, "recheck", *keys], capture_output=True, text=True, env={**env, "DAGSTER_HOME": str(home)}
        )

    with dg.DagsterInstance.from_config(str(home)) as instance:
        first = evaluated_tick(defs, instance, None)
        assert [r.partition_key for r in first.run_requests] == ["run-a"]
        waiting = evaluated_tick(defs, instance, first.cursor)
        assert "'run-a': export requested, not published yet" in waiting.skip_message

        asked = recheck("run-a", "run-z")
        assert asked.returncode == 1 and "'run-z' is not a partition the sensor knows" in asked.stderr
        assert [json.loads(line)["status"] for line in asked.stdout.splitlines()] == ["recheck_requested", "unknown"]
        listed = evaluated_tick(defs, instance, waiting.cursor)  # listed now, not in an hour
        assert (
            listed.skip_message == "1 scope(s): 1 exporting.\n'run-a': export requested, not published yet."
        )  # none ran
        assert json.loads(listed.cursor)["scopes"]["run-a"][4] == 2 * BACKOFF_START  # the next wait doubled
        again = evaluated_tick(defs, instance, listed.cursor)  # the request is read once
        assert "'run-a': export requested, not published yet" in again.skip_message


def test_a_cp_p_resync_of_new_content_is_exported_again(traces_root):
    defs = _defs(traces_root, settle_seconds=0)
    run = traces_root / "run-a"
    shutil.copytree(SAMPLE_TRACES / SAMPLE_RUN, run)
    with dg.instance_for_test() as instance:
        first = evaluated_tick(defs, instance, None)
        assert [r.partition_key for r in first.run_requests] == ["run-a"]
        instance.report_runless_asset_event(dg.AssetMaterialization(asset_key="published_shards", partition="run-a"))
        [result] = sorted(run.rglob("result.json"))[:1]
        before = result.stat()
        data = result.read_bytes()
        result.write_bytes(data.replace(b"0", b"1", 1) if b"0" in data else data[::-1])  # same size, new content
        os.utime(result, ns=(before.st_atime_ns, before.st_mtime_ns))  # as cp -p keeps it
        assert result.stat().st_size == before.st_size and result.stat().st_mtime_ns == before.st_mtime_ns
        request_rechecks(instance, ["run-a"], "test")
        resynced = evaluated_tick(defs, instance, first.cursor)
        assert [r.partition_key for r in resynced.run_requests] == ["run-a"]  # published before the change was seen
        assert resynced.run_requests[0].run_key != first.run_requests[0].run_key


def _run_whose_publish_fails(traces_root: Path) -> tuple[dg.Definitions, dg.JobDefinition, Path]:
    """run-a under the root, and definitions whose publish root is a file: its export fails at publishing."""
    published_root = traces_root.parent / "published"
    config = {"traces_root": str(traces_root), "publish_root": str(published_root), "on_secret": "allow"}
    defs = build_definitions(config_from_env({}, **config, settle_seconds=60))
    shutil.copytree(SAMPLE_TRACES / SAMPLE_RUN, traces_root / "run-a")
    published_root.write_text("a file where the publish root's folder goes")
    return defs, defs.resolve_job_def("export_trace_run"), published_root


def test_a_failed_export_is_requested_again_under_a_new_run_key_and_a_bad_re_check_is_ignored(traces_root):
    defs, export, published_root = _run_whose_publish_fails(traces_root)

    with dg.instance_for_test() as instance:
        first = evaluated_tick(defs, instance, None)
        [request] = first.run_requests
        assert not export.execute_in_process(instance=instance, partition_key="run-a", raise_on_error=False).success
        # any caller may record an observation: one that names no scope is logged and ignored
        odd = dg.AssetObservation(asset_key="published_shards", partition="run a", metadata={RECHECK_METADATA: "api"})
        instance.report_runless_asset_event(odd)
        request_rechecks(instance, ["run-a"], "test")
        retried = evaluated_tick(defs, instance, first.cursor)
        [again] = retried.run_requests
        assert again.partition_key == "run-a" and again.run_key not in (None, request.run_key)  # Dagster runs it

        published_root.unlink()
        assert export.execute_in_process(instance=instance, partition_key="run-a").success
        request_rechecks(instance, ["run-a"], "test")
        published = evaluated_tick(defs, instance, retried.cursor)
        assert published.run_requests == [] and "'run-a': published and unchanged" in published.skip_message


def test_a_blocked_export_is_not_requested_again_until_an_operator_asks(traces_root):
    """The sample holds credentials the default policy (on_secret=block) blocks on: at its re-check the
    sensor says so in `trace-assets status`'s words and requests nothing (a retry would scan it again
    to be blocked again); an operator's re-check requests it once more."""
    defs = _defs(traces_root, settle_seconds=60)
    shutil.copytree(SAMPLE_TRACES / SAMPLE_RUN, traces_root / "run-a")
    export = defs.resolve_job_def("export_trace_run")

    with dg.instance_for_test() as instance:
        first = evaluated_tick(defs, instance, None)
        [request] = first.run_requests
        assert not export.execute_in_process(instance=instance, partition_key="run-a", raise_on_error=False).success
        [status] = scope_statuses(instance)[0]
        assert status.state == ScopeState.BLOCKED and status.reason.startswith("blocked by check no_live_secrets")
        cursor = json.loads(first.cursor)
        cursor["scopes"]["run-a"][3] = 0.0  # its re-check due now, not in an hour
        due = evaluated_tick(defs, instance, json.dumps(cursor))
        assert due.run_requests == []
        assert due.skip_message == (
            f"1 scope(s): 1 blocked.\n'run-a': {status.reason}; not retried for this listing: requested again "
            "when its listing changes or on `trace-assets recheck run-a`."
        )
        request_rechecks(instance, ["run-a"], "test")  # after changing the policy or the allowlist
        [again] = evaluated_tick(defs, instance, due.cursor).run_requests
        assert again.partition_key == "run-a" and again.run_key not in (None, request.run_key)


def test_a_scope_blocked_after_a_publish_is_blocked_to_the_sensor_and_a_recheck_publishes_it(traces_root):
    """Issue 48's first story: published with `redact`, then blocked under `block` (the block keeps
    that version: it replaced every credential). Every tick says blocked, as `status` does, never
    "published and unchanged", from the first tick after the blocked run, though the scope's re-check
    is not due; after the policy goes back to redact, `recheck` requests it, and its successful run
    reads `published` at the very next tick, not at its re-check an hour on."""
    shutil.copytree(SAMPLE_TRACES / SAMPLE_RUN, traces_root / "run-a")
    published = str(traces_root.parent / "published")

    def defs_with(on_secret: str) -> dg.Definitions:
        return build_definitions(
            config_from_env(
                {}, traces_root=str(traces_root), publish_root=published, on_secret=on_secret, settle_seconds=60
            )
        )

    redact, block = defs_with("redact"), defs_with("block")
    with dg.instance_for_test() as instance:
        first = evaluated_tick(block, instance, None)
        assert [r.partition_key for r in first.run_requests] == ["run-a"]
        assert (
            redact.resolve_job_def("export_trace_run")
            .execute_in_process(instance=instance, partition_key="run-a")
            .success
        )
        published_tick = evaluated_tick(block, instance, first.cursor)
        assert (
            published_tick.skip_message == "1 scope(s): 1 published and unchanged.\n'run-a': published and unchanged."
        )
        export = block.resolve_job_def("export_trace_run")
        assert not export.execute_in_process(instance=instance, partition_key="run-a", raise_on_error=False).success
        [status] = scope_statuses(instance)[0]
        assert status.state == ScopeState.BLOCKED and "the version published before is kept" in status.reason
        # The next tick, its re-check not due for half an hour: the run that changed since (the CLI's,
        # the UI's) is read, so the scope is blocked at once.
        due = evaluated_tick(block, instance, published_tick.cursor)
        assert json.loads(due.cursor)["scopes"]["run-a"][3] > json.loads(due.cursor)["extra"]["runs_since"] + 600
        assert due.run_requests == [] and due.skip_message.startswith("1 scope(s): 1 blocked.\n'run-a': blocked by")

        request_rechecks(instance, ["run-a"], "test")  # after setting on_secret back to redact
        asked = evaluated_tick(redact, instance, due.cursor)
        assert [r.partition_key for r in asked.run_requests] == ["run-a"]
        export = redact.resolve_job_def("export_trace_run")
        assert export.execute_in_process(instance=instance, partition_key="run-a").success  # the requested run
        done = evaluated_tick(redact, instance, asked.cursor)
        assert done.skip_message == "1 scope(s): 1 published and unchanged.\n'run-a': published and unchanged."
        assert scope_statuses(instance)[0][0].state == ScopeState.PUBLISHED


def test_a_failed_export_is_not_hidden_by_a_later_run_of_other_assets(traces_root):
    defs, export, published_root = _run_whose_publish_fails(traces_root)

    with dg.instance_for_test() as instance:
        first = evaluated_tick(defs, instance, None)
        assert not export.execute_in_process(instance=instance, partition_key="run-a", raise_on_error=False).success
        listing = dg.AssetKey("raw_trial_listing")  # then someone materializes only the listing: a success
        assert export.execute_in_process(instance=instance, partition_key="run-a", asset_selection=[listing]).success
        request_rechecks(instance, ["run-a"], "test")
        retried = evaluated_tick(defs, instance, first.cursor)
        assert [r.partition_key for r in retried.run_requests] == ["run-a"]  # judged by the run that planned to publish
