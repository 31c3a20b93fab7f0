"""A partition materialized through Dagster, on a real (temporary) instance, read back as a dataset."""

from __future__ import annotations

import json
from pathlib import Path

import dagster as dg
import datasets
import pytest

from trace_assets.definitions import build_definitions, export_trace_run, trace_runs
from trace_assets.defs.resources import config_from_env
from trace_assets.publishing.root_card import ROOT_LOCK
from trace_assets.runtime.progress import LOG_EVERY_SECONDS
from trace_assets_tests.support.helpers import DATA, SAMPLE_RUN, SAMPLE_TRACES, comparable, harbor_rows, load_published


def _materialize(instance: dg.DagsterInstance, tmp_path: Path, **config) -> dg.ExecuteInProcessResult:
    trace_config = config_from_env(
        {},
        traces_root=str(SAMPLE_TRACES),
        publish_root=str(tmp_path / "published"),
        staging_root=str(tmp_path / "staging"),
        **config,
    )
    if SAMPLE_RUN not in instance.get_dynamic_partitions(trace_runs.name):
        instance.add_dynamic_partitions(trace_runs.name, [SAMPLE_RUN])
    job = build_definitions(trace_config).resolve_job_def(export_trace_run.name)
    return job.execute_in_process(instance=instance, partition_key=SAMPLE_RUN, raise_on_error=False)


@pytest.fixture
def instance():
    with dg.instance_for_test() as instance:
        yield instance


def _metadata(instance: dg.DagsterInstance, asset: str) -> dict:
    event = instance.get_latest_materialization_event(dg.AssetKey(asset))
    assert event is not None, f"{asset} was not materialized"
    assert event.asset_materialization.partition == SAMPLE_RUN
    return {k: v.value for k, v in event.asset_materialization.metadata.items()}


def test_partition_materializes_and_loads_as_a_dataset(instance, tmp_path):
    result = _materialize(instance, tmp_path, on_secret="allow", on_unverified="keep", max_rows_per_shard=10)
    assert result.success

    rows_meta = _metadata(instance, "last_episode_rows")
    assert (rows_meta["trial_dirs"], rows_meta["scored"], rows_meta["unscored"], rows_meta["exported"]) == (
        36,
        34,
        2,
        28,
    )
    assert rows_meta["export_ratio"] == "82.4% of scored" and rows_meta["rows"] == 28
    assert rows_meta["excluded"].records[0].data["meaning"] == "were scored but have no agent/trajectory.json"
    excluded = [r.data for r in rows_meta["excluded_trials"].records]
    assert len(excluded) == 8 and {"trial_name", "reason", "detail"} <= set(excluded[0])
    assert (rows_meta["sessions"], rows_meta["sessions_skipped"]) == (34, "none")  # not an empty `{}`
    published_meta = _metadata(instance, "published_shards")
    assert published_meta["shards"] == 3 and published_meta["redacted"] == "none"
    assert published_meta["dagster/row_count"] == 28 and not {"rows", "num_examples"} & set(published_meta)  # once
    assert published_meta["mean_reward"] == round(published_meta["mean_reward"], 3)  # a number, to 3 places
    columns = {c.name: c.description for c in published_meta["dagster/column_schema"].columns}
    assert list(columns)[0] == "conversations" and columns["result"].startswith("the trial's reward")
    assert published_meta["download_size"].endswith(" bytes)")

    checks = {e.check_name: e for e in result.get_asset_check_evaluations()}
    assert checks["coverage_accounts_for_every_folder"].passed
    assert not checks["export_ratio_above_threshold"].passed  # 82% < the 90% default: a warning
    ratio = {name: value.value for name, value in checks["export_ratio_above_threshold"].metadata.items()}
    assert ratio == {"export_ratio": "82.4%", "threshold": "90.0%"}
    assert checks["export_ratio_above_threshold"].severity == dg.AssetCheckSeverity.WARN

    folder = tmp_path / "published" / SAMPLE_RUN
    [version] = (folder / "data").iterdir()  # one version of the shards, named by their content
    assert sorted(p.name for p in version.iterdir()) == [f"train-0000{i}-of-00003.parquet" for i in range(3)]
    coverage = json.loads((folder / "coverage.json").read_text())
    assert coverage["run_id"] == SAMPLE_RUN and coverage["exported"] == 28
    card = (folder / "README.md").read_text()
    assert (
        "num_examples: 28" in card
        and "**36** trial folders" in card
        and "`no_trajectory`: **3** trial folders were" in card
    )

    dataset = load_published(folder, tmp_path / "hf_cache")
    assert dataset.num_rows == 28
    assert dataset.features["conversations"] == datasets.List(
        {"content": datasets.Value("string"), "role": datasets.Value("string")}
    )
    expected = harbor_rows(DATA / "harbor_sample" / "harbor-export-last.jsonl", include_subagents=False)
    assert comparable(list(dataset)) == comparable(expected)


def test_a_quick_step_stores_its_lines_as_one_message(instance, tmp_path):
    """Each line of the run log is an event the instance stores: a step done within its first
    seconds stores its progress and summary lines as one message, each line whole, in order."""
    result = _materialize(instance, tmp_path, on_secret="allow", on_unverified="keep")
    assert result.success
    messages: dict[str, list[str]] = {}
    took: dict[str, float] = {}
    for record in instance.all_logs(result.run_id):
        if record.dagster_event is None and record.step_key:
            messages.setdefault(record.step_key, []).append(record.user_message)
        elif record.is_dagster_event and record.dagster_event_type == dg.DagsterEventType.STEP_START:
            took[record.step_key] = -record.timestamp
        elif record.is_dagster_event and record.dagster_event_type == dg.DagsterEventType.STEP_SUCCESS:
            took[record.step_key] += record.timestamp
    listing = "\n".join(messages["raw_trial_listing"]).splitlines()
    assert (
        listing[0].startswith("1,516/1,516 objects (100%)") and listing[-1] == "listed 1516 objects in 36 trial folders"
    )
    assert "\n".join(messages["secret_scan_report"]).splitlines()[-1] == "secret scan verdict: live"
    published = "\n".join(messages["published_shards"]).splitlines()
    assert published[-1] == f"published 28 rows in 1 shard(s) to {tmp_path / 'published' / SAMPLE_RUN}"
    assert any(line.startswith("card: README.md") for line in published)
    quick = [step for step in messages if took[step] < LOG_EVERY_SECONDS]
    assert quick and all(len(messages[step]) == 1 for step in quick)


def test_rematerializing_replaces_the_run_as_a_whole(instance, tmp_path):
    assert _materialize(instance, tmp_path, on_secret="allow", on_unverified="keep", max_rows_per_shard=5).success
    data = tmp_path / "published" / SAMPLE_RUN / "data"
    [first] = data.iterdir()
    assert len(list(first.iterdir())) == 6
    assert _materialize(
        instance, tmp_path, on_secret="allow", on_unverified="keep", max_rows_per_shard=1000, subagents="merged"
    ).success
    [second] = data.iterdir()  # the old version's folder is gone once the card names the new one
    assert second != first and [p.name for p in second.iterdir()] == ["train-00000-of-00001.parquet"]
    leftovers = [p for p in data.parent.parent.iterdir() if p.name.startswith(".") and p.name != ROOT_LOCK]
    assert not leftovers  # the root card's lock file stays, as a lock file does
    dataset = load_published(data.parent, tmp_path / "hf_cache_2")
    assert dataset.num_rows == 34 and "trace_source" in dataset.features
