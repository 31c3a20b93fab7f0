"""Group one recursive object listing of a run's `trace_jobs/` into Harbor trial folders.

A trial folder is one that directly holds Harbor's files (`result.json`, `config.json`,
`trial.log`) or an `agent/` folder, at any depth (`trace_jobs/step-25/<trial>/`). Files
under a trial's own `agent/` or `verifier/` never make a folder of their own, and a folder
that holds trial folders (a job folder with its own `result.json`) is not a trial.

Listings travel column-wise (`ObjectBatch`): a trial folder holds dozens of objects (every
episode's prompt files), and one Python object per listed object cost more than listing it.
The folder logic runs once per folder objects sit in, the per-object work in polars.

Skipped entries (links, FIFOs, folders that cannot be entered, undecodable names; see
`local_walk`) are never objects of a trial: a trial lists them apart, and a later step decides
whether one stands where a row's file should be. One that lies in no trial folder is accounted
as a trial folder of its own (a symbolic link where a trial folder should be, say), so nothing
a listing sees is silently absent from the run's trial folders.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import polars as pl
import pyarrow as pa

from trace_assets.harbor.trial_files import (
    MARKER_FILES,
    RESULT_JSON,
    TRIAL_SUBFOLDERS,
)
from trace_assets.store.objects import ObjectBatch

MARKER_SUFFIXES = tuple(f"/{name}" for name in sorted(MARKER_FILES))
SUBFOLDER_INFIXES = tuple(f"/{name}/" for name in TRIAL_SUBFOLDERS)

TIMESTAMP = pa.timestamp("us", tz="UTC")
OBJECT_TYPE = pa.struct([("key", pa.string()), ("size", pa.int64()), ("etag", pa.string()), ("modified", TIMESTAMP)])
SKIPPED_TYPE = pa.struct([("key", pa.string()), ("kind", pa.string())])  # kind: a local_walk.EntryKind
JOB_RESULTS_SCHEMA = pa.schema(list(OBJECT_TYPE))  # keys relative to the scope's folder
LISTING_SCHEMA = pa.schema(
    [
        ("trial_dir", pa.string()),
        ("trial_name", pa.string()),
        ("objects", pa.int64()),
        ("bytes", pa.int64()),
        ("has_result_json", pa.bool_()),
        ("newest_modified", TIMESTAMP),
        ("files", pa.list_(OBJECT_TYPE)),  # keys relative to the trial folder, in key order
        ("skipped", pa.list_(SKIPPED_TYPE)),  # entries not read, keys relative to it ("" for itself)
    ]
)


def trial_name_of(trial_dir: str) -> str:
    """A trial's name is its folder's name: "step-25/task-1__abc" -> "task-1__abc"."""
    return trial_dir.rsplit("/", 1)[-1]


def _top_folder(key: str) -> str:
    return key.partition("/")[0]


def whole_folder_batches(pages: Iterable[ObjectBatch], min_objects: int) -> Iterator[ObjectBatch]:
    """Re-cut pages of a listing into batches of at least `min_objects` (the last may be smaller)
    that never split a top-level folder.

    Every trial folder lies inside one top-level folder, and a listing (S3 key order, or the
    local walk) gives each top-level folder's objects together, so each batch can be grouped
    on its own, with only a batch in memory.
    """
    buffer = ObjectBatch()
    boundary = 0  # where the buffer's last top-level folder starts
    for page in pages:
        if not page.keys:
            continue
        if buffer.keys and _top_folder(buffer.keys[-1]) != _top_folder(page.keys[0]):
            boundary = len(buffer)
        last = _top_folder(page.keys[-1])
        if _top_folder(page.keys[0]) != last:  # else the page is all one folder: its objects come together
            for index in range(len(page) - 1, 0, -1):
                if _top_folder(page.keys[index - 1]) != last:
                    boundary = len(buffer) + index
                    break
        buffer.extend(page)
        if boundary >= min_objects:
            ready, buffer = buffer.split(boundary)
            boundary = 0
            yield ready
    if buffer.keys:
        yield buffer


@dataclass(frozen=True)
class TrialGroups:
    trials: pa.Table  # LISTING_SCHEMA, one row per trial folder, in (trial_name, trial_dir) order
    stray_objects: int  # objects in no trial folder (job-level files, strays)
    job_results: pa.Table  # JOB_RESULTS_SCHEMA: the `result.json` files among them (job folders', the scope's own)
    total_objects: int
    total_bytes: int


def _subfolder_owner(folder: str) -> str | None:
    """The folder before the outermost `agent/` or `verifier/` in a path, if that is not its first part."""
    path = folder + "/"
    found = [index for index in (path.find(infix) for infix in SUBFOLDER_INFIXES) if index >= 0]
    return path[: min(found)] if found else None


def _ancestors(folder: str) -> Iterator[str]:
    """Proper ancestor folders, deepest first: "a/b/c" -> "a/b", "a"."""
    while "/" in folder:
        folder = folder.rpartition("/")[0]
        yield folder


def _trial_dirs(folders: set[str], marker_folders: set[str]) -> set[str]:
    """Trial folders among the folders objects sit in; a candidate with one beneath it is a job folder."""
    candidates = set()
    for folder in folders:
        owner = _subfolder_owner(folder)
        if owner is not None:
            candidates.add(owner)
        elif folder in marker_folders:
            candidates.add(folder)
    job_folders = {ancestor for folder in candidates for ancestor in _ancestors(folder)}
    return candidates - job_folders


def _owner(folder: str, trial_dirs: set[str]) -> str | None:
    """The trial folder a folder is, or is inside (trial folders never nest)."""
    while folder:
        if folder in trial_dirs:
            return folder
        folder = folder.rpartition("/")[0]
    return None


def group_trials(batch: ObjectBatch) -> TrialGroups:
    """The trial folders of a batch holding whole top-level folders, as listing rows."""
    parents = [key.rpartition("/")[0] for key in batch.keys]
    marker_parents = {key.rpartition("/")[0] for key in batch.keys if key.endswith(MARKER_SUFFIXES)}
    folders = set(parents)
    skipped_keys = {batch.keys[position] for position in batch.skipped}
    trial_dirs = _trial_dirs(folders | skipped_keys, marker_parents)  # a linked `agent/` marks its trial
    owners = {folder: _owner(folder, trial_dirs) for folder in folders}
    dirs = [owners[parent] for parent in parents]
    kinds: list[str | None] = [None] * len(dirs)
    for position, kind in batch.skipped.items():
        kinds[position] = kind
        if dirs[position] is None:  # in no trial folder: a trial folder of its own
            dirs[position] = batch.keys[position]
    objects = pl.DataFrame(
        {
            "trial_dir": dirs,
            "path": batch.keys,
            "size": batch.sizes,
            "etag": batch.etags,
            "modified": batch.modified,
            "kind": kinds,
        },
        schema={
            "trial_dir": pl.String,
            "path": pl.String,
            "size": pl.Int64,
            "etag": pl.String,
            "modified": pl.Int64,
            "kind": pl.String,
        },
    )
    owned = objects.filter(pl.col("trial_dir").is_not_null())
    key = pl.col("key")
    regular = pl.col("kind").is_null()
    trials = (
        owned.with_columns(
            key=pl.col("path").str.slice(pl.col("trial_dir").str.len_chars() + 1),
            modified=pl.col("modified").cast(pl.Datetime("us", "UTC")),
        )
        .sort("trial_dir", "key")
        .group_by("trial_dir", maintain_order=True)
        .agg(
            objects=regular.sum().cast(pl.Int64),
            bytes=pl.col("size").sum(),
            has_result_json=((key == RESULT_JSON) & regular).any(),
            newest_modified=pl.col("modified").max(),
            files=pl.struct("key", "size", "etag", "modified").filter(regular),
            skipped=pl.struct("key", "kind").filter(~regular),
        )
        .with_columns(trial_name=pl.col("trial_dir").str.split("/").list.last())
        .sort("trial_name", "trial_dir")
        .select(LISTING_SCHEMA.names)
    )
    job_results = objects.filter(
        pl.col("trial_dir").is_null() & regular & (pl.col("path").str.split("/").list.last() == RESULT_JSON)
    ).select(key="path", size="size", etag="etag", modified=pl.col("modified").cast(pl.Datetime("us", "UTC")))
    return TrialGroups(
        trials=trials.to_arrow().cast(LISTING_SCHEMA),
        stray_objects=objects.height - owned.height,
        job_results=job_results.to_arrow().cast(JOB_RESULTS_SCHEMA),
        total_objects=objects.height - len(batch.skipped),
        total_bytes=sum(batch.sizes),
    )
