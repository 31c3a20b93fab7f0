"""Pre-flight of space: once the listing says how many bytes the rows come from, whether the staging
folder's and the publish root's file systems have room for the run, before the rows are read.

Staging and publishing scale with the bytes of the files rows are made from (result.json,
trajectories, verifier logs), not with the listing's total, most of which (episode prompts) is
never read. Measured on the bundled sample and on the benchmark tree (trace_assets_tests/support/generate_traces.py,
2,000 trials): staging holds 0.32 and 0.43 times those bytes, a published version 1.03 and 1.11
times. The estimates below sit above both. A staging file system with less room refuses the run
(the dataset folder is built there too); a publish root with less gets a warning, as a
re-publish copies only the shards that changed.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from trace_assets.runtime.atomic_files import files_below
from trace_assets.runtime.machine_faults import size

STAGED_PER_SOURCE_BYTE = 0.5
PUBLISHED_PER_SOURCE_BYTE = 1.2


class NotEnoughSpace(Exception):
    """A file system has less free space than the run is estimated to need; the message says both."""


@dataclass(frozen=True)
class SpaceNeeded:
    staging: int  # the staged files and the dataset folder built beside them, less what is staged already
    publish: int  # the published version's files


def space_needed(row_source_bytes: int, staged_bytes: int) -> SpaceNeeded:
    published = int(row_source_bytes * PUBLISHED_PER_SOURCE_BYTE)
    staged = int(row_source_bytes * STAGED_PER_SOURCE_BYTE)
    return SpaceNeeded(staging=max(staged - staged_bytes, 0) + published, publish=published)


def check_free_space(row_source_bytes: int, staging_folder: Path, publish_folder: Path | None) -> list[str]:
    """Raise `NotEnoughSpace` when the staging folder's file system has less free space than the run
    needs; returns a warning when the publish root's (another file system) has less than a version."""
    staged = sum(files_below(staging_folder).values()) if staging_folder.is_dir() else 0
    needed = space_needed(row_source_bytes, staged)
    staging_fs = _existing(staging_folder)
    free = shutil.disk_usage(staging_fs).free
    if free < needed.staging:
        raise NotEnoughSpace(
            f"not enough space under the staging folder {staging_folder}: the run needs about "
            f"{size(needed.staging)}, its file system has {size(free)} free"
        )
    if publish_folder is None:
        return []
    publish_fs = _existing(publish_folder)
    if os.stat(publish_fs).st_dev == os.stat(staging_fs).st_dev:
        return []  # the dataset folder built in staging is renamed into place: counted above
    free = shutil.disk_usage(publish_fs).free
    if free < needed.publish:
        return [
            f"the publish root's file system ({publish_folder}) has {size(free)} free and a new version "
            f"needs about {size(needed.publish)}: publishing may fail for space (the published version is kept)"
        ]
    return []


def _existing(folder: Path) -> Path:
    """`folder`, or its nearest parent that exists (whose file system it will be on)."""
    folder = folder.absolute()
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    return folder
