"""Step 3, `last_episode_rows`: each scored trial's rows and every trial folder's status.

Streams trials in batches from the listing and scored files into staged row parts, so memory
holds one batch of trial content at a time, whatever the size of the run; batches are cut by the
listed bytes of the trials' files as well as by their number, so a run of very large
trajectories stays within the store's `batch_bytes`.

Per-trial isolation: a file that cannot be read, anything building one trial's rows raises, or
rows Arrow cannot store, become that trial's exclusion with the file and problem in its detail;
entries the listing skipped without excluding the trial are counted (`skipped`) and named.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa

from trace_assets.accounting import SCORED, Coverage, Exclusion, Reason, TrialStatus
from trace_assets.ahead import mapped_ahead
from trace_assets.harbor.options import ExportOptions
from trace_assets.harbor.rows import MAIN_TRACE_SOURCE, TRACE_SOURCE_COLUMN, TrialExport, export_trial, rows_schema
from trace_assets.harbor.trajectory import ParsedTrajectories
from trace_assets.harbor.trial_files import RESULT_JSON, needed_files
from trace_assets.progress import Progress, ProgressReporter, terminal
from trace_assets.scope import RunScope
from trace_assets.secret_scan.scanner import PLAIN_TEXT_COLUMNS
from trace_assets.steps.incremental import PreviousRows, fingerprint, listed_objects, previous_records
from trace_assets.steps.listing import ListedTrial, bounded_batches, iter_listing
from trace_assets.steps.scoring import StepStats, encode_per_trial, rows_salt, summary_from_scored
from trace_assets.steps.sessions import SessionWriter
from trace_assets.steps.staged_rows import staged_row_parts, trial_rows_digest
from trace_assets.steps.staging import RunStaging, open_parquet, staged_writers, write_json_atomically
from trace_assets.store.trace_store import TraceStore

DEFAULT_ROWS_PER_SHARD = 2000

STATUS_SCHEMA = pa.schema(
    [
        ("trial_dir", pa.string()),
        ("trial_name", pa.string()),
        ("task", pa.string()),
        ("status", pa.string()),  # a TrialStatus
        ("reason", pa.string()),
        ("detail", pa.string()),
        ("rows", pa.int64()),
        ("objects", pa.int64()),
        ("bytes", pa.int64()),
        ("source_fingerprint", pa.string()),  # of the objects the status was made from
        ("skipped", pa.int64()),  # entries the listing did not read (links, FIFOs, ...), see detail
        ("repaired", pa.int64()),  # lone surrogates replaced with U+FFFD in the trial's files
    ]
)


def _iter_scored(path: Path, batch_size: int) -> Iterator[list[dict[str, Any]]]:
    for batch in open_parquet(path).iter_batches(batch_size=batch_size, use_threads=False):
        yield batch.to_pylist()


def export_rows(
    store: TraceStore,
    staging: RunStaging,
    options: ExportOptions,
    batch_size: int,
    progress: Progress,
    rows_per_part: int = DEFAULT_ROWS_PER_SHARD,
    sessions: SessionWriter | None = None,
) -> tuple[Coverage, StepStats]:
    """Each scored trial's rows and every folder's status; unchanged trials come from the last run.

    Rows go into parts of `rows_per_part` rows, the published shard size, so publishing can
    copy them. With `sessions`, each exported trial's session files are written from the same bytes.
    """
    listing_path = staging.require(staging.listing, "raw_trial_listing")
    scored_path = staging.require(staging.scored, "scored_trials")
    schema = rows_schema(options)
    previous_statuses = previous_records(staging.statuses, "source_fingerprint")
    previous_rows = PreviousRows(staging.rows, previous_statuses, schema)
    if not previous_rows.available:
        previous_statuses = {}
    coverage = Coverage(run_id=staging.scope.key)
    stats = StepStats()
    excluded: Counter = Counter()
    trial_rows: list[tuple[str, int]] = []
    total = open_parquet(listing_path).metadata.num_rows
    reporter = ProgressReporter("last_episode_rows", "trials", total, progress, bar=terminal())
    try:
        with (
            staged_row_parts(staging.rows, schema, rows_per_part) as rows_out,
            staged_writers((staging.statuses, STATUS_SCHEMA)) as [status_out],
        ):
            listed = (trial for trials in iter_listing(listing_path, batch_size) for trial in trials)
            records = (record for scored in _iter_scored(scored_path, batch_size) for record in scored)
            batches = bounded_batches(
                zip(listed, records, strict=True), _held_bytes, batch_size, store.fetch_batch_bytes
            )
            planned = (_plan_batch(staging.scope, batch, options, previous_statuses, sessions) for batch in batches)
            for plan, blobs in mapped_ahead(planned, lambda p: store.fetch(staging.scope, p.keys), store.fetch_ahead):
                table, statuses = _export_batch(
                    staging.scope, plan, blobs, options, previous_statuses, previous_rows, stats, sessions
                )
                for status in statuses:
                    trial_rows.append((status["trial_dir"], status["rows"]))
                    if status["status"] == TrialStatus.EXPORTED:
                        coverage.exported += 1
                    else:
                        excluded[status["reason"]] += 1
                coverage.trial_dirs += len(statuses)
                coverage.rows += table.num_rows
                if options.include_subagents:
                    coverage.subagent_rows += table.num_rows - table.column(TRACE_SOURCE_COLUMN).to_pylist().count(
                        MAIN_TRACE_SOURCE
                    )
                rows_out.write(table)
                status_out.write_table(pa.Table.from_pylist(statuses, schema=STATUS_SCHEMA))
                if sessions is not None:
                    sessions.flush()
                reporter.advance(len(statuses), f"{coverage.exported} exported, {stats.cached} unchanged")
            reporter.finish()
            rows_out.statuses_digest = trial_rows_digest(trial_rows)
            if sessions is not None:
                counts = sessions.close()
                coverage.sessions, coverage.subagent_sessions = counts.sessions, counts.subagent_sessions
                coverage.sessions_skipped = counts.skipped
    except BaseException:
        if sessions is not None:
            sessions.discard()  # the store of the run before stays
        raise
    coverage.excluded = dict(excluded)
    coverage.unscored = excluded.get(Reason.NO_RESULT_JSON.value, 0)
    coverage.scored = coverage.trial_dirs - coverage.unscored
    write_json_atomically(staging.coverage, coverage.as_dict())
    return coverage, stats


def _held_bytes(item: tuple[ListedTrial, dict[str, Any]]) -> int:
    trial, record = item
    return trial.row_source_bytes if record["status"] == SCORED else 0


def _storable(text: str | None) -> str | None:
    """Text any encoder takes: a detail can quote what a hostile file held."""
    if text is None or text.isascii():
        return text
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _exported(
    summary_record: dict[str, Any],
    files: dict[str, bytes | Exclusion],
    scope: RunScope,
    options: ExportOptions,
    sessions: SessionWriter | None,
    trial_dir: str,
) -> TrialExport:
    """One trial's rows (and session files); an unreadable file, or anything export raises, is the
    trial's exclusion. A session that cannot be written is named in the status detail, never the
    exclusion of a trial whose rows are good."""
    blobs: dict[str, bytes] = {}
    for key, blob in files.items():
        if isinstance(blob, Exclusion):
            return TrialExport(exclusion=blob)
        blobs[key] = blob
    parsed = ParsedTrajectories(blobs)  # each trajectory parsed once, for the rows and the sessions
    try:
        summary = summary_from_scored(summary_record)
        result = export_trial(summary, blobs, scope.run_id, options, parsed)
    except Exception as err:  # a shape no rule foresaw: this trial's problem, not the run's
        detail = f"{type(err).__name__} while building rows from {', '.join(sorted(files))}: {err}"
        return TrialExport(exclusion=Exclusion(Reason.INVALID_TRAJECTORY, detail))
    if sessions is not None and result.exclusion is None:
        skipped = sessions.write(trial_dir, summary, blobs, scope, parsed, _row_texts(result.rows))
        result.notes.extend(session.note for session in skipped)
    return result


def _row_texts(rows: list[dict[str, Any]]) -> set[str]:
    """Every text of the rows the secret scan reads (see `scanner._texts`): message contents,
    instruction and verifier output where the rows have them."""
    texts = {message["content"] for row in rows for message in row["conversations"]}
    texts.update(row[column] for row in rows for column in PLAIN_TEXT_COLUMNS if row.get(column) is not None)
    texts.discard(None)  # a message without content (null) is no text
    return texts


def _repaired_note(repaired: int) -> str | None:
    return f"{repaired} lone surrogate(s) replaced with U+FFFD" if repaired else None


@dataclass(frozen=True)
class _Batch:
    """Trials with their scored records, and which objects must be read, decided before fetching."""

    trials: list[ListedTrial]
    scored: list[dict[str, Any]]
    wanted: dict[str, list[str]]  # trial_dir -> keys to read (trials not taken from the cache)
    sources: dict[str, str]  # trial_dir -> fingerprint of the objects its status comes from

    @property
    def keys(self) -> list[str]:
        return [f"{trial_dir}/{key}" for trial_dir, keys in self.wanted.items() for key in keys]


def _plan_batch(
    scope: RunScope,
    batch: list[tuple[ListedTrial, dict[str, Any]]],
    options: ExportOptions,
    previous_statuses: dict[str, dict[str, Any]],
    sessions: SessionWriter | None,
) -> _Batch:
    trials = [trial for trial, _ in batch]
    scored = [record for _, record in batch]
    wanted: dict[str, list[str]] = {}
    sources: dict[str, str] = {}
    for trial, record in zip(trials, scored):
        if record["trial_dir"] != trial.trial_dir:
            raise RuntimeError(f"scored_trials is out of step with the listing at {trial.trial_dir}: re-materialize it")
        reads_subagents = options.include_subagents or sessions is not None
        keys = needed_files(trial.objects, reads_subagents) if record["status"] == SCORED else []
        sources[trial.trial_dir] = fingerprint(
            listed_objects(trial, [*keys, RESULT_JSON]),
            options.include_subagents,
            scope.run_id,  # the rows' run_id column: Harbor's run, a step scope's run
            *options.cache_salt(),
            *trial.skipped,
            *rows_salt(record),
        )
        previous = previous_statuses.get(trial.trial_dir, {})
        unchanged = previous.get("source_fingerprint") == sources[trial.trial_dir]
        if sessions is not None and previous.get("status") == TrialStatus.EXPORTED:
            unchanged = unchanged and sessions.has(trial.trial_dir)
        if record["status"] == SCORED and not unchanged:
            wanted[trial.trial_dir] = keys
    return _Batch(trials, scored, wanted, sources)


def _export_batch(
    scope: RunScope,
    plan: _Batch,
    blobs: dict[str, bytes | Exclusion],
    options: ExportOptions,
    previous_statuses: dict[str, dict[str, Any]],
    previous_rows: PreviousRows,
    stats: StepStats,
    sessions: SessionWriter | None = None,
) -> tuple[pa.Table, list[dict[str, Any]]]:
    trials, scored, wanted, sources = plan.trials, plan.scored, plan.wanted, plan.sources
    rows: list[tuple[str, list[dict[str, Any]]]] = []
    statuses: list[dict[str, Any]] = []
    for trial, record in zip(trials, scored):
        earlier_rows = previous_rows.take(trial)
        status = {
            "trial_dir": trial.trial_dir,
            "trial_name": trial.trial_name,
            "task": record["task"],
            "objects": trial.object_count,
            "bytes": trial.total_bytes,
            "rows": 0,
            "source_fingerprint": sources[trial.trial_dir],
            "skipped": len(trial.skipped),
            "repaired": record["repaired"] or 0,
        }
        if trial.trial_dir in wanted:
            files = {key: blobs.pop(f"{trial.trial_dir}/{key}") for key in wanted[trial.trial_dir]}
            result = _exported(record, files, scope, options, sessions, trial.trial_dir)
            del files
            reason = result.exclusion.reason.value if result.exclusion else None
            status.update(
                status=TrialStatus.EXCLUDED.value if reason else TrialStatus.EXPORTED.value,
                reason=reason,
                detail=result.detail or None,
                rows=len(result.rows),
                repaired=status["repaired"] + result.repaired,
            )
            rows.append((trial.trial_dir, result.rows))
            stats.reread += 1
        elif record["status"] == SCORED:
            cached = previous_statuses[trial.trial_dir]
            if len(earlier_rows) != cached["rows"]:
                raise RuntimeError(
                    f"cached rows of {trial.trial_dir} are incomplete: delete {scope.key}'s staging folder"
                )
            status.update({name: cached[name] for name in ("status", "reason", "detail", "rows", "repaired")})
            rows.append((trial.trial_dir, earlier_rows))
            stats.cached += 1
            if sessions is not None and cached["status"] == TrialStatus.EXPORTED:
                taken = sessions.keep(trial.trial_dir)
                if taken:
                    status["detail"] = "; ".join(filter(None, [status["detail"], *(s.note for s in taken)]))
        else:
            status.update(status=TrialStatus.EXCLUDED.value, reason=record["status"], detail=record["detail"])
        fresh = trial.trial_dir in wanted or record["status"] != SCORED  # else all came from the cache
        if fresh:
            notes = [status["detail"], _repaired_note(status["repaired"])]
            if trial.blocked() is None:
                notes.append(trial.skipped_note())
            status["detail"] = "; ".join(filter(None, notes)) or None
        status["detail"] = _storable(status["detail"])
        statuses.append(status)

    table, failed = encode_per_trial(rows, rows_schema(options))
    for status in statuses:
        if status["trial_dir"] in failed:
            detail = f"rows hold values that cannot be stored: {failed[status['trial_dir']]}"
            status.update(status=TrialStatus.EXCLUDED.value, reason=Reason.INVALID_TRAJECTORY.value, rows=0)
            status["detail"] = _storable(detail)
            if sessions is not None:
                sessions.drop(status["trial_dir"])
    return table, statuses
