"""Shared test helpers: run the pipeline's steps (no Dagster) and read back what they wrote."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from trace_assets.core.accounting import Coverage
from trace_assets.core.scope import RunScope
from trace_assets.harbor.options import ExportOptions
from trace_assets.orchestration.context import ScopeContext
from trace_assets.orchestration.pipeline import run_staged_steps
from trace_assets.publishing.card import CardSettings
from trace_assets.publishing.targets import PublishTarget
from trace_assets.runtime.progress import Progress, quiet
from trace_assets.secret_scan.policy import ScanPolicy
from trace_assets.secret_scan.scanner import ScanOptions
from trace_assets.steps.rows import DEFAULT_ROWS_PER_SHARD
from trace_assets.steps.staged_rows import iter_rows
from trace_assets.steps.staging import RunStaging
from trace_assets.store.trace_store import TraceStore

PROJECT_DIR = Path(__file__).resolve().parent.parent.parent
SAMPLE_TRACES = PROJECT_DIR / "sample_traces"
SAMPLE_RUN = "rl-sample-run"
DATA = Path(__file__).resolve().parent.parent / "data"


def link_tree(source: Path, destination: Path) -> None:
    """`source`'s files hard-linked under `destination` (copied where links cannot be made): a copy
    that costs no bytes, for trees a test only reads. Never link from sample_traces/ into a tree a
    test writes to: a write through a link changes the sample."""

    def link_or_copy(from_path: str, to_path: str) -> None:
        try:
            os.link(from_path, to_path)
        except OSError:
            shutil.copy2(from_path, to_path)

    shutil.copytree(source, destination, copy_function=link_or_copy)


def _no_publish_target() -> PublishTarget:
    raise AssertionError("the steps through the rows publish nothing")


def stage_rows(
    store: TraceStore,
    staging: RunStaging,
    options: ExportOptions | None = None,
    batch_size: int = 7,
    sessions: bool = False,
    rows_per_part: int = DEFAULT_ROWS_PER_SHARD,
    progress: Progress = quiet,
) -> dict[str, Any]:
    """Listing -> scored -> rows as the assets run them (`run_staged_steps`), with the steps' default
    options and no Dagster: each step's result by its name. With `sessions` the rows step also writes
    session files (`staged_sessions(staging)`); rows go into parts of `rows_per_part` rows; the
    steps' progress lines go to `progress`."""
    ctx = ScopeContext(
        staging=staging,
        store=store,
        make_target=_no_publish_target,
        options=options or ExportOptions(),
        scan_options=ScanOptions(),
        policy=ScanPolicy(),
        card=CardSettings(),
        card_plots=False,
        batch_size=batch_size,
        max_rows_per_shard=rows_per_part,
        sessions=sessions,
        session_harness="",
        shrink_threshold=None,
        shrink_override="",
        progress=progress,
    )
    return run_staged_steps(ctx, through="last_episode_rows")


def run_steps(
    store: TraceStore,
    run_id: str,
    staging_root: Path,
    include_subagents: bool = False,
    batch_size: int = 7,
    options: ExportOptions | None = None,
    sessions: bool = False,
) -> tuple[list[dict[str, Any]], Coverage, list[dict[str, Any]]]:
    """Listing -> scored -> rows for one run; returns (rows, coverage, per-folder statuses).

    `options` defaults to ours, with subagent rows merged when `include_subagents`; with `sessions`
    the rows step also writes session files (`staged_sessions(staging)`)."""
    staging = RunStaging(staging_root, RunScope.from_key(run_id))
    options = options or ExportOptions(subagents="merged" if include_subagents else "none")
    coverage, _ = stage_rows(store, staging, options, batch_size, sessions)["last_episode_rows"]
    rows = [row for table in iter_rows(staging.require_rows()) for row in table.to_pylist()]
    statuses = pq.read_table(staging.statuses).to_pylist()
    return rows, coverage, statuses


def harbor_rows(path: Path, include_subagents: bool) -> list[dict[str, Any]]:
    """Rows Harbor's exporter made, as committed under data/, in this project's column set."""
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    if not include_subagents:
        rows = [{k: v for k, v in r.items() if k != "trace_source"} for r in rows if r["trace_source"] == "main"]
    return sorted(rows, key=lambda r: (r["trial_name"], r.get("trace_source", "")))


def comparable(rows: list[dict[str, Any]], run_id: str = "RUN") -> list[dict[str, Any]]:
    """Rows with run_id set to one value (it is the partition's, not Harbor's job id) and key order kept."""
    return [{**row, "run_id": run_id} for row in rows]


def load_published(folder: Path, cache_dir: Path, name: str | None = None):
    """`datasets.load_dataset` on a published run folder, with a cache of its own.

    `datasets` keys its cache on the data files' names and metadata, so two folders laid out
    alike can otherwise be served each other's cached rows.
    """
    import datasets

    return datasets.load_dataset(str(folder), name, split="train", cache_dir=str(cache_dir))
