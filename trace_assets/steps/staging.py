"""A scope's staging folder: the intermediate files between assets, how they are written, and
the lock that lets one materialization at a time touch them.

Every staged file is written to a unique temp sibling and renamed into place (`atomic_files`), so
a failed or killed step never leaves a half-written file, and two attempts never share a temp.
Whoever takes the scope's lock first removes what killed attempts left and discards staged files
that do not read back (a full disk, a hand edit), so they are rebuilt instead of failing every
later run or being published.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from trace_assets.core.scope import RunScope
from trace_assets.runtime.atomic_files import remove_leftovers, remove_path, replaced_atomically
from trace_assets.runtime.file_lock import hold_lock, holder_line
from trace_assets.steps.staged_rows import RowParts, read_row_parts
from trace_assets.steps.staging_mirror import LOCAL_RECORDS, StagingMirror

LOCKS_DIR = ".locks"  # under the staging root; hidden, so never a scope's folder
_held_locks: dict[Path, int] = {}  # scope lock files this process holds, with their nesting depth


@dataclass(frozen=True)
class RunStaging:
    """Where one scope's intermediate files live between assets: `root` is local; with a `mirror`
    it is a scratch copy, synced with the object store whenever the scope is locked."""

    root: Path
    scope: RunScope
    mirror: StagingMirror | None = None

    @property
    def folder(self) -> Path:
        return self.scope.staging_folder(self.root)

    @property
    def listing(self) -> Path:
        return self.folder / "raw_trial_listing.parquet"

    @property
    def job_results(self) -> Path:
        """The job-level `result.json` objects the listing saw (see `harbor.job_result`)."""
        return self.folder / "job_results.parquet"

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
    def scan_matches(self) -> Path:
        """The rows and session files the scan found a match in (see `steps.scan.ScannedRows`)."""
        return self.folder / "secret_scan_matches.json"

    @property
    def publish_build(self) -> Path:
        """Where the dataset folder is laid out before it is put in place."""
        return self.folder / "publish"

    @property
    def lock_file(self) -> Path:
        return self.root / LOCKS_DIR / f"{self.scope.key}.lock"

    @property
    def mirror_records(self) -> Path:
        return self.root / LOCAL_RECORDS / f"{self.scope.key}.json"

    @contextmanager
    def locked(self, log: Callable[[str], None], holder: str = "") -> Iterator[RunStaging]:
        """Hold the scope's lock (across processes; waits, logging who holds it), then tidy the folder.

        Re-entrant within a process, so the CLI can hold it for a whole run while each step takes it
        again. The lock is an flock: the kernel drops it when its process dies, even by kill -9.
        With a mirror, the outermost hold also takes the object store's lease, and every hold pulls
        the scope's files before and pushes them after a successful block (a step boundary).
        """
        lock_file = self.lock_file.absolute()
        outermost = lock_file not in _held_locks
        with ExitStack() as held:
            if outermost:
                held.enter_context(hold_lock(lock_file, self.scope.key, log, holder))
                if self.mirror is not None:
                    held.enter_context(self.mirror.leased(self.scope.key, holder_line(holder).strip(), log))
            _held_locks[lock_file] = _held_locks.get(lock_file, 0) + 1
            held.callback(_end_hold, lock_file)
            downloaded = 0
            if self.mirror is not None:
                downloaded, removed_stale = self.mirror.pull(self.scope.key, self.folder, self.mirror_records)
                if downloaded or removed_stale:
                    log(f"staging: pulled {downloaded} file(s), removed {removed_stale} from {self.mirror.url}")
            removed = remove_leftovers(self.folder)
            if removed:
                log(f"removed {len(removed)} leftover temp file(s) of interrupted attempts in {self.folder}")
            # Within a hold only this process writes the folder, each file whole or not at all, so
            # what the outermost hold found readable (or pulled since) still is: the CLI holds a run's
            # lock around its eight steps and checks, which each read every staged file's footer again.
            if outermost or downloaded:
                for path in self.discard_unreadable():
                    log(f"discarded unreadable staged file {path}; it will be rebuilt")
            yield self
            if self.mirror is not None:
                uploaded = self.mirror.push(self.scope.key, self.folder, self.mirror_records)
                if uploaded:
                    log(f"staging: pushed {uploaded} changed file(s) to {self.mirror.url}")

    def remove(self) -> None:
        """The scope's staged files, locally and in the mirror."""
        remove_path(self.folder)
        remove_path(self.mirror_records)
        if self.mirror is not None:
            self.mirror.remove(self.scope.key)

    def discard_unreadable(self) -> list[Path]:
        """Remove staged files that do not read back; each is rebuilt by the asset that makes it."""
        discarded = []
        for path in (self.listing, self.job_results, self.scored, self.statuses, self.folder / "sessions.parquet"):
            if path.exists() and not _parquet_readable(path):
                discarded.append(path)
        for path in (self.coverage, self.scan_report):
            if path.exists() and not _json_readable(path):
                discarded.append(path)
        if self.rows.exists() and not _rows_readable(self.rows):
            discarded.append(self.rows)
        for path in discarded:
            remove_path(path)
        return discarded

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
    """Write to a unique temp sibling, then rename: a failed step never leaves a half-written file."""
    with replaced_atomically(path) as temp:
        return write(temp)


def write_json_atomically(path: Path, data: Any) -> None:
    write_atomically(path, lambda temp: temp.write_text(json.dumps(data, indent=2) + "\n"))


@contextmanager
def staged_writers(*targets: tuple[Path, pa.Schema]) -> Iterator[list[pq.ParquetWriter]]:
    """Parquet writers on temp files, renamed into place together only if the step succeeds."""
    with ExitStack() as temps:
        paths = [temps.enter_context(replaced_atomically(path)) for path, _ in targets]
        writers = [pq.ParquetWriter(temp, schema) for temp, (_, schema) in zip(paths, targets)]
        try:
            yield writers
        finally:
            for writer in writers:
                writer.close()


def _end_hold(lock_file: Path) -> None:
    """One hold of a scope's lock ends; the outermost one's end lets the flock go after it."""
    _held_locks[lock_file] -= 1
    if not _held_locks[lock_file]:
        del _held_locks[lock_file]


def _parquet_readable(path: Path) -> bool:
    try:
        pq.read_metadata(path)
        return True
    except (OSError, pa.ArrowException):
        return False


def _json_readable(path: Path) -> bool:
    try:
        json.loads(path.read_text())
        return True
    except (OSError, ValueError):
        return False


def _rows_readable(folder: Path) -> bool:
    try:
        parts = read_row_parts(folder)
    except (OSError, ValueError, KeyError, TypeError):
        return False
    return parts is None or all(_parquet_readable(path) for path in parts.files)


def open_parquet(path: Path) -> pq.ParquetFile:
    """Without read-ahead buffering, which otherwise makes memory grow with the file's size."""
    return pq.ParquetFile(path, pre_buffer=False)
