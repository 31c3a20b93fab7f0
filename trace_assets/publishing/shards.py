"""A scope's rows as the dataset's Parquet shards, copied from the staged parts when they can be.

Shards live in a folder named after their content, `data/<version>/train-0000i-of-0000N.parquet`,
and the card names that folder. So a new version's shards never overwrite the published ones: a
publish puts the new folder beside the old, flips the card, then removes the old folder, and a
reader that loads through the card sees one version whole. The same rows make the same version,
so republishing unchanged rows changes no byte. Every shard is written as the Hub writes Parquet
(`publishing.parquet_layout`: content-defined chunking, page index).
"""

from __future__ import annotations

import hashlib
import math
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from trace_assets.runtime.atomic_files import files_below
from trace_assets.runtime.progress import Progress, ProgressReporter, quiet, terminal
from trace_assets.steps.parquet_layout import published_writer, write_published_table, written_so
from trace_assets.steps.staged_rows import RowParts, iter_rows

DATA_DIR = "data"
_BUILDING = "building"  # the shards' folder until their content names it
VERSION_CHARS = 16
REWRITE_BATCH_ROWS = 256  # rows are whole conversations: a batch of them is tens of MB


def rewrite_batch_rows(max_rows_per_shard: int) -> int:
    """How many rows a rewrite reads (and hands to its transform) at a time."""
    return min(REWRITE_BATCH_ROWS, max_rows_per_shard)


def shard_count(total_rows: int, max_rows_per_shard: int) -> int:
    return max(1, math.ceil(total_rows / max_rows_per_shard))


@dataclass(frozen=True)
class ShardSet:
    files: list[str]  # relative to the run folder, e.g. data/<version>/train-00000-of-00002.parquet
    num_examples: int
    num_bytes: int  # Arrow (in-memory) size of the rows, as the Hub's dataset_info counts it
    download_size: int  # bytes of the Parquet files
    version: str  # digest of the shards' bytes, naming their folder
    data_dir: str = DATA_DIR  # the config's folder: `data`, or `data/<kind>` for a subagent kind's config

    @property
    def data_files(self) -> str:
        """The card's `data_files` pattern: this version's shards and no other's."""
        return f"{self.data_dir}/{self.version}/train-*"


def shard_name(index: int, count: int) -> str:
    return f"train-{index:05d}-of-{count:05d}.parquet"


def write_shards(
    rows: RowParts,
    out_dir: Path,
    max_rows_per_shard: int,
    transform: Callable[[pa.Table], pa.Table] | None = None,
    subset: tuple[str, int] | None = None,
    progress: Progress = quiet,
    bar: bool = True,
) -> ShardSet:
    """The staged rows as shards of at most `max_rows_per_shard` rows, in publishing order.

    Staged parts are cut the same way unless the shard size changed since: then they are copied
    as they are (unless staged before today's Parquet layout). Rows are re-encoded only to re-cut
    them, to lay them out anew, or when `transform` changes them.
    A `subset` (data folder, row count) is a part of the rows that `transform` selects, written
    under its own folder (a config of its own). `progress` gets rows done/total, and a terminal
    its bar unless `bar` is False (another phase beside this one draws its own).
    """
    data_dir, num_rows = subset or (DATA_DIR, rows.rows)
    building = out_dir / data_dir / _BUILDING
    building.mkdir(parents=True)
    reporter = ProgressReporter(
        f"published_shards {data_dir}", "rows", rows.rows, progress, bar=terminal() if bar else None
    )
    if (
        subset is None
        and transform is None
        and rows.rows_per_part == max_rows_per_shard
        and all(written_so(path) for path in rows.files)
    ):
        names = [shard_name(index, len(rows.parts)) for index in range(len(rows.parts))]
        for source, name, part in zip(rows.files, names, rows.parts):
            shutil.copyfile(source, building / name)
            reporter.advance(part.rows, "shards copied as staged")
        num_bytes = sum(part.arrow_bytes for part in rows.parts)
    else:
        names, num_bytes = _rewrite_shards(
            rows, building, max_rows_per_shard, transform or (lambda table: table), num_rows, reporter
        )
    reporter.finish()
    version = content_version(building, [building / name for name in names])
    building.rename(out_dir / data_dir / version)
    files = [f"{data_dir}/{version}/{name}" for name in names]
    download_size = sum((out_dir / f).stat().st_size for f in files)
    return ShardSet(files, num_rows, num_bytes, download_size, version, data_dir)


def content_version(base: Path, paths: list[Path]) -> str:
    """A digest of the files' paths (relative to `base`) and bytes, in order: equal files, equal version."""
    digest = hashlib.sha256()
    for path in paths:
        digest.update(f"{path.relative_to(base).as_posix()}\n".encode())
        with path.open("rb") as file:
            for block in iter(lambda: file.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()[:VERSION_CHARS]


def version_folder(folder: Path) -> str:
    """Move a folder's files into `<folder>/<version>/`, named by their content, as shards are: a
    publish puts the new version beside the old and the card names the one to read."""
    folder.mkdir(parents=True, exist_ok=True)
    names = sorted(files_below(folder), key=lambda name: name.split("/"))  # as Paths sort: part by part
    version = content_version(folder, [folder / name for name in names])
    building = folder.with_name(f"{folder.name}.{_BUILDING}")
    folder.rename(building)
    folder.mkdir()
    building.rename(folder / version)
    return version


def _rewrite_shards(
    rows: RowParts,
    out_dir: Path,
    max_rows_per_shard: int,
    transform: Callable[[pa.Table], pa.Table],
    num_rows: int,
    reporter: ProgressReporter,
) -> tuple[list[str], int]:
    count = shard_count(num_rows, max_rows_per_shard)
    files = [shard_name(i, count) for i in range(count)]
    writers: list[pq.ParquetWriter | None] = [None] * count
    num_bytes = written = 0
    try:
        for table in iter_rows(rows, batch_rows=rewrite_batch_rows(max_rows_per_shard)):
            read = table.num_rows
            table = transform(table)
            num_bytes += table.nbytes
            offset = 0
            while offset < table.num_rows:
                index = written // max_rows_per_shard
                room = max_rows_per_shard - written % max_rows_per_shard
                piece = table.slice(offset, room)
                writer = writers[index]
                if writer is None:
                    writer = writers[index] = published_writer(out_dir / files[index], piece.schema)
                writer.write_table(piece)
                offset += piece.num_rows
                written += piece.num_rows
            reporter.advance(read, "rows read (and redacted) into shards")
        for index, writer in enumerate(writers):
            if writer is None:  # an empty run still gets one shard carrying the schema
                write_published_table(transform(rows.schema.empty_table()), out_dir / files[index])
    finally:
        for writer in writers:
            if writer is not None:
                writer.close()
    return files, num_bytes
