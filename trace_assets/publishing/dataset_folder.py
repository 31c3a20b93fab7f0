"""Lay out a scope's dataset folder: shards, card, coverage, trial statuses and the scan report."""

from __future__ import annotations

import json
import shutil
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from trace_assets.core.accounting import Coverage
from trace_assets.harbor.options import ExportOptions
from trace_assets.harbor.rows import MAIN_TRACE_SOURCE, TRACE_SOURCE_COLUMN
from trace_assets.harbor.sessions import SESSIONS_DIR
from trace_assets.publishing.card import (
    REWARD_PLOT,
    TURNS_PLOT,
    CardContext,
    Example,
    Subsets,
    card_title,
    dataset_card,
)
from trace_assets.publishing.card_facts import CardFacts, histogram, integer_histogram
from trace_assets.publishing.plots import bar_chart_svg, integer_label, range_label
from trace_assets.publishing.sessions_card import SESSIONS_CARD, sessions_card
from trace_assets.publishing.shards import ShardSet, rewrite_batch_rows, version_folder, write_shards
from trace_assets.publishing.trace_sources import Transform, data_dir, only_source, source_counts
from trace_assets.publishing.versions import history, version_entry, versions_json
from trace_assets.runtime.ahead import available_cores
from trace_assets.runtime.progress import Progress, quiet
from trace_assets.steps.parquet_layout import write_published_table
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
    workers: int | None = None,
) -> ShardSet:
    """The whole dataset folder in `out_dir`; the scan report carries what redaction replaced.

    `sessions` is the staged session files' folder, published under `sessions/<version>/` when given,
    with `sessions/README.md` declaring them (see `publishing.sessions_card`). `card`
    holds the card's facts, settings and version history (see `versions`), whose list is written
    as `versions.json` with this version last, and its plots when it asks for them. `step` (a step
    scope's step folder) is added to `trials.parquet` as a `step` column and named by the card.
    `progress` gets each phase's done/total: shards, session files, then the card. With `workers`
    (default: the cores available) > 1 the shards are written in a thread while the session files are (see `copy_sessions`):
    the same bytes, in the time of the longer of the two rather than of both.
    """
    options = options or ExportOptions()
    workers = available_cores() if workers is None else workers
    if out_dir.exists():
        shutil.rmtree(out_dir)
    out_dir.mkdir(parents=True)
    schema = rows.schema
    if options.subagents == "separate":
        schema = schema.remove(schema.get_field_index(TRACE_SOURCE_COLUMN))
    card = card or CardContext()
    # Rows and session files at once when there are two cores, unless redaction numbers new
    # tokens as it meets values (no scan record): then rows go first, as the scan read them.
    together = sessions is not None and workers > 1 and (redactor is None or redactor.scanned is not None)
    if together:
        progress = _serialized(progress)
    separate = options.subagents == "separate"  # rows filtered per source: not cut as the scan cut them
    rows_cut = None if separate else rewrite_batch_rows(max_rows_per_shard)
    redact_rows, redact_sessions = _redactions(redactor, rows_cut, serialized=together)

    def write_rows() -> tuple[ShardSet, Subsets]:
        # beside the session files, whose bar the terminal shows: one bar redraws its line
        bar = not together
        if separate:
            return _write_trace_sources(rows, out_dir, max_rows_per_shard, redact_rows, progress, bar)
        return write_shards(rows, out_dir, max_rows_per_shard, redact_rows, progress=progress, bar=bar), {}

    def write_sessions(folder: Path) -> SessionCounts:
        counts = copy_sessions(folder, out_dir, redact_sessions, progress, workers)
        counts = replace(counts, version=version_folder(out_dir / SESSIONS_DIR))
        (out_dir / SESSIONS_CARD).write_text(
            sessions_card(counts, card_title(coverage, card, step), card.settings.license)
        )
        return counts

    session_counts: SessionCounts | None = None
    if sessions is not None and together:
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="shards") as pool:
            rows_written = pool.submit(write_rows)  # pyarrow reads and writes with the GIL released
            session_counts = write_sessions(sessions)  # leaving the block waits for the rows' thread
        shards, subsets = rows_written.result()
    else:
        shards, subsets = write_rows()
        if sessions is not None:
            session_counts = write_sessions(sessions)
    if redactor is not None:
        scan_report = redactor.published_report(scan_report)
    statuses = pq.read_table(statuses_path)  # rewritten as the shards are (see parquet_layout)
    if step is not None:
        statuses = statuses.append_column("step", pa.array([step] * statuses.num_rows, pa.string()))
    write_published_table(statuses, out_dir / TRIALS_FILE)
    (out_dir / COVERAGE_FILE).write_text(json.dumps(coverage.as_dict(), indent=2) + "\n")
    (out_dir / SCAN_REPORT_FILE).write_text(json.dumps(scan_report, indent=2) + "\n")
    versions = history(card.earlier_versions, version_entry(coverage, card.facts, shards, options, card.published_at))
    (out_dir / VERSIONS_FILE).write_text(versions_json(versions))
    if card.plots:
        _write_plots(out_dir, card.facts)
    example = example_row(out_dir, shards, card.flagged_trials)
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


EXAMPLE_SEARCH_BATCH = 4096  # trial names read at a time while looking for the example row


def example_row(out_dir: Path, shards: ShardSet, flagged: frozenset[str] | None) -> Example | None:
    """The card's example: the first published row (after redaction: read back from its shard) whose
    trial is not `flagged`; its index counts the rows of the shards before it. Trial names are read
    first, a column alone; then the rows up to it in its row group, never every row's texts."""
    if not shards.num_examples:
        return None
    if flagged is None:
        return Example(None, withheld="flags_unknown")
    offset = 0
    for name in shards.files:
        parquet = pq.ParquetFile(out_dir / name, pre_buffer=False)
        position = 0
        for batch in parquet.iter_batches(EXAMPLE_SEARCH_BATCH, columns=["trial_name"], use_threads=False):
            clean = next((i for i, trial in enumerate(batch.column(0).to_pylist()) if trial not in flagged), None)
            if clean is not None:
                return Example(_row_at(parquet, position + clean), offset + position + clean)
            position += batch.num_rows
        offset += position
    return Example(None, withheld="every_trial_flagged")


def _row_at(parquet: pq.ParquetFile, position: int) -> dict[str, Any]:
    """The row at `position` of a Parquet file: a batch of its row group's rows up to it, no more."""
    for group in range(parquet.num_row_groups):
        rows = parquet.metadata.row_group(group).num_rows
        if position < rows:
            batches = parquet.iter_batches(position + 1, row_groups=[group], use_threads=False)
            return next(batches).slice(position, 1).to_pylist()[0]
        position -= rows
    raise IndexError(f"no row {position} in {parquet.metadata.num_rows} rows")


def _write_trace_sources(
    rows: RowParts,
    out_dir: Path,
    max_rows_per_shard: int,
    redact: Transform | None,
    progress: Progress = quiet,
    bar: bool = True,
) -> tuple[ShardSet, Subsets]:
    """`--subagents separate`: the main rows in `data/`, each subagent kind in `data/<kind>/`."""
    counts = source_counts(rows)
    shard_sets = {
        source: write_shards(
            rows,
            out_dir,
            max_rows_per_shard,
            only_source(source, redact),
            (data_dir(source), counts[source]),
            progress,
            bar,
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


def _redactions(
    redactor: Redactor | None, rows_batch: int | None, serialized: bool
) -> tuple[Transform | None, Transform | None]:
    """The redaction of the rows (cut as the scan cut them, `rows_batch` at a time, unless None)
    and of the session files; when `serialized`, one runs at a time (the redactor counts what it
    replaced, whichever thread calls it)."""
    if redactor is None:
        return None, None
    rows: Transform = redactor if rows_batch is None else redactor.cut_as_scanned("rows", rows_batch)
    sessions = redactor.cut_as_scanned("sessions", SCAN_BATCH_SESSIONS)
    if not serialized:
        return rows, sessions
    lock = threading.Lock()

    def one_at_a_time(redact: Transform) -> Transform:
        def locked(table: pa.Table) -> pa.Table:
            with lock:
                return redact(table)

        return locked

    return one_at_a_time(rows), one_at_a_time(sessions)


def _serialized(progress: Progress) -> Progress:
    """`progress` called from two threads, one line at a time."""
    lock = threading.Lock()

    def say(line: str) -> None:
        with lock:
            progress(line)

    return say


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
