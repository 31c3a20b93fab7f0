"""Every published Parquet file is laid out as `datasets` 5.x writes Parquet for the Hub (issue 26
item 2): content-defined chunking with its options, the page index, the options in the metadata;
shards staged before that layout are rewritten, not copied."""

from __future__ import annotations

import inspect
import json

import pyarrow.parquet as pq

from trace_assets.publishing.dataset_folder import TRIALS_FILE, build_run_folder
from trace_assets.secret_scan.scanner import ScanOptions
from trace_assets.steps import parquet_layout
from trace_assets.steps.parquet_layout import CDC_METADATA_KEY, CDC_OPTIONS, writer_options
from trace_assets.steps.scan import scan_run
from trace_assets_tests.support.helpers import SAMPLE_RUN
from trace_assets_tests.unit.test_row_parts import _published_rows, _stage


def _laid_out_as_the_hub_writes(path) -> bool:
    metadata = pq.read_metadata(path)
    chunks = [
        metadata.row_group(g).column(c) for g in range(metadata.num_row_groups) for c in range(metadata.num_columns)
    ]
    recorded = (metadata.metadata or {}).get(CDC_METADATA_KEY.encode())
    return (
        recorded is not None
        and json.loads(recorded) == CDC_OPTIONS
        and bool(chunks)
        and all(chunk.has_offset_index and chunk.has_column_index for chunk in chunks)
    )


def test_the_options_are_the_ones_datasets_writes_with():
    import datasets  # here: at collection it was half a second of every unit run, each pytest worker's
    from datasets.arrow_writer import ParquetWriter as DatasetsParquetWriter

    assert CDC_OPTIONS == datasets.config.DEFAULT_CDC_OPTIONS
    defaults = inspect.signature(DatasetsParquetWriter.__init__).parameters
    assert defaults["use_content_defined_chunking"].default is True  # meaning DEFAULT_CDC_OPTIONS
    assert writer_options() == {
        "use_content_defined_chunking": CDC_OPTIONS,
        "write_page_index": defaults["write_page_index"].default,
    }


def test_shards_parts_and_trials_are_laid_out_so(tmp_path, monkeypatch):
    staging, coverage = _stage(tmp_path, rows_per_part=10)
    parts = staging.require_rows()
    assert all(_laid_out_as_the_hub_writes(part) for part in parts.files)  # staged as published: copied as they are
    report = scan_run(parts, SAMPLE_RUN, ScanOptions())
    folder = tmp_path / "out"
    shards = build_run_folder(folder, parts, staging.statuses, coverage, report, max_rows_per_shard=10)
    for name in [*shards.files, TRIALS_FILE]:
        assert _laid_out_as_the_hub_writes(folder / name), name
    assert pq.read_table(folder / TRIALS_FILE) == pq.read_table(staging.statuses)

    # parts staged by an earlier version (no chunking) are rewritten as shards, with the same rows
    monkeypatch.setattr(parquet_layout, "writer_options", lambda: {})
    old_staging, _ = _stage(tmp_path / "old", rows_per_part=10)
    monkeypatch.undo()
    old_parts = old_staging.require_rows()
    assert not any(_laid_out_as_the_hub_writes(part) for part in old_parts.files)
    again = build_run_folder(
        tmp_path / "again", old_parts, old_staging.statuses, coverage, report, max_rows_per_shard=10
    )
    assert all(_laid_out_as_the_hub_writes(tmp_path / "again" / name) for name in again.files)
    assert _published_rows(tmp_path / "again") == _published_rows(folder)
