"""Step 3, `last_episode_rows`: each scored trial's rows and every trial folder's status.

Streams trials in batches from the listing and scored files into staged row parts, so memory
holds one batch of trial content at a time, whatever the size of the run; batches are cut by the
listed bytes of the trials' files as well as by their number, so a run of very large
trajectories stays within the store's `batch_bytes`.

Trials' rows and session records are built in worker processes on larger runs (`trial_rows`,
`row_workers`); claiming session paths, statuses and every write stay in this process, in order.

Per-trial isolation: a file that cannot be read, anything building one trial's rows raises, or
rows Arrow cannot store, become that trial's exclusion with the file and problem in its detail;
entries the listing skipped without excluding the trial are counted (`skipped`) and named.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Generator, Iterable, Iterator
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa

from trace_assets.core.accounting import SCORED, Coverage, Reason, TrialStatus
from trace_assets.core.defaults import DEFAULT_ROWS_PER_SHARD
from trace_assets.core.scope import RunScope
from trace_assets.harbor.options import ExportOptions
from trace_assets.harbor.rows import MAIN_TRACE_SOURCE, TRACE_SOURCE_COLUMN, rows_schema
from trace_assets.harbor.trial_files import RESULT_JSON, needed_files
from trace_assets.runtime.ahead import available_cores, mapped_ahead
from trace_assets.runtime.process_pool import WorkerError, ordered_map
from trace_assets.runtime.progress import Progress, ProgressReporter, terminal
from trace_assets.secret_scan.scanner import PLAIN_TEXT_COLUMNS
from trace_assets.steps.incremental import PreviousRows, fingerprint, listed_objects, previous_records
from trace_assets.steps.listing import ListedTrial, bounded_batches, iter_listing
from trace_assets.steps.scoring import StepStats, rows_salt
from trace_assets.steps.sessions import SessionWriter
from trace_assets.steps.staged_rows import staged_row_parts, trial_rows_digest
from trace_assets.steps.staging import RunStaging, open_parquet, staged_writers, write_json_atomically
from trace_assets.steps.trial_rows import SliceJob, SliceWork, TrialFiles, TrialWork, export_slice
from trace_assets.store.trace_store import FetchError, TraceStore

PARALLEL_ROWS_MIN_TRIALS = 10_000  # measured: 2,000 trials 1.25x slower in workers, 6,000 even, 22,047 0.87x

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
    workers: int | None = None,
) -> tuple[Coverage, StepStats]:
    """Each scored trial's rows and every folder's status; unchanged trials come from the last run.

    Rows go into parts of `rows_per_part` rows, the published shard size, so publishing can
    copy them. With `sessions`, each exported trial's session files are written from the same bytes.
    Trials are exported in `workers` processes (default: `row_workers`), each batch split
    between them; everything that depends on order stays here (see `_export_batch`).
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
            count = row_workers(total) if workers is None else workers
            # workers read a local root's files themselves: their bytes never cross a pipe
            read_from = store.local_folder(staging.scope) if count > 1 else None
            fetched: Iterator[tuple[_Batch, TrialFiles | None]]
            if read_from is None:
                fetched = mapped_ahead(planned, lambda p: store.fetch(staging.scope, p.keys), store.fetch_ahead)
            else:
                fetched = ((plan, None) for plan in planned)
            job = SliceJob(
                staging.scope.run_id,
                staging.scope.step,
                options,
                sessions is not None,
                sessions.harness if sessions is not None else "",
                PLAIN_TEXT_COLUMNS,
                read_from,
            )
            sent: deque[_Batch] = deque()  # the batch of each slice sent and not yet answered
            # one batch in the workers (a slice each) while the next is fetched: about the bytes
            # one process holds, which the store's batch_bytes bounds; workers that read for
            # themselves are sent their next slice ahead, which is only its keys
            ahead = 0 if read_from is None else 1
            answers = ordered_map(export_slice, _slice_jobs(fetched, job, count, sent), count, ahead=ahead)
            for plan, works in _batch_answers(answers, sent, staging.scope):
                table, statuses = _export_batch(
                    staging.scope, plan, works, schema, previous_statuses, previous_rows, stats, sessions
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
                status_table = pa.Table.from_pylist(statuses, schema=STATUS_SCHEMA)
                rows_out.write(table)
                status_out.write_table(status_table)
                if sessions is not None:
                    sessions.write_batch(sessions.take_batch())
                # of the trials done so far: `cached` counts excluded ones too, so it may exceed `exported`
                done = f"{coverage.exported} exported, {sum(excluded.values())} excluded"
                reporter.advance(len(statuses), f"{done}, of which {stats.cached} unchanged since the last run")
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


def row_workers(trials: int) -> int:
    """Processes for a run of `trials` listed trials: every available core, but one (this process)
    for a run too small to repay starting the others."""
    cores = available_cores()
    return cores if cores > 1 and trials >= PARALLEL_ROWS_MIN_TRIALS else 1


def _slice_jobs(
    fetched: Iterable[tuple[_Batch, TrialFiles | None]], job: SliceJob, count: int, sent: deque[_Batch]
) -> Iterator[tuple[tuple[_Batch, bool], tuple[SliceJob, list[Any]]]]:
    """Each batch's trials to read, in `count` slices of about equal bytes (one per worker; some may
    be empty), each `((batch, last slice of it), (job, trials))`, a trial with its fetched files, or
    with its keys where the batch comes unfetched (None: the workers read them); `sent` gets the
    batch of each slice as it is drawn."""
    for plan, blobs in fetched:
        slices: list[list[Any]] = [[] for _ in range(max(1, count))]
        sizes = {trial.trial_dir: _wanted_bytes(trial, plan.wanted, blobs) for trial in plan.trials}
        total, before = sum(sizes.values()), 0
        for trial, record in zip(plan.trials, plan.scored):
            if trial.trial_dir in plan.wanted:
                keys = plan.wanted[trial.trial_dir]
                files = keys if blobs is None else {key: blobs.pop(f"{trial.trial_dir}/{key}") for key in keys}
                slices[before * len(slices) // total if total else 0].append((trial.trial_dir, record, files))
                before += sizes[trial.trial_dir]
        del blobs
        for index, trials in enumerate(slices):
            sent.append(plan)
            yield (plan, index == len(slices) - 1), (job, trials)


def _wanted_bytes(trial: ListedTrial, wanted: dict[str, list[str]], blobs: TrialFiles | None) -> int:
    """The bytes of the files to read of a trial: as fetched, else as listed."""
    keys = wanted.get(trial.trial_dir, [])
    if blobs is None:
        return sum(trial.objects[key].size for key in keys if key in trial.objects)
    return sum(len(blob) for key in keys if isinstance(blob := blobs[f"{trial.trial_dir}/{key}"], bytes))


def _batch_answers(
    answers: Generator[tuple[tuple[_Batch, bool], SliceWork]], sent: deque[_Batch], scope: RunScope
) -> Iterator[tuple[_Batch, list[SliceWork]]]:
    """Each batch with its slices' answers; a worker that dies or fails names the run and the batch."""
    works: list[SliceWork] = []
    with closing(answers):  # workers still busy are ended when the step stops early
        while True:
            try:
                answer = next(answers, None)
            except WorkerError as err:
                first = sent[0].trials[0].trial_dir
                raise RuntimeError(
                    f"run {scope.key!r}: a worker process failed exporting the batch from {first}: {err}"
                ) from err
            if answer is None:
                return
            sent.popleft()
            (plan, last), work = answer
            if work.unreadable:
                raise FetchError(scope.key, work.unreadable)
            works.append(work)
            if last:
                yield plan, works
                works = []


def _fresh(works: list[SliceWork]) -> Iterator[tuple[TrialWork, pa.Table | None, pa.Table]]:
    """Each read trial's work, in order, with its rows (None when they could not be stored) and
    its session records, both slices of its slice's tables."""
    for slice_work in works:
        rows_at = sessions_at = 0
        for work in slice_work.trials:
            rows = None
            if work.trial_dir not in slice_work.failed:
                rows = slice_work.rows.slice(rows_at, work.rows)
                rows_at += work.rows
            yield work, rows, slice_work.sessions.slice(sessions_at, len(work.session_paths))
            sessions_at += len(work.session_paths)


def _export_batch(
    scope: RunScope,
    plan: _Batch,
    works: list[SliceWork],
    schema: pa.Schema,
    previous_statuses: dict[str, dict[str, Any]],
    previous_rows: PreviousRows,
    stats: StepStats,
    sessions: SessionWriter | None = None,
) -> tuple[pa.Table, list[dict[str, Any]]]:
    """The batch's rows and statuses from its slices' answers, in order: session paths are claimed
    here, trial by trial, as are the unchanged trials' rows and sessions of the run before."""
    trials, scored, wanted, sources = plan.trials, plan.scored, plan.wanted, plan.sources
    fresh = _fresh(works)
    rows: list[tuple[str, pa.Table | list[dict[str, Any]] | None]] = []  # None: rows that cannot be stored
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
            work, trial_rows, records = next(fresh)
            result = work.export
            if sessions is not None and result.exclusion is None:
                skipped = sessions.add(trial.trial_dir, work.session_paths, work.skipped, records)
                result.notes.extend(session.note for session in skipped)
            reason = result.exclusion.reason.value if result.exclusion else None
            status.update(
                status=TrialStatus.EXCLUDED.value if reason else TrialStatus.EXPORTED.value,
                reason=reason,
                detail=result.detail or None,
                rows=work.rows,
                repaired=status["repaired"] + result.repaired,
            )
            rows.append((trial.trial_dir, trial_rows))
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
        if trial.trial_dir in wanted or record["status"] != SCORED:  # else all came from the cache
            notes = [status["detail"], _repaired_note(status["repaired"])]
            if trial.blocked() is None:
                notes.append(trial.skipped_note())
            status["detail"] = "; ".join(filter(None, notes)) or None
        status["detail"] = _storable(status["detail"])
        statuses.append(status)

    table, failed = _batch_table(rows, schema)
    failed.update({trial_dir: error for work in works for trial_dir, error in work.failed.items()})
    for status in statuses:
        if status["trial_dir"] in failed:
            detail = f"rows hold values that cannot be stored: {failed[status['trial_dir']]}"
            status.update(status=TrialStatus.EXCLUDED.value, reason=Reason.INVALID_TRAJECTORY.value, rows=0)
            status["detail"] = _storable(detail)
            if sessions is not None:
                sessions.drop(status["trial_dir"])
    return table, statuses


def _batch_table(
    rows: list[tuple[str, pa.Table | list[dict[str, Any]] | None]], schema: pa.Schema
) -> tuple[pa.Table, dict[str, str]]:
    """The batch's rows (a read trial's as its worker encoded them, None if they could not be
    stored; an unchanged trial's as the run before staged them) as one table, laid out in memory as
    `encode_per_trial` lays out a batch (so the parts' bytes and recorded sizes do not depend on
    the process that encoded them): one chunk, or one per trial when a trial's rows are left out."""
    encoded: list[tuple[pa.Table | None, bool]] = []  # (rows, encoded here)
    failed: dict[str, str] = {}
    for trial_dir, got in rows:
        if isinstance(got, list):
            try:
                encoded.append((pa.Table.from_pylist(got, schema=schema), True))
            except Exception as err:
                failed[trial_dir] = f"{type(err).__name__}: {err}"
                encoded.append((None, True))
        else:
            encoded.append((got, False))
    if all(table is not None for table, _ in encoded):
        tables = [table for table, _ in encoded if table is not None]
        return (pa.concat_tables(tables).combine_chunks() if tables else schema.empty_table()), failed
    tables = [
        table if here else pa.Table.from_pylist(table.to_pylist(), schema=schema)
        for table, here in encoded
        if table is not None
    ]
    return (pa.concat_tables(tables) if tables else schema.empty_table()), failed
