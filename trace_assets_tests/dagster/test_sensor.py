"""The sensor, tick by tick, with Dagster's own test utilities on a real temporary instance."""

from __future__ import annotations

import json
import shutil
import time

import dagster as dg
import pytest

from trace_assets.definitions import build_definitions
from trace_assets.defs.resources import config_from_env
from trace_assets.discovery import dump_cursor, plan_requests
from trace_assets_tests.support.helpers import SAMPLE_RUN, SAMPLE_TRACES


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


def _tick(defs: dg.Definitions, instance: dg.DagsterInstance, cursor: str | None):
    sensor = defs.resolve_sensor_def("new_trace_runs_sensor")
    # With instance_ref, run requests are checked against the partitions the same tick adds, as in the daemon.
    context = dg.build_sensor_context(
        instance=instance,
        instance_ref=instance.get_ref(),
        cursor=cursor,
        definitions=defs,
        resources=defs.resources,
    )
    result = sensor.evaluate_tick(context)
    for request in result.dynamic_partitions_requests or []:
        instance.add_dynamic_partitions(request.partitions_def_name, list(request.partition_keys))
    return result


def test_ticks_new_growing_settled_and_unchanged_runs(traces_root):
    defs = _defs(traces_root, settle_seconds=1)
    run = traces_root / "run-a"
    shutil.copytree(SAMPLE_TRACES / SAMPLE_RUN, run)

    with dg.instance_for_test() as instance:
        first = _tick(defs, instance, None)  # new run: a partition, but no export before it settles
        assert [list(r.partition_keys) for r in first.dynamic_partitions_requests] == [["run-a"]]
        assert first.run_requests == []
        assert instance.get_dynamic_partitions("trace_runs") == ["run-a"]

        (run / "trace_jobs" / "late-trial__x").mkdir()
        (run / "trace_jobs" / "late-trial__x" / "trial.log").write_text("still running")
        growing = _tick(defs, instance, first.cursor)  # still being written: wait
        assert growing.run_requests == [] and not growing.dynamic_partitions_requests

        time.sleep(1.2)
        settled = _tick(defs, instance, growing.cursor)
        assert [r.partition_key for r in settled.run_requests] == ["run-a"]
        assert settled.run_requests[0].run_key.startswith("run-a:")

        unchanged = _tick(defs, instance, settled.cursor)
        assert unchanged.run_requests == []

        defs = _defs(traces_root, settle_seconds=0)
        shutil.copytree(SAMPLE_TRACES / SAMPLE_RUN, traces_root / "run-b")
        seen_at_once = _tick(defs, instance, unchanged.cursor)
        assert [r.partition_key for r in seen_at_once.run_requests] == ["run-b"]

        (run / "trace_jobs" / "late-trial__x" / "result.json").write_text("{}")
        regrown = _tick(defs, instance, seen_at_once.cursor)  # grew after its export: exported again
        assert [r.partition_key for r in regrown.run_requests] == ["run-a"]
        assert regrown.run_requests[0].run_key != settled.run_requests[0].run_key

        cursor = json.loads(regrown.cursor)
        assert set(cursor["runs"]) == {"run-a", "run-b"} and len(regrown.cursor) < 200


def test_cursor_stays_small_for_thousands_of_runs():
    fingerprints = {f"sweep-run-{i:05d}": f"{i:016x}" for i in range(5000)}
    to_request, state = plan_requests({}, fingerprints, now=1000.0, settle=0)
    assert len(to_request) == 5000
    assert len(dump_cursor(state)) / len(fingerprints) < 70  # bytes per run
    again, _ = plan_requests(state, fingerprints, now=2000.0, settle=0)
    assert again == []
