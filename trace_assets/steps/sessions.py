"""Session files in a scope's staging folder: written during the rows step from the trajectory
bytes it already fetched, scanned with the rows, and copied (redacted when asked) into the dataset
folder.

`sessions.json` beside the folder lists each exported trial's files, main session first, so an
unchanged trial keeps the files of the run before and a trial that is gone loses them;
`sessions_skipped.json` names the sessions an exported trial has not (see `SessionSkip`).
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from trace_assets.harbor.result import TrialSummary
from trace_assets.harbor.rows import CONVERSATION_TYPE
from trace_assets.harbor.sessions import (
    SESSIONS_DIR,
    SessionSkip,
    SkippedSession,
    json_line,
    session_lines,
    sessions_from_files,
)
from trace_assets.scope import RunScope
from trace_assets.secret_scan.scanner import SecretScanner
from trace_assets.steps.staging import RunStaging, write_atomically, write_json_atomically

MANIFEST = "sessions.json"
SKIPPED = "sessions_skipped.json"
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
    skipped: dict[str, int] = field(default_factory=dict)  # SessionSkip -> sessions not written
    version: str = ""  # set when published: the content-named folder under sessions/ the card names


def read_manifest(folder: Path) -> dict[str, list[str]]:
    """trial folder -> its session files (paths in the dataset folder, main first); {} when none."""
    manifest = folder.parent / MANIFEST
    return json.loads(manifest.read_text()) if manifest.is_file() else {}


def read_skipped(folder: Path) -> dict[str, list[SkippedSession]]:
    """trial folder -> the sessions its files gave none of, and why; {} when none."""
    skipped = folder.parent / SKIPPED
    recorded = json.loads(skipped.read_text()) if skipped.is_file() else {}
    return {
        trial_dir: [SkippedSession(SessionSkip(item["reason"]), item["detail"]) for item in items]
        for trial_dir, items in recorded.items()
    }


class SessionWriter:
    """Writes each exported trial's session files as the rows step goes; `close` drops the rest.

    Each path belongs to one trial: a trial whose session would land on a path another trial
    already holds this run (a copied trial folder keeps its result.json's `trial_name`) gets
    none, named `session_path_taken`, and is re-read next run in case the holder is gone.
    """

    def __init__(self, folder: Path, harness: str = "") -> None:
        self.folder = folder
        self.harness = harness
        self._previous = read_manifest(folder)
        self._previous_skipped = read_skipped(folder)
        self._current: dict[str, list[str]] = {}
        self._skipped: dict[str, list[SkippedSession]] = {}
        self._owners: dict[str, str] = {}  # path -> the trial folder holding it this run

    def _local(self, path: str) -> Path:
        return self.folder.parent / path

    def has(self, trial_dir: str) -> bool:
        """The trial's files from the run before are all still there (so it need not be re-read),
        and none was refused for a path another trial held."""
        paths = self._previous.get(trial_dir)
        refused = any(s.reason is SessionSkip.PATH_TAKEN for s in self._previous_skipped.get(trial_dir, []))
        return paths is not None and not refused and all(self._local(path).is_file() for path in paths)

    def keep(self, trial_dir: str) -> list[SkippedSession]:
        """Keep the trial's files of the run before, unless a trial before it in this run wrote
        over one (a trial excluded last run, now exported): then it has none, and they are returned."""
        paths = self._previous[trial_dir]
        skipped = self._previous_skipped.get(trial_dir, [])
        taken = self._taken(trial_dir, paths)
        if taken:
            paths, skipped = [], [*skipped, *taken]
        self._claim(trial_dir, paths, skipped)
        return taken

    def write(
        self, trial_dir: str, summary: TrialSummary, files: Mapping[str, bytes], scope: RunScope
    ) -> list[SkippedSession]:
        """Write the trial's session files; returns the sessions it gets none of, and why."""
        try:
            sessions, skipped = sessions_from_files(summary, files, scope.run_id, scope.step, self.harness)
        except Exception as err:  # a shape no rule foresaw: this trial's session, not its rows
            sessions, skipped = [], [SkippedSession(SessionSkip.UNCONVERTIBLE, f"{type(err).__name__}: {err}")]
        taken = self._taken(trial_dir, [session.path for session in sessions])
        if taken:
            sessions, skipped = [], [*skipped, *taken]
        for session in sessions:
            write_atomically(self._local(session.path), partial(Path.write_bytes, data=session.to_jsonl()))
        self._claim(trial_dir, [session.path for session in sessions], skipped)
        return skipped

    def _taken(self, trial_dir: str, paths: list[str]) -> list[SkippedSession]:
        """A trial's sessions go together (the main one links the rest): a path another trial holds
        refuses them all, each named, so the figures count sessions."""
        holders = {path: owner for path in paths if (owner := self._owners.get(path, trial_dir)) != trial_dir}
        if not holders:
            return []
        return [
            SkippedSession(
                SessionSkip.PATH_TAKEN,
                f"{path} holds {holders[path]}'s session" if path in holders else f"{path} goes with a taken one",
            )
            for path in paths
        ]

    def _claim(self, trial_dir: str, paths: list[str], skipped: list[SkippedSession]) -> None:
        self._current[trial_dir] = paths
        self._owners.update(dict.fromkeys(paths, trial_dir))
        if skipped:
            self._skipped[trial_dir] = skipped

    def drop(self, trial_dir: str) -> None:
        """Forget a trial written this run that ended excluded after all (its rows could not be
        stored): `close` then deletes its files, so no session is published without its row."""
        for path in self._current.pop(trial_dir, []):
            del self._owners[path]
        self._skipped.pop(trial_dir, None)

    def close(self) -> SessionCounts:
        """Delete every file no exported trial owns (gone trials, a failed run's leftovers), then
        record the manifest and the skipped sessions."""
        if self.folder.exists():
            for path in sorted(self.folder.rglob("*")):
                if path.is_file() and path.relative_to(self.folder.parent).as_posix() not in self._owners:
                    path.unlink()
        skipped = {
            trial_dir: [{"reason": s.reason.value, "detail": s.detail} for s in items]
            for trial_dir, items in self._skipped.items()
        }
        write_json_atomically(self.folder.parent / SKIPPED, skipped)
        write_json_atomically(self.folder.parent / MANIFEST, self._current)
        return session_counts(self.folder)


def session_counts(folder: Path) -> SessionCounts:
    manifest = read_manifest(folder)
    paths = [path for paths in manifest.values() for path in paths]
    skipped = Counter(s.reason.value for items in read_skipped(folder).values() for s in items)
    return SessionCounts(
        sessions=len(paths),
        subagent_sessions=sum(len(paths) - 1 for paths in manifest.values() if paths),
        bytes=sum((folder.parent / path).stat().st_size for path in paths),
        skipped=dict(sorted(skipped.items())),
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
    lines = session_lines((folder.parent / path).read_bytes())
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
        texts = _as_rows(batch)
        redacted = redact(texts)
        changed = _changed_rows(texts, redacted)
        for index, session in enumerate(batch):
            target = out_dir / session.path
            target.parent.mkdir(parents=True, exist_ok=True)
            if index not in changed:  # nothing replaced: the staged bytes are what writing it would give
                shutil.copyfile(folder.parent / session.path, target)
                continue
            messages = redacted.column("conversations")[index].as_py()
            for (container, key), message in zip(session.slots, messages, strict=True):
                container[key] = message["content"]
            target.write_text("".join(json_line(line) for line in session.lines))
    return session_counts(folder)


def _changed_rows(before: pa.Table, after: pa.Table) -> set[int]:
    """The rows (sessions) in which redaction replaced a text: only those are decoded and written
    again, the rest copied (most sessions of a run hold no finding)."""
    old, new = (table.column("conversations").combine_chunks() for table in (before, after))
    differs = pc.not_equal(old.flatten().field("content"), new.flatten().field("content"))
    return set(pc.filter(pc.list_parent_indices(old), differs).to_pylist())
