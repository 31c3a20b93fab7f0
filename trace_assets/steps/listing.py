"""Step 1, `raw_trial_listing`: one streamed listing of a scope, grouped into trial folders.

Also how later steps read it back: a trial at a time, with the entries the listing could not
read (`skipped`) turned into the trial's exclusion when one stands where a row's file should be
(a link -> `unsafe_link`, a FIFO, socket or device -> `not_a_file`, a folder that cannot be
entered -> `unreadable`, an undecodable name -> `undecodable_name`; the detail names the entry),
and otherwise only counted. Batches are cut by bytes as well as by trials, so memory is bounded
by the bytes in flight however large one trial's files are.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from trace_assets.core.accounting import Exclusion, Reason
from trace_assets.harbor.trial_files import ROW_SOURCE_PREFIXES, stands_for_row_source
from trace_assets.runtime.progress import Progress, ProgressReporter, quiet, terminal
from trace_assets.steps.staging import RunStaging, open_parquet, staged_writers, write_atomically
from trace_assets.store.local_walk import EntryKind
from trace_assets.store.objects import ObjectBatch, StoredObject
from trace_assets.store.trace_store import TraceStore
from trace_assets.store.trial_folders import (
    JOB_RESULTS_SCHEMA,
    LISTING_SCHEMA,
    group_trials,
    trial_name_of,
    whole_folder_batches,
)


@dataclass(frozen=True)
class ListingStats:
    trial_dirs: int
    objects: int
    bytes: int
    stray_objects: int
    unscored: int
    row_source_bytes: int = 0  # listed bytes of the files rows come from: what staging and publishing scale with


LISTING_BATCH_OBJECTS = 20_000  # objects grouped at once (whole top-level folders): a few MB
LISTING_WRITE_BATCH = 512  # trial folders per row group


def build_listing(store: TraceStore, staging: RunStaging, progress: Progress | None = None) -> ListingStats:
    """Stream the run's listing into Parquet, a batch of top-level folders at a time.

    How many objects there are is known only at the end; the last listing's count, when there
    is one, stands in as the total for `progress`.

    Trials arrive in listing order; when that differs from (trial_name, trial_dir) order (S3's
    key order in some names, nested step folders), the file is reordered at the end from its
    compact Arrow form.
    """
    unsorted = staging.listing.with_name(f".{staging.listing.name}.unsorted")
    written = []  # name, folder and has_result_json of each trial written: the small part of the listing
    job_results = []  # result.json objects in no trial folder
    objects = total_bytes = stray = row_source_bytes = 0
    reporter = ProgressReporter("raw_trial_listing", "objects", _last_count(staging), progress or quiet, bar=terminal())
    with staged_writers((unsorted, LISTING_SCHEMA)) as [writer]:
        for batch in whole_folder_batches(_counted(store.iter_run(staging.scope), reporter), LISTING_BATCH_OBJECTS):
            groups = group_trials(batch)
            objects += groups.total_objects
            total_bytes += groups.total_bytes
            stray += groups.stray_objects
            row_source_bytes += _row_source_bytes(groups.trials)
            written.append(groups.trials.select(["trial_name", "trial_dir", "has_result_json"]))
            job_results.append(groups.job_results)
            writer.write_table(groups.trials, row_group_size=LISTING_WRITE_BATCH)
    write_atomically(staging.job_results, lambda p: pq.write_table(_concat(job_results, JOB_RESULTS_SCHEMA), p))
    reporter.total = reporter.done  # known now
    reporter.finish()
    trials = _concat(written, LISTING_SCHEMA)
    unscored = pc.sum(pc.invert(trials["has_result_json"])).as_py() or 0
    positions = pc.sort_indices(trials, [("trial_name", "ascending"), ("trial_dir", "ascending")])
    if positions.equals(pa.array(range(trials.num_rows), pa.uint64())):
        unsorted.replace(staging.listing)
    else:
        table = pq.read_table(unsorted).take(positions)
        write_atomically(staging.listing, lambda p: pq.write_table(table, p, row_group_size=LISTING_WRITE_BATCH))
        unsorted.unlink()
    return ListingStats(
        trial_dirs=trials.num_rows,
        objects=objects,
        bytes=total_bytes,
        stray_objects=stray,
        unscored=unscored,
        row_source_bytes=row_source_bytes,
    )


def _row_source_bytes(trials: pa.Table) -> int:
    """The listed bytes of the trials' row sources (`ROW_SOURCE_PREFIXES`), in one Arrow pass."""
    flat = pc.list_flatten(trials["files"])
    keys = pc.struct_field(flat, "key")
    wanted = pc.equal(keys, ROW_SOURCE_PREFIXES[0])
    for prefix in ROW_SOURCE_PREFIXES[1:]:
        wanted = pc.or_(wanted, pc.starts_with(keys, prefix))
    return int(pc.sum(pc.struct_field(flat, "size").filter(wanted)).as_py() or 0)


def _concat(tables: list[pa.Table], schema: pa.Schema) -> pa.Table:
    return pa.concat_tables(tables) if tables else schema.empty_table()


def _last_count(staging: RunStaging) -> int | None:
    """Objects in the last listing of the scope, if there is one: the likely total of this one."""
    if not staging.listing.exists():
        return None
    return int(pc.sum(pq.read_table(staging.listing, columns=["objects"])["objects"]).as_py() or 0)


def _counted(pages: Iterable[ObjectBatch], reporter: ProgressReporter) -> Iterator[ObjectBatch]:
    listed_bytes = 0
    for page in pages:
        listed_bytes += sum(page.sizes)
        reporter.advance(len(page), f"{listed_bytes / 2**20:,.1f} MiB listed")
        yield page


@dataclass(frozen=True)
class ListedTrial:
    """A trial folder as the later steps see it: its counts, and only the objects rows come from."""

    trial_dir: str
    object_count: int
    total_bytes: int
    objects: dict[str, StoredObject]  # key -> object, for ROW_SOURCE_PREFIXES keys only
    skipped: list[tuple[str, str]]  # (key, EntryKind value) of entries the listing did not read

    @property
    def trial_name(self) -> str:
        return trial_name_of(self.trial_dir)

    def has(self, key: str) -> bool:
        return key in self.objects

    @property
    def row_source_bytes(self) -> int:
        """Listed bytes of the files rows can come from: what reading this trial holds in memory."""
        return sum(obj.size for obj in self.objects.values())

    def blocked(self) -> Exclusion | None:
        """The trial's exclusion when an entry it could not read stands where a row's file should be."""
        for key, kind in self.skipped:
            if stands_for_row_source(key):
                return Exclusion(SKIPPED_REASONS[EntryKind(kind)], _skipped_detail(key, EntryKind(kind)))
        return None

    def skipped_note(self) -> str | None:
        """The entries skipped and only counted, named (the first few)."""
        if not self.skipped:
            return None
        named = ", ".join(f"{key} ({kind})" for key, kind in self.skipped[:3])
        more = f" and {len(self.skipped) - 3} more" if len(self.skipped) > 3 else ""
        return f"{len(self.skipped)} entries not read: {named}{more}"


SKIPPED_REASONS = {
    EntryKind.LINK: Reason.UNSAFE_LINK,
    EntryKind.SPECIAL: Reason.NOT_A_FILE,
    EntryKind.UNREADABLE: Reason.UNREADABLE,
    EntryKind.UNDECODABLE_NAME: Reason.UNDECODABLE_NAME,
}
_SKIPPED_WHAT = {
    EntryKind.LINK: "is a symbolic link, not followed",
    EntryKind.SPECIAL: "is a FIFO, socket or device, not opened",
    EntryKind.UNREADABLE: "is a folder that could not be read",
    EntryKind.UNDECODABLE_NAME: "has a name that is not UTF-8",
}


def _skipped_detail(key: str, kind: EntryKind) -> str:
    return f"{key or 'the trial folder itself'} {_SKIPPED_WHAT[kind]}"


def iter_listing(path: Path, batch_size: int) -> Iterator[list[ListedTrial]]:
    """The listing back a batch at a time, picking the few objects that matter with Arrow."""
    columns = ["trial_dir", "objects", "bytes", "files", "skipped"]
    for batch in open_parquet(path).iter_batches(batch_size=batch_size, columns=columns, use_threads=False):
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
            ListedTrial(trial_dir, count, size, objects, [(entry["key"], entry["kind"]) for entry in skipped])
            for trial_dir, count, size, objects, skipped in zip(
                batch.column("trial_dir").to_pylist(),
                batch.column("objects").to_pylist(),
                batch.column("bytes").to_pylist(),
                per_trial,
                batch.column("skipped").to_pylist(),
            )
        ]


Item = TypeVar("Item")


def bounded_batches(
    items: Iterable[Item], size_of: Callable[[Item], int], max_items: int, max_bytes: int
) -> Iterator[list[Item]]:
    """Items in batches of at most `max_items` and, unless one item alone is larger, `max_bytes`."""
    batch: list[Item] = []
    held = 0
    for item in items:
        size = size_of(item)
        if batch and (len(batch) >= max_items or held + size > max_bytes):
            yield batch
            batch, held = [], 0
        batch.append(item)
        held += size
    if batch:
        yield batch
