"""Staged rows are cut where shards are: publishing copies them, and re-cuts only when it must."""

from __future__ import annotations

import shutil

import pyarrow.parquet as pq
import pytest
import yaml

from trace_assets.core.accounting import Coverage
from trace_assets.core.scope import RunScope
from trace_assets.harbor.options import ExportOptions
from trace_assets.publishing.dataset_folder import build_run_folder
from trace_assets.secret_scan.scanner import ScanOptions
from trace_assets.steps.rows import export_rows
from trace_assets.steps.scan import scan_run
from trace_assets.steps.staged_rows import iter_rows
from trace_assets.steps.staging import RunStaging
from trace_assets.store.trace_store import TraceStore
from trace_assets_tests.support.helpers import SAMPLE_RUN, SAMPLE_TRACES, stage_rows


def _stage(tmp_path, rows_per_part: int, traces=SAMPLE_TRACES) -> tuple[RunStaging, Coverage]:
    store = TraceStore(str(traces))
    staging = RunStaging(tmp_path / "staging", RunScope(SAMPLE_RUN))
    options = ExportOptions(subagents="merged")
    coverage, _ = stage_rows(store, staging, options, 8, rows_per_part=rows_per_part)["last_episode_rows"]
    return staging, coverage


def _published_rows(folder) -> list[dict]:
    return [row for shard in sorted((folder / "data").rglob("*.parquet")) for row in pq.read_table(shard).to_pylist()]


def _card_header(folder) -> dict:
    return yaml.safe_load((folder / "README.md").read_text().split("---\n")[1])


def test_parts_are_the_published_shards_byte_for_byte(tmp_path):
    staging, coverage = _stage(tmp_path, rows_per_part=10)
    parts = staging.require_rows()
    assert [part.rows for part in parts.parts] == [10, 10, 10, 4]  # 34 rows: 28 trials, 6 subagent rows
    report = scan_run(parts, SAMPLE_RUN, ScanOptions())
    folder = tmp_path / "out"
    shards = build_run_folder(folder, parts, staging.statuses, coverage, report, max_rows_per_shard=10)
    assert shards.files == [f"data/{shards.version}/train-0000{i}-of-00004.parquet" for i in range(4)]
    for part, shard in zip(parts.files, shards.files):
        assert (folder / shard).read_bytes() == part.read_bytes()
    info = _card_header(folder)["dataset_info"]
    assert info["splits"][0]["num_examples"] == 34
    assert info["dataset_size"] == sum(part.arrow_bytes for part in parts.parts) > 0


@pytest.mark.parametrize("max_rows_per_shard", [7, 50])
def test_a_changed_shard_size_recuts_the_same_rows(tmp_path, max_rows_per_shard):
    staging, coverage = _stage(tmp_path, rows_per_part=10)
    parts = staging.require_rows()
    staged = [row for table in iter_rows(parts) for row in table.to_pylist()]
    report = scan_run(parts, SAMPLE_RUN, ScanOptions())
    folder = tmp_path / "out"
    shards = build_run_folder(folder, parts, staging.statuses, coverage, report, max_rows_per_shard)
    expected_shards = -(-34 // max_rows_per_shard)
    assert len(shards.files) == expected_shards
    assert [pq.read_metadata(folder / f).num_rows for f in shards.files][:-1] == [max_rows_per_shard] * (
        expected_shards - 1
    )
    assert _published_rows(folder) == staged
    if max_rows_per_shard == 50:
        assert [pq.read_metadata(folder / f).num_rows for f in shards.files] == [34]


def test_rows_from_an_older_layout_are_not_reused(tmp_path):
    """Statuses whose rows are gone (an older staging layout, a half-finished step) mean a full re-read."""
    traces = tmp_path / "traces"
    shutil.copytree(SAMPLE_TRACES / SAMPLE_RUN, traces / SAMPLE_RUN)
    staging, first = _stage(tmp_path, 10, traces)
    shutil.rmtree(staging.rows)
    store = TraceStore(str(traces))
    coverage, stats = export_rows(store, staging, ExportOptions(subagents="merged"), 8, lambda _: None, 10)
    assert (stats.cached, stats.reread) == (0, 33) and coverage == first
