"""A run's staged rows: Parquet parts of at most a shard's rows each, in publishing order.

Parts hold exactly the published columns, are cut where shards are and are written as shards are
(`publishing.parquet_layout`), so publishing copies them as they are, unless it must change rows (redaction) or the shard size has changed since.
`parts.json` lists the parts with their row counts and in-memory (Arrow) sizes, which the
dataset card reports, and a digest of the trial statuses written with them, which ties each
run of rows to its trial for incremental re-reads.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from trace_assets.runtime.atomic_files import replaced_atomically
from trace_assets.steps.parquet_layout import published_writer

MANIFEST = "parts.json"


@dataclass(frozen=True)
class RowPart:
    file: str  # inside the rows folder
    rows: int
    arrow_bytes: int


@dataclass(frozen=True)
class RowParts:
    folder: Path
    rows_per_part: int  # every part but the last holds exactly this many rows
    parts: list[RowPart]
    statuses_digest: str  # of the (trial_dir, rows) sequence the rows were written with

    @property
    def files(self) -> list[Path]:
        return [self.folder / part.file for part in self.parts]

    @property
    def rows(self) -> int:
        return sum(part.rows for part in self.parts)

    @property
    def schema(self) -> pa.Schema:
        return pq.read_schema(self.files[0])


def trial_rows_digest(trial_rows: Iterable[tuple[str, int]]) -> str:
    """Digest of which trial folder each run of rows came from, in order."""
    digest = hashlib.sha256()
    for trial_dir, rows in trial_rows:
        digest.update(f"{trial_dir}\t{rows}\n".encode())
    return digest.hexdigest()


def read_row_parts(folder: Path) -> RowParts | None:
    """The staged rows' parts, or None when there are none (never made, or an older layout)."""
    manifest = folder / MANIFEST
    if not manifest.is_file():
        return None
    data = json.loads(manifest.read_text())
    return RowParts(folder, data["rows_per_part"], [RowPart(**part) for part in data["parts"]], data["statuses_digest"])


class RowPartWriter:
    """Rows into `part-NNNNN.parquet` files of at most `rows_per_part` rows; at least one part."""

    def __init__(self, folder: Path, schema: pa.Schema, rows_per_part: int):
        self.folder = folder
        self.schema = schema
        self.rows_per_part = rows_per_part
        self.parts: list[RowPart] = []
        self.statuses_digest = ""  # set by the caller: trial_rows_digest of the statuses written alongside
        self._writer: pq.ParquetWriter | None = None
        self._rows = self._bytes = 0

    def write(self, table: pa.Table) -> None:
        offset = 0
        while offset < table.num_rows:
            writer = self._writer or self._open()
            piece = table.slice(offset, self.rows_per_part - self._rows)
            writer.write_table(piece)
            self._rows += piece.num_rows
            self._bytes += piece.nbytes
            offset += piece.num_rows
            if self._rows == self.rows_per_part:
                self._close_part()

    def close(self) -> list[RowPart]:
        if self._writer is None and not self.parts:
            self._open()  # an empty run still has a part, carrying the schema
        if self._writer is not None:
            self._close_part()
        return self.parts

    def discard(self) -> None:
        if self._writer is not None:
            self._writer.close()

    def _open(self) -> pq.ParquetWriter:
        self._writer = published_writer(self.folder / f"part-{len(self.parts):05d}.parquet", self.schema)
        self._rows = self._bytes = 0
        return self._writer

    def _close_part(self) -> None:
        if self._writer is not None:
            self._writer.close()
        self.parts.append(RowPart(f"part-{len(self.parts):05d}.parquet", self._rows, self._bytes))
        self._writer = None


@contextmanager
def staged_row_parts(folder: Path, schema: pa.Schema, rows_per_part: int) -> Iterator[RowPartWriter]:
    """Parts written into a unique temp folder and swapped in only if the step succeeds."""
    with replaced_atomically(folder) as temp:
        temp.mkdir(parents=True)
        writer = RowPartWriter(temp, schema, rows_per_part)
        try:
            yield writer
        except BaseException:
            writer.discard()
            raise
        parts = writer.close()
        manifest = {
            "rows_per_part": rows_per_part,
            "parts": [asdict(part) for part in parts],
            "statuses_digest": writer.statuses_digest,
        }
        (temp / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")


def iter_rows(parts: RowParts, batch_rows: int = 1000) -> Iterator[pa.Table]:
    """The rows in publishing order, a row group at a time: pyarrow's batch iterator reads ahead
    and holds far more."""
    for path in parts.files:
        parquet = pq.ParquetFile(path, pre_buffer=False)
        for index in range(parquet.metadata.num_row_groups):
            group = parquet.read_row_group(index, use_threads=False)
            for batch in group.to_batches(max_chunksize=batch_rows):
                yield pa.Table.from_batches([batch])
