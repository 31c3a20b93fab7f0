"""Lay out a run's dataset folder (shards, card, accounting) and put it in place as a whole.

The folder is built locally first, then replaces `<publish_root>/<run_id>/`: on a local disk by
renaming (readers see the old folder or the new one, never a mix); on object storage by
uploading the new files and then deleting the stale ones.
"""

from __future__ import annotations

import json
import shutil
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import fsspec
import pyarrow as pa
import pyarrow.parquet as pq
from fsspec.implementations.local import LocalFileSystem

from trace_assets.card import dataset_card
from trace_assets.pipeline import Coverage, shard_count
from trace_assets.row_parts import RowParts, iter_rows

DATA_DIR = "data"


@dataclass(frozen=True)
class ShardSet:
    files: list[str]  # relative to the run folder, e.g. data/train-00000-of-00002.parquet
    num_examples: int
    num_bytes: int  # Arrow (in-memory) size of the rows, as the Hub's dataset_info counts it
    download_size: int  # bytes of the Parquet files


def shard_name(index: int, count: int) -> str:
    return f"{DATA_DIR}/train-{index:05d}-of-{count:05d}.parquet"


def write_shards(
    rows: RowParts,
    out_dir: Path,
    max_rows_per_shard: int,
    transform: Callable[[pa.Table], pa.Table] | None = None,
) -> ShardSet:
    """The staged rows as shards of at most `max_rows_per_shard` rows, in publishing order.

    Staged parts are cut the same way unless the shard size changed since: then they are copied
    as they are. Rows are re-encoded only to re-cut them, or when `transform` changes them.
    """
    (out_dir / DATA_DIR).mkdir(parents=True, exist_ok=True)
    if transform is None and rows.rows_per_part == max_rows_per_shard:
        files = [shard_name(index, len(rows.parts)) for index in range(len(rows.parts))]
        for source, name in zip(rows.files, files):
            shutil.copyfile(source, out_dir / name)
        num_bytes = sum(part.arrow_bytes for part in rows.parts)
    else:
        files, num_bytes = _rewrite_shards(rows, out_dir, max_rows_per_shard, transform or (lambda table: table))
    download_size = sum((out_dir / f).stat().st_size for f in files)
    return ShardSet(files, rows.rows, num_bytes, download_size)


def _rewrite_shards(
    rows: RowParts, out_dir: Path, max_rows_per_shard: int, transform: Callable[[pa.Table], pa.Table]
) -> tuple[list[str], int]:
    count = shard_count(rows.rows, max_rows_per_shard)
    files = [shard_name(i, count) for i in range(count)]
    writers: list[pq.ParquetWriter | None] = [None] * count
    num_bytes = written = 0
    try:
        for table in iter_rows(rows, batch_rows=min(256, max_rows_per_shard)):
            table = transform(table)
            num_bytes += table.nbytes
            offset = 0
            while offset < table.num_rows:
                index = written // max_rows_per_shard
                room = max_rows_per_shard - written % max_rows_per_shard
                piece = table.slice(offset, room)
                if writers[index] is None:
                    writers[index] = pq.ParquetWriter(out_dir / files[index], piece.schema)
                writers[index].write_table(piece)
                offset += piece.num_rows
                written += piece.num_rows
        for index, writer in enumerate(writers):
            if writer is None:  # an empty run still gets one shard carrying the schema
                pq.write_table(rows.schema.empty_table(), out_dir / files[index])
    finally:
        for writer in writers:
            if writer is not None:
                writer.close()
    return files, num_bytes


def build_run_folder(
    out_dir: Path,
    rows: RowParts,
    statuses_path: Path,
    coverage: Coverage,
    scan_report: dict[str, Any],
    max_rows_per_shard: int,
    transform: Callable[[pa.Table], pa.Table] | None = None,
) -> ShardSet:
    if out_dir.exists():
        shutil.rmtree(out_dir)
    out_dir.mkdir(parents=True)
    shards = write_shards(rows, out_dir, max_rows_per_shard, transform)
    shutil.copyfile(statuses_path, out_dir / "trials.parquet")
    (out_dir / "coverage.json").write_text(json.dumps(coverage.as_dict(), indent=2) + "\n")
    (out_dir / "secret_scan.json").write_text(json.dumps(scan_report, indent=2) + "\n")
    (out_dir / "README.md").write_text(dataset_card(coverage, scan_report, shards, rows.schema))
    return shards


def replace_folder(local_dir: Path, target_url: str, storage_options: dict[str, Any] | None = None) -> None:
    """Make `target_url` hold exactly the files of `local_dir`."""
    fs, target = fsspec.core.url_to_fs(target_url, **dict(storage_options or {}))
    target = target.rstrip("/")
    if isinstance(fs, LocalFileSystem):
        _swap_local(local_dir, Path(target))
        return
    new_files = {p.relative_to(local_dir).as_posix() for p in local_dir.rglob("*") if p.is_file()}
    old_files = set()
    if fs.exists(target):
        old_files = {path[len(target) + 1 :] for path in fs.find(target)}
    # Data shards go last so a reader that sees the new card also finds its shards.
    for name in sorted(new_files, key=lambda n: (n.startswith(DATA_DIR + "/"), n)):
        fs.put_file(str(local_dir / name), f"{target}/{name}")
    stale = sorted(old_files - new_files)
    if stale:
        fs.rm([f"{target}/{name}" for name in stale])


def _swap_local(local_dir: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    incoming = target.with_name(f".{target.name}.incoming-{uuid.uuid4().hex[:8]}")
    shutil.copytree(local_dir, incoming)
    retired = target.with_name(f".{target.name}.retired-{uuid.uuid4().hex[:8]}")
    if target.exists():
        target.rename(retired)
    incoming.rename(target)
    if retired.exists():
        shutil.rmtree(retired)
