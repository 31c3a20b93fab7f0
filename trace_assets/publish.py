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
from trace_assets.pipeline import Coverage, iter_rows, published_schema, shard_count

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
    rows_path: Path,
    out_dir: Path,
    max_rows_per_shard: int,
    transform: Callable[[pa.Table], pa.Table] = lambda table: table,
) -> ShardSet:
    """Stream rows (already in publishing order) into shards of at most `max_rows_per_shard` rows."""
    total = pq.ParquetFile(rows_path).metadata.num_rows
    count = shard_count(total, max_rows_per_shard)
    (out_dir / DATA_DIR).mkdir(parents=True, exist_ok=True)
    files = [shard_name(i, count) for i in range(count)]
    writers = [None] * count
    num_bytes = 0
    written = 0
    try:
        for table in iter_rows(rows_path, batch_rows=min(256, max_rows_per_shard)):
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
                pq.write_table(published_schema(rows_path).empty_table(), out_dir / files[index])
    finally:
        for writer in writers:
            if writer is not None:
                writer.close()
    download_size = sum((out_dir / f).stat().st_size for f in files)
    return ShardSet(files, written, num_bytes, download_size)


def build_run_folder(
    out_dir: Path,
    rows_path: Path,
    statuses_path: Path,
    coverage: Coverage,
    scan_report: dict[str, Any],
    max_rows_per_shard: int,
    transform: Callable[[pa.Table], pa.Table] = lambda table: table,
) -> ShardSet:
    if out_dir.exists():
        shutil.rmtree(out_dir)
    out_dir.mkdir(parents=True)
    shards = write_shards(rows_path, out_dir, max_rows_per_shard, transform)
    shutil.copyfile(statuses_path, out_dir / "trials.parquet")
    (out_dir / "coverage.json").write_text(json.dumps(coverage.as_dict(), indent=2) + "\n")
    (out_dir / "secret_scan.json").write_text(json.dumps(scan_report, indent=2) + "\n")
    (out_dir / "README.md").write_text(dataset_card(coverage, scan_report, shards, published_schema(rows_path)))
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
