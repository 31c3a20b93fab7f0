"""Step 3, `last_episode_rows`: each scored trial's rows and every trial folder's status.

Streams trials in batches from the listing and scored files into staged row parts, so memory
holds one batch of trial content at a time, whatever the size of the run.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa

from trace_assets.accounting import SCORED, Coverage, Reason, TrialStatus
from trace_assets.harbor.options import ExportOptions
from trace_assets.harbor.rows import MAIN_TRACE_SOURCE, export_trial, rows_schema
from trace_assets.harbor.trial_files import RESULT_JSON, needed_files
from trace_assets.scope import RunScope
from trace_assets.steps.incremental import PreviousRows, fingerprint, listed_objects, previous_records
from trace_assets.steps.listing import ListedTrial, iter_listing
from trace_assets.steps.scoring import Progress, StepStats, summary_from_scored
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
    with (
        staged_row_parts(staging.rows, schema, rows_per_part) as rows_out,
        staged_writers((staging.statuses, STATUS_SCHEMA)) as [status_out],
    ):
        for trials, scored in zip(
            iter_listing(listing_path, batch_size), _iter_scored(scored_path, batch_size), strict=True
        ):
            rows, statuses = _export_batch(
                store, staging.scope, trials, scored, options, previous_statuses, previous_rows, stats, sessions
            )
            for status in statuses:
                trial_rows.append((status["trial_dir"], status["rows"]))
                if status["status"] == TrialStatus.EXPORTED:
                    coverage.exported += 1
                else:
                    excluded[status["reason"]] += 1
            coverage.trial_dirs += len(statuses)
            coverage.rows += len(rows)
            coverage.subagent_rows += sum(r.get("trace_source", MAIN_TRACE_SOURCE) != MAIN_TRACE_SOURCE for r in rows)
            rows_out.write(pa.Table.from_pylist(rows, schema=schema))
            status_out.write_table(pa.Table.from_pylist(statuses, schema=STATUS_SCHEMA))
            progress(
                f"last_episode_rows: {coverage.trial_dirs} trial folders, {coverage.exported} exported, "
                f"{stats.cached} unchanged"
            )
        rows_out.statuses_digest = trial_rows_digest(trial_rows)
        if sessions is not None:
            counts = sessions.close()
            coverage.sessions, coverage.subagent_sessions = counts.sessions, counts.subagent_sessions
    coverage.excluded = dict(excluded)
    coverage.unscored = excluded.get(Reason.NO_RESULT_JSON.value, 0)
    coverage.scored = coverage.trial_dirs - coverage.unscored
    write_json_atomically(staging.coverage, coverage.as_dict())
    return coverage, stats


def _export_batch(
    store: TraceStore,
    scope: RunScope,
    trials: list[ListedTrial],
    scored: list[dict[str, Any]],
    options: ExportOptions,
    previous_statuses: dict[str, dict[str, Any]],
    previous_rows: PreviousRows,
    stats: StepStats,
    sessions: SessionWriter | None = None,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    wanted: dict[str, list[str]] = {}
    sources: dict[str, str] = {}
    for trial, record in zip(trials, scored):
        if record["trial_dir"] != trial.trial_dir:
            raise RuntimeError(f"scored_trials is out of step with the listing at {trial.trial_dir}: re-materialize it")
        keys = (
            needed_files(trial.objects, options.include_subagents or sessions is not None)
            if record["status"] == SCORED
            else []
        )
        sources[trial.trial_dir] = fingerprint(
            listed_objects(trial, [*keys, RESULT_JSON]), options.include_subagents, scope.key, *options.cache_salt()
        )
        unchanged = previous_statuses.get(trial.trial_dir, {}).get("source_fingerprint") == sources[trial.trial_dir]
        if sessions is not None and previous_statuses.get(trial.trial_dir, {}).get("status") == TrialStatus.EXPORTED:
            unchanged = unchanged and sessions.has(trial.trial_dir)
        if record["status"] == SCORED and not unchanged:
            wanted[trial.trial_dir] = keys
    blobs = store.fetch(scope, [f"{d}/{key}" for d, keys in wanted.items() for key in keys])

    rows: list[dict[str, Any]] = []
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
        }
        if record["status"] != SCORED:
            status.update(status=TrialStatus.EXCLUDED.value, reason=record["status"], detail=record["detail"])
        elif trial.trial_dir not in wanted:
            cached = previous_statuses[trial.trial_dir]
            status.update(
                status=cached["status"], reason=cached["reason"], detail=cached["detail"], rows=cached["rows"]
            )
            if len(earlier_rows) != cached["rows"]:
                raise RuntimeError(
                    f"cached rows of {trial.trial_dir} are incomplete: delete {scope.key}'s staging folder"
                )
            rows.extend(earlier_rows)
            stats.cached += 1
            if sessions is not None and cached["status"] == TrialStatus.EXPORTED:
                sessions.keep(trial.trial_dir)
        else:
            files = {key: blobs[f"{trial.trial_dir}/{key}"] for key in wanted[trial.trial_dir]}
            summary = summary_from_scored(record)
            result = export_trial(summary, files, scope.key, options)
            if result.exclusion:
                status.update(status=TrialStatus.EXCLUDED.value, reason=result.exclusion.reason.value)
            else:
                status.update(status=TrialStatus.EXPORTED.value, reason=None)
                if sessions is not None:
                    sessions.write(trial.trial_dir, summary, files, scope.key)
            status.update(detail=result.detail or None, rows=len(result.rows))
            rows.extend(result.rows)
            stats.reread += 1
        statuses.append(status)
    return rows, statuses
