"""The run-level steps behind the assets, as plain functions over a staging folder.

Each step streams trials in batches from the previous step's Parquet file into its own, so
memory holds one batch of trial content at a time, whatever the size of the run. Listing and
status files hold one small row per trial folder and are the accounting of the run.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from trace_assets.export import MAIN_TRACE_SOURCE, ROW_COLUMNS, export_trial, needed_files
from trace_assets.harbor import Exclusion, Reason, TrialSummary, parse_trial_result
from trace_assets.listing import (
    LISTING_SCHEMA,
    StoredObject,
    group_trials,
    trial_name_of,
    whole_folder_batches,
)
from trace_assets.row_parts import RowParts, iter_rows, read_row_parts, staged_row_parts, trial_rows_digest
from trace_assets.storage import TraceStore

Progress = Callable[[str], None]
DEFAULT_ROWS_PER_SHARD = 2000

SCORED_SCHEMA = pa.schema(
    [
        ("trial_dir", pa.string()),
        ("trial_name", pa.string()),
        ("status", pa.string()),  # "scored", or the reason it is not
        ("detail", pa.string()),
        ("task", pa.string()),
        ("reward", pa.float64()),
        ("exception_type", pa.string()),
        ("result", pa.string()),
        ("started_at", pa.string()),
        ("agent", pa.string()),
        ("model", pa.string()),
        ("model_provider", pa.string()),
        ("job_id", pa.string()),
        ("result_trial_name", pa.string()),
        ("source_fingerprint", pa.string()),
    ]
)
STATUS_SCHEMA = pa.schema(
    [
        ("trial_dir", pa.string()),
        ("trial_name", pa.string()),
        ("task", pa.string()),
        ("status", pa.string()),  # "exported" or "excluded"
        ("reason", pa.string()),
        ("detail", pa.string()),
        ("rows", pa.int64()),
        ("objects", pa.int64()),
        ("bytes", pa.int64()),
        ("source_fingerprint", pa.string()),  # of the objects the status was made from
    ]
)
CONVERSATION_TYPE = pa.list_(pa.struct([("content", pa.string()), ("role", pa.string())]))


def rows_schema(include_subagents: bool) -> pa.Schema:
    fields = [pa.field("conversations", CONVERSATION_TYPE)]
    fields += [pa.field(column, pa.string()) for column in ROW_COLUMNS[1:]]
    if include_subagents:
        fields.append(pa.field("trace_source", pa.string()))
    return pa.schema(fields)


@dataclass(frozen=True)
class RunStaging:
    """Where one run's intermediate files live between assets."""

    root: Path
    run_id: str

    @property
    def folder(self) -> Path:
        return self.root / self.run_id

    @property
    def listing(self) -> Path:
        return self.folder / "raw_trial_listing.parquet"

    @property
    def scored(self) -> Path:
        return self.folder / "scored_trials.parquet"

    @property
    def statuses(self) -> Path:
        return self.folder / "trials.parquet"

    @property
    def rows(self) -> Path:
        return self.folder / "last_episode_rows"  # Parquet parts, see row_parts

    @property
    def coverage(self) -> Path:
        return self.folder / "coverage.json"

    @property
    def scan_report(self) -> Path:
        return self.folder / "secret_scan.json"

    def require(self, path: Path, made_by: str) -> Path:
        if not path.exists():
            raise FileNotFoundError(f"{path} is missing: materialize {made_by} for run {self.run_id!r} first")
        return path

    def require_rows(self) -> RowParts:
        parts = read_row_parts(self.rows)
        if parts is None:
            raise FileNotFoundError(f"{self.rows} is missing: materialize last_episode_rows for run {self.run_id!r} first")
        return parts


def _write_atomically(path: Path, write: Callable[[Path], Any]) -> Any:
    """Write to a sibling temp file, then rename: a failed step never leaves a half-written file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f".{path.name}.partial")
    result = write(temp)
    temp.replace(path)
    return result


# --------------------------------------------------------------------------- step 1: listing


@dataclass(frozen=True)
class ListingStats:
    trial_dirs: int
    objects: int
    bytes: int
    stray_objects: int
    unscored: int


LISTING_BATCH_OBJECTS = 20_000  # objects grouped at once (whole top-level folders): a few MB
LISTING_WRITE_BATCH = 512  # trial folders per row group


def build_listing(store: TraceStore, staging: RunStaging) -> ListingStats:
    """Stream the run's listing into Parquet, a batch of top-level folders at a time.

    Trials arrive in listing order; when that differs from (trial_name, trial_dir) order (S3's
    key order in some names, nested step folders), the file is reordered at the end from its
    compact Arrow form.
    """
    unsorted = staging.listing.with_name(f".{staging.listing.name}.unsorted")
    written = []  # name, folder and has_result_json of each trial written: the small part of the listing
    objects = total_bytes = stray = 0
    with _staged_writers((unsorted, LISTING_SCHEMA)) as [writer]:
        for batch in whole_folder_batches(store.iter_run(staging.run_id), LISTING_BATCH_OBJECTS):
            groups = group_trials(batch)
            objects += groups.total_objects
            total_bytes += groups.total_bytes
            stray += groups.stray_objects
            written.append(groups.trials.select(["trial_name", "trial_dir", "has_result_json"]))
            writer.write_table(groups.trials, row_group_size=LISTING_WRITE_BATCH)
    trials = pa.concat_tables(written) if written else LISTING_SCHEMA.empty_table()
    unscored = pc.sum(pc.invert(trials["has_result_json"])).as_py() or 0
    positions = pc.sort_indices(trials, [("trial_name", "ascending"), ("trial_dir", "ascending")])
    if positions.equals(pa.array(range(trials.num_rows), pa.uint64())):
        unsorted.replace(staging.listing)
    else:
        table = pq.read_table(unsorted).take(positions)
        _write_atomically(staging.listing, lambda p: pq.write_table(table, p, row_group_size=LISTING_WRITE_BATCH))
        unsorted.unlink()
    return ListingStats(trial_dirs=trials.num_rows, objects=objects, bytes=total_bytes, stray_objects=stray, unscored=unscored)


# The only objects later steps look at: all the rows are made of (see export.needed_files).
ROW_SOURCE_PREFIXES = ("result.json", "agent/trajectory", "verifier/test-")


@dataclass(frozen=True)
class ListedTrial:
    """A trial folder as the later steps see it: its counts, and only the objects rows come from."""

    trial_dir: str
    object_count: int
    total_bytes: int
    objects: dict[str, StoredObject]  # key -> object, for ROW_SOURCE_PREFIXES keys only

    @property
    def trial_name(self) -> str:
        return trial_name_of(self.trial_dir)

    def has(self, key: str) -> bool:
        return key in self.objects


def iter_listing(path: Path, batch_size: int) -> Iterator[list[ListedTrial]]:
    """The listing back a batch at a time, picking the few objects that matter with Arrow."""
    columns = ["trial_dir", "objects", "bytes", "files"]
    for batch in _open_parquet(path).iter_batches(batch_size=batch_size, columns=columns, use_threads=False):
        files = batch.column("files")
        flat = files.flatten()
        keys = flat.field("key")
        wanted = pc.equal(keys, ROW_SOURCE_PREFIXES[0])
        for prefix in ROW_SOURCE_PREFIXES[1:]:
            wanted = pc.or_(wanted, pc.starts_with(keys, prefix))
        picked = flat.filter(wanted)
        owners = pc.list_parent_indices(files).filter(wanted).to_pylist()
        per_trial: list[dict[str, StoredObject]] = [{} for _ in range(batch.num_rows)]
        fields = (picked.field(name).to_pylist() for name in ("key", "size", "etag", "modified"))
        for owner, obj in zip(owners, map(StoredObject, *fields)):
            per_trial[owner][obj.key] = obj
        yield [
            ListedTrial(trial_dir, count, size, objects)
            for trial_dir, count, size, objects in zip(
                batch.column("trial_dir").to_pylist(),
                batch.column("objects").to_pylist(),
                batch.column("bytes").to_pylist(),
                per_trial,
            )
        ]


# --------------------------------------------------------------------------- incremental re-reads

PARSER_VERSION = "1"  # bump when parsing changes, so cached results are not reused


def fingerprint(objects: Iterable[StoredObject], *salt: object) -> str:
    """Identity of a set of objects as listed (key, size, ETag, modification time)."""
    digest = hashlib.sha256(PARSER_VERSION.encode())
    for item in salt:
        digest.update(f"|{item}".encode())
    for obj in sorted(objects, key=lambda o: o.key):
        modified = obj.modified.isoformat() if obj.modified else ""
        digest.update(f"\n{obj.key}|{obj.size}|{obj.etag or ''}|{modified}".encode())
    return digest.hexdigest()[:32]


def _objects(trial: ListedTrial, keys: Iterable[str]) -> list[StoredObject]:
    return [trial.objects[key] for key in keys if key in trial.objects]


@contextmanager
def _staged_writers(*targets: tuple[Path, pa.Schema]) -> Iterator[list[pq.ParquetWriter]]:
    """Parquet writers on temp files, renamed into place together only if the step succeeds."""
    temps = []
    for path, _ in targets:
        path.parent.mkdir(parents=True, exist_ok=True)
        temps.append(path.with_name(f".{path.name}.partial"))
    writers = [pq.ParquetWriter(temp, schema) for temp, (_, schema) in zip(temps, targets)]
    try:
        yield writers
    except BaseException:
        for writer, temp in zip(writers, temps):
            writer.close()
            temp.unlink(missing_ok=True)
        raise
    for writer, temp, (path, _) in zip(writers, temps, targets):
        writer.close()
        temp.replace(path)


def _previous_records(path: Path, required_column: str) -> dict[str, dict[str, Any]]:
    """Last materialization's per-trial records (small: one per folder), if compatible."""
    if not path.exists():
        return {}
    table = pq.read_table(path)
    if required_column not in table.column_names:
        return {}
    return {record["trial_dir"]: record for record in table.to_pylist()}


class _PreviousRows:
    """Streams the last materialization's rows, grouped by trial, in publishing order.

    Its statuses say how many rows each trial had, in the same order; the rows are used only
    if they were written with exactly those statuses.
    """

    def __init__(self, folder: Path, statuses: dict[str, dict[str, Any]], schema: pa.Schema):
        parts = read_row_parts(folder)
        trial_rows = [(status["trial_dir"], status["rows"]) for status in statuses.values()]
        self.available = (
            parts is not None and parts.statuses_digest == trial_rows_digest(trial_rows) and parts.schema == schema
        )
        self._groups = self._read(parts, statuses) if self.available else iter(())
        self._current: tuple[tuple[str, str], list[dict[str, Any]]] | None = next(self._groups, None)

    @staticmethod
    def _read(parts: RowParts, statuses: dict[str, dict[str, Any]]) -> Iterator[tuple[tuple[str, str], list[dict[str, Any]]]]:
        rows = (row for table in iter_rows(parts, 500) for row in table.to_pylist())
        for status in statuses.values():
            yield (status["trial_name"], status["trial_dir"]), list(islice(rows, status["rows"]))

    def take(self, trial: ListedTrial) -> list[dict[str, Any]]:
        """The trial's earlier rows (none if it had none); must be called in publishing order."""
        key = (trial.trial_name, trial.trial_dir)
        while self._current is not None and self._current[0] < key:
            self._current = next(self._groups, None)
        if self._current is not None and self._current[0] == key:
            rows = self._current[1]
            self._current = next(self._groups, None)
            return rows
        return []


# --------------------------------------------------------------------------- step 2: scored trials


def _scored_record(trial: ListedTrial, parsed: TrialSummary | Exclusion | None, source: str) -> dict[str, Any]:
    record: dict[str, Any] = {"trial_dir": trial.trial_dir, "trial_name": trial.trial_name, "source_fingerprint": source}
    if parsed is None:
        record.update(status=Reason.NO_RESULT_JSON.value, detail="no result.json in the trial folder")
    elif isinstance(parsed, Exclusion):
        record.update(status=parsed.reason.value, detail=parsed.detail)
    else:
        record.update(
            status="scored",
            task=parsed.task,
            reward=parsed.reward,
            exception_type=parsed.exception_type,
            result=parsed.result,
            started_at=parsed.started_at,
            agent=parsed.agent,
            model=parsed.model,
            model_provider=parsed.model_provider,
            job_id=parsed.job_id,
            result_trial_name=parsed.trial_name,
        )
    return record


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
    )


@dataclass
class StepStats:
    statuses: Counter = field(default_factory=Counter)
    reread: int = 0  # trials whose objects were fetched this time
    cached: int = 0  # trials taken unchanged from the last materialization


def score_trials(store: TraceStore, staging: RunStaging, batch_size: int, progress: Progress) -> StepStats:
    """Parse every result.json, re-reading only those whose object changed since last time."""
    listing_path = staging.require(staging.listing, "raw_trial_listing")
    previous = _previous_records(staging.scored, "source_fingerprint")
    stats = StepStats()
    with _staged_writers((staging.scored, SCORED_SCHEMA)) as [writer]:
        for trials in iter_listing(listing_path, batch_size):
            sources = {t.trial_dir: fingerprint(_objects(t, ["result.json"])) for t in trials}
            unchanged = {
                t.trial_dir
                for t in trials
                if t.has("result.json") and previous.get(t.trial_dir, {}).get("source_fingerprint") == sources[t.trial_dir]
            }
            stale = [t for t in trials if t.has("result.json") and t.trial_dir not in unchanged]
            blobs = store.fetch(staging.run_id, [f"{t.trial_dir}/result.json" for t in stale])
            records = []
            for trial in trials:
                source = sources[trial.trial_dir]
                if trial.trial_dir in unchanged:
                    records.append(previous[trial.trial_dir])
                    stats.cached += 1
                    continue
                blob = blobs.get(f"{trial.trial_dir}/result.json")
                records.append(_scored_record(trial, None if blob is None else parse_trial_result(blob, trial.trial_name), source))
                stats.reread += blob is not None
            stats.statuses.update(r["status"] for r in records)
            writer.write_table(pa.Table.from_pylist(records, schema=SCORED_SCHEMA))
            progress(f"scored_trials: {stats.reread + stats.cached} result.json files ({stats.cached} unchanged)")
    return stats


# --------------------------------------------------------------------------- step 3: last-episode rows


@dataclass
class Coverage:
    """What happened to every trial folder of a run. The counts add up exactly."""

    run_id: str
    trial_dirs: int = 0
    scored: int = 0
    unscored: int = 0
    exported: int = 0
    excluded: dict[str, int] = field(default_factory=dict)
    rows: int = 0
    subagent_rows: int = 0

    @property
    def export_ratio(self) -> float:
        return self.exported / self.scored if self.scored else 0.0

    @property
    def accounted(self) -> bool:
        return (
            self.trial_dirs == self.scored + self.unscored
            and self.trial_dirs == self.exported + sum(self.excluded.values())
            and self.unscored == self.excluded.get(Reason.NO_RESULT_JSON.value, 0)
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "trial_dirs": self.trial_dirs,
            "scored": self.scored,
            "unscored": self.unscored,
            "exported": self.exported,
            "excluded": dict(sorted(self.excluded.items())),
            "export_ratio": round(self.export_ratio, 6),
            "rows": self.rows,
            "subagent_rows": self.subagent_rows,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Coverage:
        fields = {k: data[k] for k in ("run_id", "trial_dirs", "scored", "unscored", "exported", "excluded", "rows", "subagent_rows")}
        return cls(**fields)


def _iter_scored(path: Path, batch_size: int) -> Iterator[list[dict[str, Any]]]:
    for batch in _open_parquet(path).iter_batches(batch_size=batch_size, use_threads=False):
        yield batch.to_pylist()


def export_rows(
    store: TraceStore,
    staging: RunStaging,
    include_subagents: bool,
    batch_size: int,
    progress: Progress,
    rows_per_part: int = DEFAULT_ROWS_PER_SHARD,
) -> tuple[Coverage, StepStats]:
    """Each scored trial's rows and every folder's status; unchanged trials come from the last run.

    Rows go into parts of `rows_per_part` rows, the published shard size, so publishing can
    copy them.
    """
    listing_path = staging.require(staging.listing, "raw_trial_listing")
    scored_path = staging.require(staging.scored, "scored_trials")
    schema = rows_schema(include_subagents)
    previous_statuses = _previous_records(staging.statuses, "source_fingerprint")
    previous_rows = _PreviousRows(staging.rows, previous_statuses, schema)
    if not previous_rows.available:
        previous_statuses = {}
    coverage = Coverage(run_id=staging.run_id)
    stats = StepStats()
    excluded: Counter = Counter()
    trial_rows: list[tuple[str, int]] = []
    with (
        staged_row_parts(staging.rows, schema, rows_per_part) as rows_out,
        _staged_writers((staging.statuses, STATUS_SCHEMA)) as [status_out],
    ):
        for trials, scored in zip(iter_listing(listing_path, batch_size), _iter_scored(scored_path, batch_size), strict=True):
            rows, statuses = _export_batch(
                store, staging.run_id, trials, scored, include_subagents, previous_statuses, previous_rows, stats
            )
            for status in statuses:
                trial_rows.append((status["trial_dir"], status["rows"]))
                if status["status"] == "exported":
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
    coverage.excluded = dict(excluded)
    coverage.unscored = excluded.get(Reason.NO_RESULT_JSON.value, 0)
    coverage.scored = coverage.trial_dirs - coverage.unscored
    _write_atomically(staging.coverage, lambda p: p.write_text(json.dumps(coverage.as_dict(), indent=2) + "\n"))
    return coverage, stats


def _export_batch(
    store: TraceStore,
    run_id: str,
    trials: list[ListedTrial],
    scored: list[dict[str, Any]],
    include_subagents: bool,
    previous_statuses: dict[str, dict[str, Any]],
    previous_rows: _PreviousRows,
    stats: StepStats,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    wanted: dict[str, list[str]] = {}
    sources: dict[str, str] = {}
    for trial, record in zip(trials, scored):
        if record["trial_dir"] != trial.trial_dir:
            raise RuntimeError(f"scored_trials is out of step with the listing at {trial.trial_dir}: re-materialize it")
        keys = needed_files(trial.objects, include_subagents) if record["status"] == "scored" else []
        sources[trial.trial_dir] = fingerprint(_objects(trial, [*keys, "result.json"]), include_subagents, run_id)
        unchanged = previous_statuses.get(trial.trial_dir, {}).get("source_fingerprint") == sources[trial.trial_dir]
        if record["status"] == "scored" and not unchanged:
            wanted[trial.trial_dir] = keys
    blobs = store.fetch(run_id, [f"{d}/{key}" for d, keys in wanted.items() for key in keys])

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
        if record["status"] != "scored":
            status.update(status="excluded", reason=record["status"], detail=record["detail"])
        elif trial.trial_dir not in wanted:
            cached = previous_statuses[trial.trial_dir]
            status.update(status=cached["status"], reason=cached["reason"], detail=cached["detail"], rows=cached["rows"])
            if len(earlier_rows) != cached["rows"]:
                raise RuntimeError(f"cached rows of {trial.trial_dir} are incomplete: delete {run_id}'s staging folder")
            rows.extend(earlier_rows)
            stats.cached += 1
        else:
            files = {key: blobs[f"{trial.trial_dir}/{key}"] for key in wanted[trial.trial_dir]}
            result = export_trial(summary_from_scored(record), files, run_id, include_subagents)
            if result.exclusion:
                status.update(status="excluded", reason=result.exclusion.reason.value)
            else:
                status.update(status="exported", reason=None)
            status.update(detail=result.detail or None, rows=len(result.rows))
            rows.extend(result.rows)
            stats.reread += 1
        statuses.append(status)
    return rows, statuses


def _open_parquet(path: Path) -> pq.ParquetFile:
    """Without read-ahead buffering, which otherwise makes memory grow with the file's size."""
    return pq.ParquetFile(path, pre_buffer=False)


def shard_count(total_rows: int, max_rows_per_shard: int) -> int:
    return max(1, math.ceil(total_rows / max_rows_per_shard))
