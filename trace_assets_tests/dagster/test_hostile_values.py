"""Hostile values in result.json and trajectories, through the whole `export_trace_run` job on a
temporary instance: the run succeeds and every output (rows, card, plots, metadata, sweep view) holds."""

from __future__ import annotations

import json
import math
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import dagster as dg
import pyarrow.parquet as pq
import yaml
from huggingface_hub import DatasetCard
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st

from trace_assets.definitions import build_definitions, export_trace_run, trace_runs
from trace_assets.defs.resources import config_from_env
from trace_assets.defs.sweep import scope_statuses, status_text
from trace_assets.sweep.view import markdown_table, plot_svg, text_table
from trace_assets_tests.support.bad_input import GOOD, raw_result
from trace_assets_tests.support.declared_configs import check_scope_folder
from trace_assets_tests.support.hostile_values import every_value_everywhere, trials, write_trials

RUN = "hostile-values"
ASSETS = ("raw_trial_listing", "scored_trials", "last_episode_rows", "secret_scan_report", "published_shards")
SECTIONS = {"Provenance", "Fields", "Usage", "Example row", "Rewards and turns", "Export options", "Sessions"}
SECTIONS |= {"Coverage", "Secret scan", "Considerations", "Version history"}


def _export(instance: dg.DagsterInstance, root: Path, run: str = RUN) -> dg.ExecuteInProcessResult:
    """The job on `run` under `root/traces`, redacting what the scan finds."""
    config = config_from_env(
        {},
        traces_root=str(root / "traces"),
        publish_root=str(root / "published"),
        staging_root=str(root / "staging"),
        on_secret="redact",
    )
    if run not in instance.get_dynamic_partitions(trace_runs.name):
        instance.add_dynamic_partitions(trace_runs.name, [run])
    job = build_definitions(config).resolve_job_def(export_trace_run.name)
    return job.execute_in_process(instance=instance, partition_key=run, raise_on_error=False)


def _finite(value: Any) -> bool:
    """No NaN or infinity anywhere in a metadata value (floats, JSON, table records)."""
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, dg.TableMetadataValue):
        return _finite(value.records)
    if isinstance(value, dg.TableRecord):
        return _finite(value.data)
    if isinstance(value, dict):
        return all(_finite(v) for v in value.values())
    if type(value) in (list, tuple):
        return all(_finite(v) for v in value)
    return True


def _metadata(instance: dg.DagsterInstance, run: str) -> dict[str, dict[str, Any]]:
    """Each asset's latest metadata for `run`, checked to hold no non-finite number."""
    metadata = {}
    for asset in ASSETS:
        event = instance.get_latest_materialization_event(dg.AssetKey(asset))
        assert event is not None and event.asset_materialization is not None
        assert event.asset_materialization.partition == run
        metadata[asset] = {k: v.value for k, v in event.asset_materialization.metadata.items()}
        assert _finite(metadata[asset]), (asset, metadata[asset])
    return metadata


def _check_card(text: str, run: str) -> None:
    """The Hub parses the card, its header is YAML, and no value broke the body's structure."""
    DatasetCard(text, ignore_metadata_errors=False)
    assert text.startswith("---\n")
    header, body = text[4:].split("\n---\n", 1)
    assert isinstance(yaml.safe_load(header), dict)
    headings = [line for line in body.splitlines() if line.startswith("#")]
    assert headings[0] == f"# {run} traces" or headings[0].startswith(f"# {run} traces of ")
    assert all(h.startswith("## ") and h[3:] in SECTIONS for h in headings[1:]), headings
    assert len(set(headings)) == len(headings) and "---" not in body.splitlines()
    provenance = body.split("## Provenance\n\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert len(provenance) == 3 and all(line.startswith("- **") for line in provenance), provenance
    if "## Example row" in headings:  # the first row as JSON, whole inside its fence
        lines = body.split("## Example row\n\n", 1)[1].split("\n\n## ", 1)[0].split("\n")
        fence = lines[2].removesuffix("json")
        assert set(fence) == {"`"} and lines[-1] == fence and fence not in "\n".join(lines[3:-1])
        assert isinstance(json.loads("\n".join(lines[3:-1])), dict)


def _check_run(instance: dg.DagsterInstance, root: Path, run: str, drawn: list[dict[str, Any]]) -> None:
    names = write_trials(root / "traces" / run / "trace_jobs", drawn)
    assert _export(instance, root, run).success
    folder = root / "published" / run
    coverage = json.loads((folder / "coverage.json").read_text())
    assert coverage["trial_dirs"] == len(names) == coverage["scored"] + coverage["unscored"]
    assert coverage["trial_dirs"] == coverage["exported"] + sum(coverage["excluded"].values())
    assert coverage["unscored"] == 0 and coverage["rows"] >= coverage["exported"]
    assert sorted(pq.read_table(folder / "trials.parquet")["trial_dir"].to_pylist()) == sorted(names)

    _check_card((folder / "README.md").read_text(), run)
    for plot in (folder / "plots").iterdir():
        ET.fromstring(plot.read_text())
    check_scope_folder(folder, root / "hf_cache")  # every config its cards declare, sessions' too

    _metadata(instance, run)
    [status] = [s for s in scope_statuses(instance)[0] if s.scope == run]
    record = status.published
    assert record is not None and (record.mean_reward is None or math.isfinite(record.mean_reward))
    assert run in text_table([status]) and run in markdown_table([status]) and run in status_text(instance)
    ET.fromstring(plot_svg([record]))


def test_a_nan_or_infinite_reward_does_not_fail_the_run(tmp_path):
    rewards = {"nan__t1": "NaN", "minus-inf__t2": "-Infinity", "huge__t3": "1e308", "neg__t4": "-1", "one__t5": "1"}
    for name, reward in rewards.items():
        trial = tmp_path / "traces" / RUN / "trace_jobs" / name
        (trial / "agent").mkdir(parents=True)
        (trial / "result.json").write_bytes(raw_result(name, reward))
        (trial / "agent" / "trajectory.json").write_bytes(GOOD)
    with dg.instance_for_test() as instance:
        assert _export(instance, tmp_path).success
        metadata = _metadata(instance, RUN)["published_shards"]
        [status], _, _ = scope_statuses(instance)
    record = status.published
    assert record is not None and record.mean_reward == metadata["mean_reward"]
    assert RUN in text_table([status]) + markdown_table([status])
    ET.fromstring(plot_svg([record]))
    assert metadata["dagster/row_count"] == 5 and metadata["rewards_not_finite"] == 2
    assert math.isfinite(metadata["mean_reward"]) and metadata["mean_reward"] == (1e308 - 1 + 1) / 3
    card = (tmp_path / "published" / RUN / "README.md").read_text()
    assert "2 with a reward that is not a finite number (`-inf` (1), `nan` (1))" in card


def test_hostile_values_in_every_field_publish_and_account_for_every_trial():
    with dg.instance_for_test() as instance, tempfile.TemporaryDirectory() as temp:
        runs = iter(range(1000))

        # Derandomized: the same examples every run. No shrinking: a failure is reported as drawn,
        # in bounded time (add Phase.shrink locally to simplify it). About 5 s an example.
        @settings(
            max_examples=20,
            derandomize=True,
            database=None,
            deadline=None,
            phases=[Phase.explicit, Phase.generate],
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
        )
        @example(every_value_everywhere())
        @given(st.lists(trials(), min_size=1, max_size=4))
        def publishes(drawn: list[dict[str, Any]]) -> None:
            run = f"prop-{next(runs)}"
            _check_run(instance, Path(temp) / run, run, drawn)

        publishes()
