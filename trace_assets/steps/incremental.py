"""Incremental re-reads: a fingerprint per trial, and the last materialization's records and rows.

A trial whose source objects are unchanged since the last materialization is not fetched again:
its records and rows are carried over, in publishing order.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from itertools import islice
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from trace_assets.steps.listing import ListedTrial
from trace_assets.steps.staged_rows import RowParts, iter_rows, read_row_parts, trial_rows_digest
from trace_assets.store.objects import StoredObject

PARSER_VERSION = "2"  # bump when parsing changes, so cached results are not reused


def fingerprint(objects: Iterable[StoredObject], *salt: object) -> str:
    """Identity of a set of objects as listed (key, size, ETag or local inode and ctime, modification time)."""
    digest = hashlib.sha256(PARSER_VERSION.encode())
    for item in salt:
        digest.update(f"|{item}".encode())
    for obj in sorted(objects, key=lambda o: o.key):
        modified = obj.modified.isoformat() if obj.modified else ""
        digest.update(f"\n{obj.key}|{obj.size}|{obj.etag or ''}|{modified}".encode())
    return digest.hexdigest()[:32]


def listed_objects(trial: ListedTrial, keys: Iterable[str]) -> list[StoredObject]:
    return [trial.objects[key] for key in keys if key in trial.objects]


def previous_records(path: Path, required_column: str) -> dict[str, dict[str, Any]]:
    """Last materialization's per-trial records (small: one per folder), if compatible."""
    if not path.exists():
        return {}
    table = pq.read_table(path)
    if required_column not in table.column_names:
        return {}
    return {record["trial_dir"]: record for record in table.to_pylist()}


class PreviousRows:
    """Streams the last materialization's rows, grouped by trial, in publishing order.

    Its statuses say how many rows each trial had, in the same order; the rows are used only
    if they were written with exactly those statuses.
    """

    def __init__(self, folder: Path, statuses: dict[str, dict[str, Any]], schema: pa.Schema):
        parts = read_row_parts(folder)
        trial_rows = [(status["trial_dir"], status["rows"]) for status in statuses.values()]
        usable = parts is not None and parts.statuses_digest == trial_rows_digest(trial_rows) and parts.schema == schema
        self.available = usable
        self._groups = self._read(parts, statuses) if parts is not None and usable else iter(())
        self._current: tuple[tuple[str, str], list[dict[str, Any]]] | None = next(self._groups, None)

    @staticmethod
    def _read(
        parts: RowParts, statuses: dict[str, dict[str, Any]]
    ) -> Iterator[tuple[tuple[str, str], list[dict[str, Any]]]]:
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
