"""Hostile values in result.json and trajectories, through the whole `export_trace_run` job on a
temporary instance: the run succeeds and every output (rows, card, plots, metadata, sweep view) holds."""

from __future__ import annotations

import math
from pathlib import Path

import dagster as dg

from trace_assets.definitions import build_definitions, export_trace_run, trace_runs
from trace_assets.defs.resources import config_from_env
from trace_assets_tests.support.bad_input import GOOD, raw_result

RUN = "hostile-values"


def _export(instance: dg.DagsterInstance, tmp_path: Path) -> dg.ExecuteInProcessResult:
    """The job on the run under `tmp_path/traces`, redacting what the scan finds."""
    config = config_from_env(
        {},
        traces_root=str(tmp_path / "traces"),
        publish_root=str(tmp_path / "published"),
        staging_root=str(tmp_path / "staging"),
        on_secret="redact",
    )
    if RUN not in instance.get_dynamic_partitions(trace_runs.name):
        instance.add_dynamic_partitions(trace_runs.name, [RUN])
    job = build_definitions(config).resolve_job_def(export_trace_run.name)
    return job.execute_in_process(instance=instance, partition_key=RUN, raise_on_error=False)


def _published_metadata(instance: dg.DagsterInstance) -> dict:
    event = instance.get_latest_materialization_event(dg.AssetKey("published_shards"))
    assert event is not None and event.asset_materialization is not None
    return {k: v.value for k, v in event.asset_materialization.metadata.items()}


def test_a_nan_or_infinite_reward_does_not_fail_the_run(tmp_path):
    rewards = {"nan__t1": "NaN", "minus-inf__t2": "-Infinity", "huge__t3": "1e308", "neg__t4": "-1", "one__t5": "1"}
    for name, reward in rewards.items():
        trial = tmp_path / "traces" / RUN / "trace_jobs" / name
        (trial / "agent").mkdir(parents=True)
        (trial / "result.json").write_bytes(raw_result(name, reward))
        (trial / "agent" / "trajectory.json").write_bytes(GOOD)
    with dg.instance_for_test() as instance:
        assert _export(instance, tmp_path).success
        metadata = _published_metadata(instance)
    assert metadata["num_examples"] == 5 and metadata["rewards_not_finite"] == 2
    assert math.isfinite(metadata["mean_reward"]) and metadata["mean_reward"] == (1e308 - 1 + 1) / 3
    card = (tmp_path / "published" / RUN / "README.md").read_text()
    assert "2 with a reward that is not a finite number (`-inf` (1), `nan` (1))" in card
