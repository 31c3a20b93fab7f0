"""Session files in a scope's staging folder: made during the rows step from the trajectories it
already parsed, staged as Parquet (`sessions.parquet`: each file's texts and the JSON around them,
see `SlottedText`, in batches), scanned with the rows without parsing JSON again, and written
(redacted when asked) straight into the dataset folder at publish time.

`sessions.json` beside the store lists each exported trial's files, main session first, so an
unchanged trial keeps the files of the run before and a trial that is gone loses them;
`sessions_skipped.json` names the sessions an exported trial has not (see `SessionSkip`).
"""

from __future__ import annotations

import bisect
import itertools
import json
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from trace_assets.harbor.rows import CONVERSATION_TYPE
from trace_assets.harbor.sessions import (
    LINE_BREAKS,
    SESSIONS_DIR,
    SLOT,
    SessionSkip,
    SkippedSession,
    SlottedText,
)
from trace_assets.runtime.ahead import mapped_ahead, threads_for
from trace_assets.runtime.atomic_files import remove_path, temp_sibling
from trace_assets.runtime.progress import Progress, ProgressReporter, quiet, terminal
from trace_assets.secret_scan.scanner import Replaceable, ScanRows, SecretScanner
from trace_assets.steps.staging import RunStaging, write_json_atomically
from trace_assets.steps.trial_rows import STORE_SCHEMA

MANIFEST = "sessions.json"
SKIPPED = "sessions_skipped.json"
STORE = "sessions.parquet"
SCAN_BATCH_SESSIONS = 64  # redaction replaces, in a batch, every text a finding of the batch names
SCAN_GROUP_BATCHES = 8  # batches the scan reads at once (see `_ScanGroup`): 64 a read took 2.3x the time of 512
SESSION_TRACE_SOURCE = "session"  # how the scan report names texts that came from session files
_TEXT_TABLE = pa.schema(
    [
        ("conversations", CONVERSATION_TYPE),
        ("trial_name", pa.string()),
        ("task", pa.string()),
        ("trace_source", pa.string()),
    ]
)
# Staging only (never published): texts are mostly distinct and long, so no dictionary and no
# min/max statistics (which would copy a whole text into the footer); LZ4 decodes faster than Snappy.
STORE_WRITE_OPTIONS: dict[str, Any] = {"use_dictionary": False, "write_statistics": False, "compression": "lz4"}


def staged_sessions(staging: RunStaging) -> Path:
    """Where a scope's sessions are staged: `<folder>.parquet` is the store, manifests beside it.
    (The folder itself held one file per session before the store; it is removed when found.)"""
    return staging.folder / SESSIONS_DIR


def store_path(folder: Path) -> Path:
    return folder.parent / STORE


@dataclass(frozen=True)
class SessionCounts:
    sessions: int  # session files, main and subagent
    subagent_sessions: int
    bytes: int  # of the files as staged (unredacted); known once written, at publish time
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


class _PreviousStore:
    """The store of the run before, read a row group at a time for the trials kept from it."""

    def __init__(self, path: Path) -> None:
        self._file: pq.ParquetFile | None = None
        self._where: dict[str, tuple[int, list[int]]] = {}  # trial_dir -> (row group, rows)
        self._paths: dict[str, set[str]] = {}
        self._group: tuple[int, pa.Table] | None = None
        if not path.is_file():
            return
        try:
            self._file = pq.ParquetFile(path, pre_buffer=False)
            if self._file.schema_arrow != STORE_SCHEMA:
                self._file = None
                return
            for group in range(self._file.metadata.num_row_groups):
                ids = self._file.read_row_group(group, columns=["trial_dir", "path"], use_threads=False)
                for index, (trial_dir, path_) in enumerate(zip(*(ids.column(n).to_pylist() for n in ids.column_names))):
                    self._where.setdefault(trial_dir, (group, []))[1].append(index)
                    self._paths.setdefault(trial_dir, set()).add(path_)
        except (OSError, pa.ArrowException):
            self._file, self._where, self._paths = None, {}, {}

    def holds(self, trial_dir: str, paths: list[str]) -> bool:
        return set(paths) == self._paths.get(trial_dir, set())

    def take(self, trial_dir: str) -> pa.Table | None:
        if self._file is None or trial_dir not in self._where:
            return None
        group, rows = self._where[trial_dir]
        if self._group is None or self._group[0] != group:
            self._group = (group, self._file.read_row_group(group, use_threads=False))
        return self._group[1].take(rows)


class SessionWriter:
    """Stages each exported trial's session files as the rows step goes, a batch at a time
    (`take_batch`, `write_batch`); `close` puts the store in place and records the manifests.

    Each path belongs to one trial: a trial whose session would land on a path another trial
    already holds this run (a copied trial folder keeps its result.json's `trial_name`) gets
    none, named `session_path_taken`, and is re-read next run in case the holder is gone.
    """

    def __init__(self, folder: Path, harness: str = "") -> None:
        self.folder = folder
        self.harness = harness
        self._previous = read_manifest(folder)
        self._previous_skipped = read_skipped(folder)
        self._previous_store = _PreviousStore(store_path(folder))
        self._current: dict[str, list[str]] = {}
        self._skipped: dict[str, list[SkippedSession]] = {}
        self._owners: dict[str, str] = {}  # path -> the trial folder holding it this run
        self._pending: list[tuple[str, pa.Table]] = []  # this batch, in order
        self._temp = temp_sibling(store_path(folder))
        self._writer: pq.ParquetWriter | None = None

    def has(self, trial_dir: str) -> bool:
        """The trial's files from the run before are all still staged (so it need not be re-read),
        and none was refused for a path another trial held."""
        paths = self._previous.get(trial_dir)
        refused = any(s.reason is SessionSkip.PATH_TAKEN for s in self._previous_skipped.get(trial_dir, []))
        return paths is not None and not refused and self._previous_store.holds(trial_dir, paths)

    def keep(self, trial_dir: str) -> list[SkippedSession]:
        """Keep the trial's files of the run before, unless a trial before it in this run wrote
        over one (a trial excluded last run, now exported): then it has none, and they are returned."""
        paths = self._previous[trial_dir]
        skipped = self._previous_skipped.get(trial_dir, [])
        taken = self._taken(trial_dir, paths)
        if taken:
            paths, skipped = [], [*skipped, *taken]
        elif paths:
            kept = self._previous_store.take(trial_dir)
            if kept is not None:
                self._pending.append((trial_dir, kept))
        self._claim(trial_dir, paths, skipped)
        return taken

    def add(
        self, trial_dir: str, paths: list[str], skipped: list[SkippedSession], records: pa.Table
    ) -> list[SkippedSession]:
        """Stage an exported trial's session files (`records`, made by `trial_rows.export_slice`, one
        per path); returns the sessions it gets none of, and why."""
        taken = self._taken(trial_dir, paths)
        if taken:
            paths, skipped = [], [*skipped, *taken]
        elif records.num_rows:
            self._pending.append((trial_dir, records))
        self._claim(trial_dir, paths, skipped)
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
        """Forget a trial of the current batch that ended excluded after all (its rows could not be
        stored): its sessions are not staged, so no session is published without its row."""
        for path in self._current.pop(trial_dir, []):
            del self._owners[path]
        self._skipped.pop(trial_dir, None)
        self._pending = [(owner, item) for owner, item in self._pending if owner != trial_dir]

    def take_batch(self) -> pa.Table | None:
        """The sessions of the batch so far, for `write_batch` (which may run in another thread):
        each batch is a row group of the store."""
        tables = [table for _, table in self._pending]
        self._pending = []
        return pa.concat_tables(tables) if tables else None

    def write_batch(self, table: pa.Table | None) -> None:
        if table is None:
            return
        if self._writer is None:
            self._temp.parent.mkdir(parents=True, exist_ok=True)
            self._writer = pq.ParquetWriter(self._temp, STORE_SCHEMA, **STORE_WRITE_OPTIONS)
        self._writer.write_table(table)

    def discard(self) -> None:
        """The step failed: the staged store of the run before stays as it was."""
        if self._writer is not None:
            self._writer.close()
        remove_path(self._temp)

    def close(self) -> SessionCounts:
        """Put the store in place (the run before's files of gone trials are not in it), then
        record the manifest and the skipped sessions."""
        self.write_batch(self.take_batch())
        if self._writer is None:
            self._writer = pq.ParquetWriter(
                self._temp, STORE_SCHEMA, **STORE_WRITE_OPTIONS
            )  # no session: an empty store
        self._writer.close()
        self._temp.replace(store_path(self.folder))
        if self.folder.exists():  # the one-file-per-session staging of earlier versions
            remove_path(self.folder)
        skipped = {
            trial_dir: [{"reason": s.reason.value, "detail": s.detail} for s in items]
            for trial_dir, items in self._skipped.items()
        }
        write_json_atomically(self.folder.parent / SKIPPED, skipped)
        write_json_atomically(self.folder.parent / MANIFEST, self._current)
        return session_counts(self.folder)


def session_counts(folder: Path, size: int = 0) -> SessionCounts:
    manifest = read_manifest(folder)
    skipped = Counter(s.reason.value for items in read_skipped(folder).values() for s in items)
    return SessionCounts(
        sessions=sum(len(paths) for paths in manifest.values()),
        subagent_sessions=sum(len(paths) - 1 for paths in manifest.values() if paths),
        bytes=size,
        skipped=dict(sorted(skipped.items())),
    )


# ---------------------------------------------------------------- reading the store


def iter_staged(folder: Path, batch_sessions: int = SCAN_BATCH_SESSIONS, ahead: int = 0) -> Iterator[pa.Table]:
    """The staged sessions the manifest names, in its order (trials in publishing order, main
    session first), `batch_sessions` at a time; `ahead` row groups are read early in a thread
    (pyarrow reads and decodes with the GIL released)."""
    wanted = {path for paths in read_manifest(folder).values() for path in paths}
    store = store_path(folder)
    if not wanted or not store.is_file():
        return
    parquet = pq.ParquetFile(store, pre_buffer=False)
    pending: list[pa.Table] = []
    held = 0
    groups = range(parquet.metadata.num_row_groups)
    for _, table in mapped_ahead(groups, lambda group: parquet.read_row_group(group, use_threads=False), ahead):
        keep = [path in wanted for path in table.column("path").to_pylist()]  # a set: no hash table per group
        if not all(keep):
            table = table.filter(pa.array(keep, pa.bool_()))
        offset = 0
        while offset < table.num_rows:
            piece = table.slice(offset, batch_sessions - held)
            pending.append(piece)
            held += piece.num_rows
            offset += piece.num_rows
            if held == batch_sessions:
                yield pa.concat_tables(pending).combine_chunks()
                pending, held = [], 0
    if held:
        yield pa.concat_tables(pending).combine_chunks()


def staged_session_files(folder: Path) -> Iterator[tuple[str, bytes]]:
    """(path, bytes) of every staged session file, as it would be published unredacted."""
    for batch in iter_staged(folder):
        for path, skeleton, texts in zip(*(batch.column(c).to_pylist() for c in ("path", "skeleton", "texts"))):
            yield path, SlottedText(skeleton, texts).jsonl().encode()


def _as_rows(batch: pa.Table, left_out: pa.Array | None = None) -> pa.Table:
    """One row per session file, its texts as the messages of `conversations`, so the scanner and
    redaction read them the way they read the rows; a text `left_out` marks is null (unread, its
    message keeping its place)."""
    texts = batch.column("texts").combine_chunks()
    values = pc.list_flatten(texts)
    if left_out is not None:
        values = pc.if_else(left_out, pa.scalar(None, pa.string()), values)
    roles = pa.array(["text"] * len(values), pa.string())
    messages = pa.StructArray.from_arrays([values, roles], fields=list(CONVERSATION_TYPE.value_type))
    conversations = pa.ListArray.from_arrays(texts.offsets, messages)
    trace_source = pa.array([SESSION_TRACE_SOURCE] * batch.num_rows, pa.string())
    columns = [conversations, batch.column("trial_name"), batch.column("task"), trace_source]
    return pa.Table.from_arrays(columns, schema=_TEXT_TABLE)


@dataclass
class _ScanGroup:
    """Consecutive batches (`iter_staged`'s) the scan reads as one: most of a session's texts are
    its rows' and left out, so one batch is searched in a fraction of a batch of rows' time, and
    each polars call's set-up (a regex compiled, its DFA cold) would dominate it. Findings are
    still recorded per batch, the unit publishing redacts in."""

    tables: list[pa.Table]  # emptied once read: a group waiting for its tally holds none
    sizes: list[int]  # sessions per batch

    def __len__(self) -> int:
        return sum(self.sizes)

    def found_per_batch(self, found: list[Replaceable], rows: list[int], first_row_id: int) -> list[list[Replaceable]]:
        """`found` (a scan of the group, `rows` the row id of each, the group's rows numbered from
        `first_row_id`) split by the batch it is in."""
        starts = list(itertools.accumulate(self.sizes, initial=first_row_id))
        per_batch: list[list[Replaceable]] = [[] for _ in self.sizes]
        for match, row_id in zip(found, rows, strict=True):
            per_batch[bisect.bisect_right(starts, row_id) - 1].append(match)
        return per_batch


def _scan_groups(folder: Path) -> Iterator[_ScanGroup]:
    batches = iter_staged(folder)
    while tables := list(itertools.islice(batches, SCAN_GROUP_BATCHES)):
        yield _ScanGroup(tables, [table.num_rows for table in tables])


def scan_sessions(
    scanner: SecretScanner,
    folder: Path,
    progress: Progress = quiet,
    candidates: set[str] | None = None,
    found: Callable[[int, list[Replaceable]], None] | None = None,
    workers: int = 1,
) -> int:
    """Add every text of every staged session file to the scan; returns how many files were read.

    With `candidates` (every text of the rows the scanner's prefilter let through, the rows
    scanned), a text staged as the very string of one of its trial's rows' texts and not among
    them holds nothing to find: it is left out, counted as scanned (`ScanRows.known_clean_bytes`).
    `found` is told what the scan found in each batch (`iter_staged`'s), by its index; `workers`
    groups of batches are read and searched at once (`SecretScanner.scan_batches`)."""
    scanned = 0
    total = session_counts(folder).sessions
    reporter = ProgressReporter("secret_scan_report", "session files", total, progress, bar=terminal())
    known = pa.array(sorted(candidates), pa.string()) if candidates is not None else None

    def read(batch: pa.Table) -> ScanRows:
        if known is None:
            return ScanRows(pl.DataFrame(_as_rows(batch)))
        values = pc.list_flatten(batch.column("texts").combine_chunks())
        in_rows = pc.list_flatten(batch.column("in_rows").combine_chunks())
        left_out = pc.and_(in_rows, pc.invert(pc.is_in(values, value_set=known)))
        left_out_bytes = pc.sum(pc.binary_length(pc.filter(values, left_out))).as_py() or 0
        return ScanRows(pl.DataFrame(_as_rows(batch, left_out)), left_out_bytes)

    def read_group(group: _ScanGroup) -> ScanRows:
        parts = [read(batch) for batch in group.tables]
        group.tables.clear()
        return ScanRows(pl.concat([part.rows for part in parts]), sum(part.known_clean_bytes for part in parts))

    index = 0
    threads = threads_for(total, SCAN_GROUP_BATCHES * SCAN_BATCH_SESSIONS, workers)
    for group, first_row_id in scanner.scan_batches(_scan_groups(folder), read_group, threads):
        for in_batch in group.found_per_batch(scanner.last_found, scanner.last_found_rows, first_row_id):
            if found is not None:
                found(index, in_batch)
            index += 1
        scanned += len(group)
        reporter.advance(len(group))
    reporter.finish()
    return scanned


def copy_sessions(
    folder: Path,
    out_dir: Path,
    redact: Callable[[pa.Table], pa.Table] | None = None,
    progress: Progress = quiet,
    workers: int = 1,
) -> SessionCounts:
    """The staged session files, written into the dataset folder (a build folder published whole,
    so each file is written in place); with `redact`, every text goes through it.

    With `workers` > 1 the store is read a row group ahead in a thread."""
    counts = session_counts(folder)  # the manifests read once, not again at the end
    reporter = ProgressReporter("published_shards", "session files", counts.sessions, progress, bar=terminal())
    size = 0
    file_writer = FileWriter()
    for batch in iter_staged(folder, ahead=1 if workers > 1 else 0):
        redacted_texts: dict[int, list[str]] = {}
        if redact is not None:
            texts = _as_rows(batch)
            redacted = redact(texts)
            changed = _changed_rows(texts, redacted) if redacted is not texts else set()
            if changed:
                redacted_column = pc.list_flatten(redacted.column("conversations").combine_chunks()).field("content")
                offsets = batch.column("texts").combine_chunks().offsets.to_pylist()
                redacted_texts = {
                    i: redacted_column.slice(offsets[i], offsets[i + 1] - offsets[i]).to_pylist() for i in changed
                }
        contents = session_file_bytes(batch)
        size += sum(map(len, contents))  # the card counts the files as staged, redaction aside
        for index, texts in redacted_texts.items():
            skeleton = batch.column("skeleton")[index].as_py()
            contents[index] = SlottedText(skeleton, texts).jsonl().encode()
        files = [(out_dir / path, data) for path, data in zip(batch.column("path").to_pylist(), contents)]
        file_writer.write(files)
        reporter.advance(batch.num_rows)
    reporter.finish()
    return replace(counts, bytes=size)


class FileWriter:
    """Writes files, each folder made once; a file that cannot be written is named in the error."""

    def __init__(self) -> None:
        self._made: set[Path] = set()

    def write(self, files: list[tuple[Path, bytes]]) -> None:
        for target, data in files:
            try:
                if target.parent not in self._made:
                    target.parent.mkdir(parents=True, exist_ok=True)
                    self._made.add(target.parent)
                with open(target, "wb") as file:
                    file.write(data)
            except OSError as err:
                raise OSError(err.errno, f"{err.strerror} (writing {target.name})", str(target)) from err


_ESCAPED_LINE_BREAKS = [f"\\u{ord(char):04x}" for char in LINE_BREAKS]


def session_file_bytes(batch: pa.Table) -> list[bytes]:
    """Each staged session's file, byte for byte `SlottedText.jsonl`, built a batch at a time in
    Arrow and polars (which release the GIL, so the shards' thread goes on):
    polars' JSON encoding of a string is json's own `encode_basestring` on every code point.
    Making each text a Python string first took most of publishing's session phase."""
    texts = batch.column("texts").combine_chunks()
    pieces = pc.split_pattern(batch.column("skeleton").combine_chunks(), SLOT)
    strings = pl.Series("t", texts.flatten(), dtype=pl.String)
    encoded = strings.to_frame().select(pl.struct("t").struct.json_encode().str.slice(5).str.head(-1))
    # per session: piece 0, text 0, piece 1, ..., text n-1, piece n; its texts come after every piece
    text_counts = pc.list_value_length(texts).to_numpy(zero_copy_only=False).astype(np.int64)
    piece_at = pieces.offsets.to_numpy().astype(np.int64)[:-1]
    text_at = texts.offsets.to_numpy().astype(np.int64)[:-1] - texts.offsets[0].as_py() + len(pieces.values)
    lengths = 2 * text_counts + 1
    line_at = np.concatenate([[0], np.cumsum(lengths)])
    session = np.repeat(np.arange(len(lengths)), lengths)
    place = np.arange(line_at[-1]) - line_at[:-1][session]
    order = np.where(place % 2 == 0, piece_at[session] + place // 2, text_at[session] + place // 2)
    parts = pa.concat_arrays(
        [pieces.values.cast(pa.large_string()), encoded.to_series().to_arrow().cast(pa.large_string())]
    )
    lines = pc.binary_join(
        pa.LargeListArray.from_arrays(pa.array(line_at), parts.take(pa.array(order))), pa.scalar("", pa.large_string())
    )
    escaped = pl.Series(lines).str.replace_many(list(LINE_BREAKS), _ESCAPED_LINE_BREAKS)
    return escaped.cast(pl.Binary).to_list()


def _changed_rows(before: pa.Table, after: pa.Table) -> set[int]:
    """The rows (sessions) in which redaction replaced a text: only those are written from the
    redacted texts (most sessions of a run hold no finding)."""
    old, new = (table.column("conversations").combine_chunks() for table in (before, after))
    differs = pc.not_equal(old.flatten().field("content"), new.flatten().field("content"))
    return set(pc.filter(pc.list_parent_indices(old), differs).to_pylist())
