"""Step 3's work that needs no order: trials' rows and session records from their fetched files.

`export_slice` runs in the rows step's worker processes (`runtime.process_pool`), or in the
step's own process for small runs; the step keeps what depends on order (session paths
claimed, statuses, writing). On a local root the workers read the trials' files themselves,
through the same confined reader as the store. So this module imports only pyarrow, `harbor`
and that reader: a worker starts with nothing else (no polars, no fsspec, no Dagster).

Answers are Arrow tables, which pickle as their buffers, and a few small values per trial.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from trace_assets.core.accounting import Exclusion, Reason
from trace_assets.harbor.options import ExportOptions
from trace_assets.harbor.result import TrialSummary
from trace_assets.harbor.rows import TrialExport, export_trial, rows_schema
from trace_assets.harbor.sessions import SessionSkip, SkippedSession, SlottedText, sessions_from_files
from trace_assets.harbor.trajectory import ParsedTrajectories
from trace_assets.store.confined import FolderReadError, read_files

STORE_SCHEMA = pa.schema(
    [
        ("trial_dir", pa.string()),
        ("path", pa.string()),  # in the dataset folder, e.g. sessions/3f/<trial>.jsonl
        ("trial_name", pa.string()),  # the header's, as the scan report names the texts
        ("task", pa.string()),
        ("skeleton", pa.string()),  # see SlottedText
        ("texts", pa.list_(pa.string())),
        ("in_rows", pa.list_(pa.bool_())),  # per text: the very string of a text of the trial's rows
    ]
)


@dataclass(frozen=True)
class SliceJob:
    """What a worker needs besides the trials: the same for every slice of a run."""

    run_id: str
    step: str | None
    options: ExportOptions
    sessions: bool  # make session records too
    harness: str
    text_columns: tuple[str, ...]  # the rows' plain-text columns the secret scan reads
    read_from: str | None = None  # a local scope folder: trials come with their keys, read here


@dataclass
class TrialWork:
    """One trial's share of a slice's answer."""

    trial_dir: str
    export: TrialExport  # its rows moved to the slice's table (`rows` says how many)
    rows: int = 0
    session_paths: list[str] = field(default_factory=list)
    skipped: list[SkippedSession] = field(default_factory=list)  # sessions it gets none of, and why


@dataclass
class SliceWork:
    """A slice's answer: per trial, in order; the rows of the trials that encoded in `rows`,
    their session records in `sessions` (a trial's records together, in order)."""

    trials: list[TrialWork]
    rows: pa.Table
    failed: dict[str, str]  # trial_dir -> why its rows could not be stored (none in `rows`)
    sessions: pa.Table
    unreadable: dict[str, OSError] = field(default_factory=dict)  # the store failed here: nothing else is set


TrialFiles = dict[str, bytes | Exclusion]  # key in the trial folder -> its bytes, or why it cannot be read


def export_slice(job: SliceJob, trials: list[tuple[str, dict[str, Any], TrialFiles | list[str]]]) -> SliceWork:
    """Each `(trial_dir, scored record, fetched files)`'s rows and session records; with
    `job.read_from`, each trial comes with the keys of its files instead, read here."""
    read: TrialFiles = {}
    if job.read_from is not None:
        wanted = [f"{trial_dir}/{key}" for trial_dir, _, keys in trials for key in keys]
        try:
            read = read_files(job.read_from, wanted)
        except FolderReadError as err:
            return SliceWork([], pa.table({}), {}, pa.table({}), unreadable={err.path: err.error})
    exports: list[tuple[str, list[dict[str, Any]]]] = []
    works: list[TrialWork] = []
    records: list[dict[str, Any]] = []
    for trial_dir, record, given in trials:
        files = given if isinstance(given, dict) else {key: read.pop(f"{trial_dir}/{key}") for key in given}
        work = _trial_work(trial_dir, record, files, job, records)
        exports.append((trial_dir, work.export.rows))
        work.export.rows = []
        works.append(work)
    table, failed = encode_per_trial(exports, rows_schema(job.options))
    return SliceWork(works, table, failed, pa.Table.from_pylist(records, schema=STORE_SCHEMA))


def _trial_work(
    trial_dir: str,
    summary_record: dict[str, Any],
    files: dict[str, bytes | Exclusion],
    job: SliceJob,
    records: list[dict[str, Any]],
) -> TrialWork:
    """One trial's rows (and session records, added to `records`); an unreadable file, or anything
    export raises, is the trial's exclusion. A session that cannot be made is named in the
    status detail, never the exclusion of a trial whose rows are good."""
    blobs: dict[str, bytes] = {}
    for key, blob in files.items():
        if isinstance(blob, Exclusion):
            return TrialWork(trial_dir, TrialExport(exclusion=blob))
        blobs[key] = blob
    parsed = ParsedTrajectories(blobs)  # each trajectory parsed once, for the rows and the sessions
    try:
        summary = summary_from_scored(summary_record)
        result = export_trial(summary, blobs, job.run_id, job.options, parsed)
    except Exception as err:  # a shape no rule foresaw: this trial's problem, not the run's
        detail = f"{type(err).__name__} while building rows from {', '.join(sorted(files))}: {err}"
        return TrialWork(trial_dir, TrialExport(exclusion=Exclusion(Reason.INVALID_TRAJECTORY, detail)))
    work = TrialWork(trial_dir, result, rows=len(result.rows))
    if job.sessions and result.exclusion is None:
        row_texts = _row_texts(result.rows, job.text_columns)
        try:
            sessions, work.skipped = sessions_from_files(summary, blobs, job.run_id, job.step, job.harness, parsed)
            made = [_record(trial_dir, s.path, s.header, s.slotted(), row_texts) for s in sessions]
        except Exception as err:  # a shape no rule foresaw: this trial's session, not its rows
            work.skipped = [SkippedSession(SessionSkip.UNCONVERTIBLE, f"{type(err).__name__}: {err}")]
        else:
            work.session_paths = [session.path for session in sessions]
            records.extend(made)
    return work


def _row_texts(rows: list[dict[str, Any]], text_columns: tuple[str, ...]) -> set[str]:
    """Every text of the rows the secret scan reads (see `scanner._texts`): message contents,
    instruction and verifier output where the rows have them."""
    texts = {message["content"] for row in rows for message in row["conversations"]}
    texts.update(row[column] for row in rows for column in text_columns if row.get(column) is not None)
    texts.discard(None)  # a message without content (null) is no text
    return texts


def _record(
    trial_dir: str, path: str, header: dict[str, Any], slotted: SlottedText, row_texts: Collection[str]
) -> dict[str, Any]:
    trial_name, task = header.get("trial_name"), header.get("task")
    return {
        "trial_dir": trial_dir,
        "path": path,
        "trial_name": trial_name if isinstance(trial_name, str) else None,
        "task": task if isinstance(task, str) else None,
        "skeleton": slotted.skeleton,
        "texts": slotted.texts,
        "in_rows": [text in row_texts for text in slotted.texts],
    }


def encode_per_trial(
    records: list[tuple[str, list[dict[str, Any]]]], schema: pa.Schema
) -> tuple[pa.Table, dict[str, str]]:
    """Each trial's records as one table; if the batch does not encode, each trial on its own,
    leaving out the trials that fail, with their error."""
    try:
        return pa.Table.from_pylist([r for _, rows in records for r in rows], schema=schema), {}
    except Exception:  # one trial's values; found below
        pass
    tables, failed = [], {}
    for trial_dir, rows in records:
        try:
            tables.append(pa.Table.from_pylist(rows, schema=schema))
        except Exception as err:
            failed[trial_dir] = f"{type(err).__name__}: {err}"
    return (pa.concat_tables(tables) if tables else schema.empty_table()), failed


def summary_from_scored(record: dict[str, Any]) -> TrialSummary:
    return TrialSummary(
        trial_name=record["result_trial_name"],
        task=record["task"],
        agent=record["agent"],
        model=record["model"],
        model_provider=record["model_provider"],
        started_at=record["started_at"],
        job_id=record["job_id"],
        reward=record["reward"],
        exception_type=record["exception_type"],
        result=record["result"],
        success=bool(record["success"]),
        reward_valid=record["reward_valid"],
        repaired=record["repaired"] or 0,
    )
