"""A scope's staging folder: the intermediate files between assets, and how they are written.

Every staged file is written to a temp sibling and renamed into place, so a failed step never
leaves a half-written file for the next one to read.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from trace_assets.scope import RunScope
from trace_assets.steps.staged_rows import RowParts, read_row_parts


@dataclass(frozen=True)
class RunStaging:
    """Where one scope's intermediate files live between assets."""

    root: Path
    scope: RunScope

    @property
    def folder(self) -> Path:
        return self.scope.staging_folder(self.root)

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
        return self.folder / "last_episode_rows"  # Parquet parts, see staged_rows

    @property
    def coverage(self) -> Path:
        return self.folder / "coverage.json"

    @property
    def scan_report(self) -> Path:
        return self.folder / "secret_scan.json"

    @property
    def publish_build(self) -> Path:
        """Where the dataset folder is laid out before it is put in place."""
        return self.folder / "publish"

    def require(self, path: Path, made_by: str) -> Path:
        if not path.exists():
            raise FileNotFoundError(f"{path} is missing: materialize {made_by} for run {self.scope.key!r} first")
        return path

    def read_json(self, path: Path, made_by: str) -> Any:
        """A staged JSON file, or an error naming the asset that makes it."""
        return json.loads(self.require(path, made_by).read_text())

    def require_rows(self) -> RowParts:
        parts = read_row_parts(self.rows)
        if parts is None:
            raise FileNotFoundError(
                f"{self.rows} is missing: materialize last_episode_rows for run {self.scope.key!r} first"
            )
        return parts


def write_atomically(path: Path, write: Callable[[Path], Any]) -> Any:
    """Write to a sibling temp file, then rename: a failed step never leaves a half-written file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f".{path.name}.partial")
    result = write(temp)
    temp.replace(path)
    return result


def write_json_atomically(path: Path, data: Any) -> None:
    write_atomically(path, lambda temp: temp.write_text(json.dumps(data, indent=2) + "\n"))


@contextmanager
def staged_writers(*targets: tuple[Path, pa.Schema]) -> Iterator[list[pq.ParquetWriter]]:
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


def open_parquet(path: Path) -> pq.ParquetFile:
    """Without read-ahead buffering, which otherwise makes memory grow with the file's size."""
    return pq.ParquetFile(path, pre_buffer=False)
