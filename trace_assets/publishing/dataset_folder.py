"""Lay out a scope's dataset folder: shards, card, coverage, trial statuses and the scan report."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from trace_assets.accounting import Coverage
from trace_assets.harbor.options import ExportOptions
from trace_assets.harbor.rows import MAIN_TRACE_SOURCE, TRACE_SOURCE_COLUMN
from trace_assets.harbor.sessions import SESSIONS_DIR
from trace_assets.progress import Progress, quiet
from trace_assets.publishing.card import REWARD_PLOT, TURNS_PLOT, CardContext, Subsets, card_title, dataset_card
from trace_assets.publishing.card_facts import CardFacts, histogram, integer_histogram
from trace_assets.publishing.parquet_layout import write_published_table
from trace_assets.publishing.plots import bar_chart_svg, integer_label, range_label
from trace_assets.publishing.sessions_card import SESSIONS_CARD, sessions_card
from trace_assets.publishing.shards import ShardSet, rewrite_batch_rows, version_folder, write_shards
from trace_assets.publishing.trace_sources import data_dir, only_source, source_counts
from trace_assets.publishing.versions import history, version_entry
from trace_assets.steps.scan import Redactor
from trace_assets.steps.sessions import SCAN_BATCH_SESSIONS, SessionCounts, copy_sessions
from trace_assets.steps.staged_rows import RowParts

CARD_FILE = "README.md"
COVERAGE_FILE = "coverage.json"
TRIALS_FILE = "trials.parquet"
SCAN_REPORT_FILE = "secret_scan.json"
VERSIONS_FILE = "versions.json"


def build_run_folder(
    out_dir: Path,
    rows: RowParts,
    statuses_path: Path,
    coverage: Coverage,
    scan_report: dict[str, Any],
    max_rows_per_shard: int,
    redactor: Redactor | None = None,
    options: ExportOptions | None = None,
    sessions: Path | None = None,
    card: CardContext | None = None,
    source_prefix: str = "",
    step: str | None = None,
    progress: Progress = quiet,
) -> ShardSet:
    """The whole dataset folder in `out_dir`; the scan report carries what redaction replaced.

    `sessions` is the staged session files' folder, published under `sessions/<version>/` when given,
    with `sessions/README.md` declaring them (see `publishing.sessions_card`). `card`
    holds the card's facts, settings and version history (see `versions`), whose list is written
    as `versions.json` with this version last, and its plots when it asks for them. `step` (a step
    scope's step folder) is added to `trials.parquet` as a `step` column and named by the card.
    `progress` gets each phase's done/total: shards, session files, then the card.
    """
    options = options or ExportOptions()
    if out_dir.exists():
        shutil.rmtree(out_dir)
    out_dir.mkdir(parents=True)
    schema = rows.schema
    subsets: Subsets = {}
    if options.subagents == "separate":
        shards, subsets = _write_trace_sources(rows, out_dir, max_rows_per_shard, redactor, progress)
        schema = schema.remove(schema.get_field_index(TRACE_SOURCE_COLUMN))
    else:
        transform = redactor.cut_as_scanned("rows", rewrite_batch_rows(max_rows_per_shard)) if redactor else None
        shards = write_shards(rows, out_dir, max_rows_per_shard, transform, progress=progress)
    session_counts: SessionCounts | None = None
    card = card or CardContext()
    if sessions is not None:
        redact = redactor.cut_as_scanned("sessions", SCAN_BATCH_SESSIONS) if redactor else None
        session_counts = copy_sessions(sessions, out_dir, redact, progress)
        session_counts = replace(session_counts, version=version_folder(out_dir / SESSIONS_DIR))
        (out_dir / SESSIONS_CARD).write_text(
            sessions_card(session_counts, card_title(coverage, card, step), card.settings.license)
        )
    if redactor is not None:
        scan_report = redactor.published_report(scan_report)
    statuses = pq.read_table(statuses_path)  # rewritten as the shards are (see parquet_layout)
    if step is not None:
        statuses = statuses.append_column("step", pa.array([step] * statuses.num_rows, pa.string()))
    write_published_table(statuses, out_dir / TRIALS_FILE)
    (out_dir / COVERAGE_FILE).write_text(json.dumps(coverage.as_dict(), indent=2) + "\n")
    (out_dir / SCAN_REPORT_FILE).write_text(json.dumps(scan_report, indent=2) + "\n")
    versions = history(card.earlier_versions, version_entry(coverage, card.facts, shards, options, card.published_at))
    (out_dir / VERSIONS_FILE).write_text(json.dumps({"versions": versions}, indent=2) + "\n")
    if card.plots:
        _write_plots(out_dir, card.facts)
    example = first_row(out_dir, shards)
    text = dataset_card(
        coverage,
        scan_report,
        shards,
        schema,
        options=options,
        subsets=subsets,
        sessions=session_counts,
        context=card,
        source_prefix=source_prefix,
        versions=versions,
        step=step,
        example=example,
    )
    (out_dir / CARD_FILE).write_text(text)
    progress(f"card: {CARD_FILE}, {VERSIONS_FILE}, {COVERAGE_FILE}, {TRIALS_FILE} and {SCAN_REPORT_FILE} written")
    return shards


def first_row(out_dir: Path, shards: ShardSet) -> dict[str, Any] | None:
    """The first published row (after redaction: read back from the first shard), for the card's
    example; read a batch of one row, not the whole row group."""
    if not shards.num_examples:
        return None
    parquet = pq.ParquetFile(out_dir / shards.files[0], pre_buffer=False)
    return next(parquet.iter_batches(batch_size=1, use_threads=False)).to_pylist()[0]


def _write_trace_sources(
    rows: RowParts, out_dir: Path, max_rows_per_shard: int, redactor: Redactor | None, progress: Progress = quiet
) -> tuple[ShardSet, Subsets]:
    """`--subagents separate`: the main rows in `data/`, each subagent kind in `data/<kind>/`."""
    counts = source_counts(rows)
    shard_sets = {
        source: write_shards(
            rows,
            out_dir,
            max_rows_per_shard,
            only_source(source, redactor),
            (data_dir(source), counts[source]),
            progress,
        )
        for source in sorted(counts)
    }
    schema = rows.schema.remove(rows.schema.get_field_index(TRACE_SOURCE_COLUMN))
    subsets = {
        source: (data_dir(source), schema, shards)
        for source, shards in shard_sets.items()
        if source != MAIN_TRACE_SOURCE
    }
    return shard_sets[MAIN_TRACE_SOURCE], subsets


def _write_plots(out_dir: Path, facts: CardFacts) -> None:
    """The reward histogram and the assistant turns per row, as the card's two images."""
    reward_bins = histogram(facts.rewards)
    width = (reward_bins[0][1] - reward_bins[0][0]) if reward_bins else 0.0
    rewards = [(range_label(low, high, width), count) for low, high, count in reward_bins]
    turns = [(integer_label(low, high), count) for low, high, count in integer_histogram(facts.turns)]
    for name, title, bars in (
        (REWARD_PLOT, "reward (exported trials)", rewards),
        (TURNS_PLOT, "assistant turns per row", turns),
    ):
        (out_dir / name).parent.mkdir(exist_ok=True)
        (out_dir / name).write_text(bar_chart_svg(title, bars), encoding="utf-8")
