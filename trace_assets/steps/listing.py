"""Step 1, `raw_trial_listing`: one streamed listing of a scope, grouped into trial folders."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from trace_assets.harbor.trial_files import ROW_SOURCE_PREFIXES
from trace_assets.steps.staging import RunStaging, open_parquet, staged_writers, write_atomically
from trace_assets.store.objects import StoredObject
from trace_assets.store.trace_store import TraceStore
from trace_assets.store.trial_folders import LISTING_SCHEMA, group_trials, trial_name_of, whole_folder_batches


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
    with staged_writers((unsorted, LISTING_SCHEMA)) as [writer]:
        for batch in whole_folder_batches(store.iter_run(staging.scope), LISTING_BATCH_OBJECTS):
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
        write_atomically(staging.listing, lambda p: pq.write_table(table, p, row_group_size=LISTING_WRITE_BATCH))
        unsorted.unlink()
    return ListingStats(
        trial_dirs=trials.num_rows, objects=objects, bytes=total_bytes, stray_objects=stray, unscored=unscored
    )


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
            ListedTrial(trial_dir, count, size, objects)
            for trial_dir, count, size, objects in zip(
                batch.column("trial_dir").to_pylist(),
                batch.column("objects").to_pylist(),
                batch.column("bytes").to_pylist(),
                per_trial,
            )
        ]
