"""Session files in a scope's staging folder: written during the rows step from the trajectory
bytes it already fetched, scanned with the rows, and copied (redacted when asked) into the dataset
folder.

`sessions.json` beside the folder lists each exported trial's files, main session first, so an
unchanged trial keeps the files of the run before and a trial that is gone loses them.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa

from trace_assets.harbor.result import TrialSummary
from trace_assets.harbor.rows import CONVERSATION_TYPE
from trace_assets.harbor.sessions import SESSIONS_DIR, json_line, sessions_from_files
from trace_assets.scope import RunScope
from trace_assets.secret_scan.scanner import SecretScanner
from trace_assets.steps.staging import RunStaging, write_atomically, write_json_atomically

MANIFEST = "sessions.json"
SCAN_BATCH_SESSIONS = 64
SESSION_TRACE_SOURCE = "session"  # how the scan report names texts that came from session files
# Keys whose values are the format's own vocabulary, never trial text.
_STRUCTURAL_KEYS = frozenset({"type", "role"})
_TEXT_TABLE = pa.schema(
    [
        ("conversations", CONVERSATION_TYPE),
        ("trial_name", pa.string()),
        ("task", pa.string()),
        ("trace_source", pa.string()),
    ]
)


def staged_sessions(staging: RunStaging) -> Path:
    """The scope's staged session files, laid out as in the dataset folder (`sessions/<bucket>/...`)."""
    return staging.folder / SESSIONS_DIR


@dataclass(frozen=True)
class SessionCounts:
    sessions: int  # session files, main and subagent
    subagent_sessions: int
    bytes: int
    version: str = ""  # set when published: the content-named folder under sessions/ the card names


def read_manifest(folder: Path) -> dict[str, list[str]]:
    """trial folder -> its session files (paths in the dataset folder, main first); {} when none."""
    manifest = folder.parent / MANIFEST
    return json.loads(manifest.read_text()) if manifest.is_file() else {}


class SessionWriter:
    """Writes each exported trial's session files as the rows step goes; `close` drops the rest."""

    def __init__(self, folder: Path, harness: str = "") -> None:
        self.folder = folder
        self.harness = harness
        self._previous = read_manifest(folder)
        self._current: dict[str, list[str]] = {}

    def _local(self, path: str) -> Path:
        return self.folder.parent / path

    def has(self, trial_dir: str) -> bool:
        """The trial's files from the run before are all still there (so it need not be re-read)."""
        paths = self._previous.get(trial_dir)
        return paths is not None and all(self._local(path).is_file() for path in paths)

    def keep(self, trial_dir: str) -> None:
        self._current[trial_dir] = self._previous[trial_dir]

    def write(self, trial_dir: str, summary: TrialSummary, files: Mapping[str, bytes], scope: RunScope) -> None:
        paths = []
        for session in sessions_from_files(summary, files, scope.run_id, scope.step, self.harness):
            write_atomically(self._local(session.path), partial(Path.write_bytes, data=session.to_jsonl()))
            paths.append(session.path)
        self._current[trial_dir] = paths

    def drop(self, trial_dir: str) -> None:
        """Forget a trial written this run that ended excluded after all (its rows could not be
        stored): `close` then deletes its files, so no session is published without its row."""
        self._current.pop(trial_dir, None)

    def close(self) -> SessionCounts:
        """Delete every file no exported trial owns (gone trials, a failed run's leftovers), then
        record the manifest."""
        owned = {path for paths in self._current.values() for path in paths}
        if self.folder.exists():
            for path in sorted(self.folder.rglob("*")):
                if path.is_file() and path.relative_to(self.folder.parent).as_posix() not in owned:
                    path.unlink()
        write_json_atomically(self.folder.parent / MANIFEST, self._current)
        return session_counts(self.folder)


def session_counts(folder: Path) -> SessionCounts:
    manifest = read_manifest(folder)
    paths = [path for paths in manifest.values() for path in paths]
    return SessionCounts(
        sessions=len(paths),
        subagent_sessions=sum(len(paths) - 1 for paths in manifest.values() if paths),
        bytes=sum((folder.parent / path).stat().st_size for path in paths),
    )


# ---------------------------------------------------------------- scanning and redaction


def _strings(value: Any, found: list[tuple[Any, Any]]) -> None:
    """(container, key) of every string inside a parsed JSON line, structural keys aside."""
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        if isinstance(item, str):
            if key not in _STRUCTURAL_KEYS:
                found.append((value, key))
        else:
            _strings(item, found)


@dataclass
class _ParsedSession:
    path: str
    lines: list[dict[str, Any]]
    slots: list[tuple[Any, Any]]  # where each text sits, in the order of the scan row's messages


def _parse(folder: Path, path: str) -> _ParsedSession:
    lines = [json.loads(line) for line in (folder.parent / path).read_text().splitlines() if line]
    slots: list[tuple[Any, Any]] = []
    for line in lines:
        _strings(line, slots)
    return _ParsedSession(path, lines, slots)


def _iter_batches(folder: Path) -> Iterator[list[_ParsedSession]]:
    paths = [path for paths in read_manifest(folder).values() for path in paths]
    for start in range(0, len(paths), SCAN_BATCH_SESSIONS):
        yield [_parse(folder, path) for path in paths[start : start + SCAN_BATCH_SESSIONS]]


def _as_rows(batch: list[_ParsedSession]) -> pa.Table:
    """One row per session file, its texts as the messages of `conversations`, so the scanner and
    redaction read them the way they read the rows."""
    rows = []
    for session in batch:
        header = session.lines[0] if session.lines else {}
        rows.append(
            {
                "conversations": [{"content": container[key], "role": "text"} for container, key in session.slots],
                "trial_name": header.get("trial_name"),
                "task": header.get("task"),
                "trace_source": SESSION_TRACE_SOURCE,
            }
        )
    return pa.Table.from_pylist(rows, schema=_TEXT_TABLE)


def scan_sessions(scanner: SecretScanner, folder: Path) -> int:
    """Add every text of every staged session file to the scan; returns how many files were read."""
    scanned = 0
    for batch in _iter_batches(folder):
        scanner.scan(pl.DataFrame(_as_rows(batch)))
        scanned += len(batch)
    return scanned


def copy_sessions(folder: Path, out_dir: Path, redact: Callable[[pa.Table], pa.Table] | None = None) -> SessionCounts:
    """The staged session files into the dataset folder; with `redact`, every text goes through it."""
    if redact is None:
        if folder.exists():
            shutil.copytree(folder, out_dir / SESSIONS_DIR)
        return session_counts(folder)
    for batch in _iter_batches(folder):
        redacted = redact(_as_rows(batch)).column("conversations").to_pylist()
        for session, messages in zip(batch, redacted, strict=True):
            for (container, key), message in zip(session.slots, messages, strict=True):
                container[key] = message["content"]
            target = out_dir / session.path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text("".join(json_line(line) for line in session.lines))
    return session_counts(folder)
