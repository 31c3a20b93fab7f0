"""The optional raw-tree scan: every object under a scope's prefix, not only the published fields.

The row scan reads what is published (the rows and session files); the raw tree also holds what
never is (every episode's prompt files, logs, whatever the sandbox copied back), where a leaked
key says the rows' redaction is not the whole story. Objects are read through the `TraceStore`
(links never followed, nothing outside the traces root), small ones in concurrent batches, large
ones in chunks of `chunk_bytes` up to their listed size. Each chunk's text starts `MARGIN_CHARS`
plus `overlap_chars` characters before the chunk's own: a match counts in the text where it starts
inside the counted part, `[margin, len - overlap)` (the first text from 0, the last to its end), so
each is counted exactly once, whole (a secret is shorter than the overlap), with its keyword and
the character before it (`\b` sees what the file holds): every kind's context before its value is
bounded, as a test measures from the regexes, and the margin holds it even written in the most
expanded form the scanner reads back (JSON escaped twice). An object gone or refused at
read time is skipped, named so; one refused after some of its chunks is listed as partially
scanned, with what its scanned chunks held. An object with a NUL byte in its first bytes is binary
and skipped, named so; a large one with a long run of NUL bytes further on (a sparse hole, zero
padding: 64 KiB) is scanned up to it and read no further (partially scanned, `binary`), so a
padded file is not read to its listed size; a stray NUL byte is text. Bytes that are not
UTF-8 are scanned as U+FFFD and counted.
"""

from __future__ import annotations

import codecs
from collections.abc import Iterator
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import polars as pl

from trace_assets.core.accounting import Exclusion, Reason
from trace_assets.core.scope import RunScope
from trace_assets.harbor.trial_files import TRIAL_SUBFOLDERS
from trace_assets.runtime.progress import Progress, ProgressReporter, quiet
from trace_assets.secret_scan.scanner import FINDINGS_CAP, TEXT_SCHEMA, ScanOptions, SecretScanner
from trace_assets.store.local_walk import EntryKind
from trace_assets.store.trace_store import FetchError, TraceStore

RAW_SCAN_REPORT = "raw_secret_scan.json"  # in the scope's staging folder
CHUNK_BYTES = 4 * 2**20  # an object larger than this is read a chunk at a time
OVERLAP_CHARS = 64 * 1024  # longer than any secret the kinds match (a 16k-bit RSA PEM is about 12 KB)
# Longer than any kind's context before its value (bounded in kinds.py: 800 characters as matched)
# as the file may hold it: JSON escaped twice, a character can take up to 11 (`\\u005cu0041`).
MARGIN_CHARS = 16384
BATCH_BYTES = 32 * 2**20  # small objects fetched, and text held, before a scan
BINARY_SNIFF_BYTES = 8192  # as git does: a NUL byte in the first 8 KiB means binary
HOLE_BYTES = 64 * 1024  # a run of NUL bytes this long (a quarter chunk at most) is a sparse hole, not text
RAW_COLUMN = "object"  # the scanner's `column` for a raw text; its `trace_source` holds the object key


class RawSkip(StrEnum):
    """Why an object under the prefix was not scanned."""

    LINK = "link"  # a symbolic link, listed or met at read time: never followed
    SPECIAL = "special"  # a FIFO, socket or device: never opened
    UNREADABLE = "unreadable"  # a folder that cannot be entered, or a file that cannot be read
    UNDECODABLE_NAME = "undecodable_name"  # a name that is not UTF-8
    BINARY = "binary"  # a NUL byte in its first 8 KiB (partly scanned: a run of them further on)


_LISTED = {
    EntryKind.LINK: RawSkip.LINK,
    EntryKind.SPECIAL: RawSkip.SPECIAL,
    EntryKind.UNREADABLE: RawSkip.UNREADABLE,
    EntryKind.UNDECODABLE_NAME: RawSkip.UNDECODABLE_NAME,
}
_REFUSED = {Reason.UNSAFE_LINK: RawSkip.LINK, Reason.NOT_A_FILE: RawSkip.SPECIAL, Reason.UNREADABLE: RawSkip.UNREADABLE}


def _folder_of(key: str) -> str | None:
    """The folder an object belongs to: its trial's when it lies in `agent/` or `verifier/`."""
    parts = key.split("/")[:-1]
    for index, part in enumerate(parts):
        if part in TRIAL_SUBFOLDERS:
            parts = parts[:index]
            break
    return parts[-1] if parts else None


class _Utf8:
    """UTF-8 across chunk boundaries; bytes that are not UTF-8 become U+FFFD and mark the object."""

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")("strict")
        self.repaired = False

    def decode(self, data: bytes, final: bool) -> str:
        state = self._decoder.getstate()
        try:
            return self._decoder.decode(data, final)
        except UnicodeDecodeError:
            self.repaired = True
            self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
            self._decoder.setstate(state)
            return self._decoder.decode(data, final)


@dataclass
class _PendingTexts:
    """Texts waiting for the next scan; a chunk's matches that start in its last overlap are the next chunk's."""

    rows: list[tuple[int, str | None, None, str, str, int, str]] = field(default_factory=list)
    counted: dict[int, tuple[int, int | None]] = field(default_factory=dict)
    chars: int = 0


class RawTreeScan:
    """One scan of a scope's raw tree; `run` streams it and returns the report."""

    def __init__(
        self,
        store: TraceStore,
        scope: RunScope,
        options: ScanOptions,
        chunk_bytes: int = CHUNK_BYTES,
        overlap_chars: int = OVERLAP_CHARS,
        batch_bytes: int = BATCH_BYTES,
    ) -> None:
        self.store, self.scope = store, scope
        self.chunk_bytes, self.overlap_chars, self.batch_bytes = chunk_bytes, overlap_chars, batch_bytes
        self._hole = b"\0" * min(HOLE_BYTES, chunk_bytes // 4)
        self._scanner = SecretScanner(scope.key, options)
        self._pending = _PendingTexts()
        self._objects = 0  # listed, skipped or not: each gets a row id
        self._scanned = self._bytes = self._chunks = self._not_utf8 = 0
        self._skipped: dict[str, int] = {}
        self._skipped_objects: list[dict[str, str]] = []
        self._partial: dict[str, int] = {}
        self._partial_objects: list[dict[str, Any]] = []

    def run(self, progress: Progress | None = None) -> dict[str, Any]:
        reporter = ProgressReporter("raw_secret_scan", "objects", None, progress or quiet)
        small: list[tuple[int, str]] = []
        small_bytes = 0
        for page in self.store.iter_run(self.scope):
            for position, (key, size) in enumerate(zip(page.keys, page.sizes)):
                row_id = self._objects
                self._objects += 1
                if position in page.skipped:
                    self._skip(key, _LISTED[EntryKind(page.skipped[position])])
                elif size > self.chunk_bytes:
                    self._stream(row_id, key, size)
                else:
                    small.append((row_id, key))
                    small_bytes += size
                    if small_bytes >= self.batch_bytes:
                        self._fetch(small)
                        small, small_bytes = [], 0
            reporter.advance(len(page))
        self._fetch(small)
        self._flush()
        reporter.total = reporter.done
        reporter.finish()
        return self.report()

    def _skip(self, key: str, reason: RawSkip) -> None:
        self._skipped[reason] = self._skipped.get(reason, 0) + 1
        if len(self._skipped_objects) < FINDINGS_CAP:
            self._skipped_objects.append({"object": key, "reason": str(reason)})

    def _partially(self, key: str, reason: RawSkip, bytes_scanned: int) -> None:
        """An object refused after some of its chunks: what those held stays in the report, named so."""
        self._partial[reason] = self._partial.get(reason, 0) + 1
        if len(self._partial_objects) < FINDINGS_CAP:
            self._partial_objects.append({"object": key, "reason": str(reason), "bytes_scanned": bytes_scanned})

    def _fetch_gone_skipped(self, keys: list[str]) -> dict[str, bytes | Exclusion]:
        """`fetch`, but an object deleted (or made unreadable) since the listing is that key's
        refusal, as on a local root, not a failure of the whole scan."""
        base = self.store.scope_path(self.scope) + "/"
        gone: dict[str, bytes | Exclusion] = {}
        while True:
            try:
                return {**self.store.fetch(self.scope, [key for key in keys if key not in gone]), **gone}
            except FetchError as err:
                if not all(isinstance(e, (FileNotFoundError, PermissionError)) for e in err.failures.values()):
                    raise
                for path, error in err.failures.items():
                    gone[path.removeprefix(base)] = Exclusion(Reason.UNREADABLE, f"{path}: {error}")

    def _fetch(self, objects: list[tuple[int, str]]) -> None:
        """Small objects, fetched concurrently, each one text."""
        if not objects:
            return
        fetched = self._fetch_gone_skipped([key for _, key in objects])
        for row_id, key in objects:
            data = fetched[key]
            if isinstance(data, Exclusion):
                self._skip(key, _REFUSED.get(data.reason, RawSkip.UNREADABLE))
                continue
            if b"\0" in data[:BINARY_SNIFF_BYTES]:
                self._skip(key, RawSkip.BINARY)
                continue
            decoder = _Utf8()
            self._chunks += 1
            self._add(row_id, key, 0, decoder.decode(data, True))
            self._done(len(data), decoder)

    def _stream(self, row_id: int, key: str, size: int) -> None:
        """A large object a chunk at a time, each text starting a margin and an overlap before its
        counted part (see the module's docstring)."""
        decoder, carried, counted_from, read = _Utf8(), "", 0, 0
        for index, (data, final) in enumerate(self._chunks_of(key, size)):
            if isinstance(data, Exclusion):
                reason = _REFUSED.get(data.reason, RawSkip.UNREADABLE)
                if index == 0:
                    self._skip(key, reason)
                else:  # what was read is scanned to its end
                    self._add(row_id, key, index, carried + decoder.decode(b"", True), (counted_from, None))
                    self._partially(key, reason, read)
                return
            if index == 0 and b"\0" in data[:BINARY_SNIFF_BYTES]:
                self._skip(key, RawSkip.BINARY)
                return
            # A sparse hole after the text (`truncate -s`), or zero padding: scanned up to it and read
            # no further, so a padded file is not read to its listed size. A stray NUL is text.
            binary_from = data.find(self._hole)
            if binary_from >= 0:
                data, final = data[:binary_from], True
            self._chunks += bool(data)  # an object that shrank since the listing may end in an empty read
            read += len(data)
            text = carried + decoder.decode(data, final)
            if final:
                self._add(row_id, key, index, text, (counted_from, None))
                if binary_from >= 0:
                    self._partially(key, RawSkip.BINARY, read)
                    return
                break
            counted_until = max(counted_from, len(text) - self.overlap_chars)
            self._add(row_id, key, index, text, (counted_from, counted_until))
            carry_from = max(0, counted_until - MARGIN_CHARS)
            carried, counted_from = text[carry_from:], counted_until - carry_from
        self._done(read, decoder)

    def _chunks_of(self, key: str, size: int) -> Iterator[tuple[bytes | Exclusion, bool]]:
        """(chunk, whether it is the last) up to the listed size: a read past an object's end is an
        error on S3. A short read ends it too (the object shrank since the listing)."""
        start = 0
        while True:
            length = min(self.chunk_bytes, size - start)
            data = self.store.fetch_range(self.scope, key, start, length)
            final = isinstance(data, Exclusion) or len(data) < length or start + length >= size
            yield data, final
            if final:
                return
            start += length

    def _done(self, read: int, decoder: _Utf8) -> None:
        self._scanned += 1
        self._bytes += read
        self._not_utf8 += decoder.repaired

    def _add(self, row_id: int, key: str, index: int, text: str, counted: tuple[int, int | None] | None = None) -> None:
        if not text:
            return
        if counted is not None:
            self._pending.counted[len(self._pending.rows)] = counted
        self._pending.rows.append((row_id, _folder_of(key), None, key, RAW_COLUMN, index, text))
        self._pending.chars += len(text)
        if self._pending.chars >= self.batch_bytes:
            self._flush()

    def _flush(self) -> None:
        pending, self._pending = self._pending, _PendingTexts()
        if pending.rows:
            columns = dict(zip(TEXT_SCHEMA, zip(*pending.rows)))  # column-wise: far cheaper than rows of tuples
            texts = pl.DataFrame(columns, schema=TEXT_SCHEMA).with_row_index("text_id")
            self._scanner.scan_texts(texts, pending.counted)

    def report(self) -> dict[str, Any]:
        """Like the row scan's report, per object: `rows` are objects, findings name their object
        (fingerprints and short previews, never a secret)."""
        scanned = self._scanner.report()
        findings = [
            {
                **{k: v for k, v in finding.items() if k not in ("task", "trace_source", "column")},
                "object": finding["trace_source"],
            }
            for finding in scanned["findings"]
        ]
        objects: dict[str, dict[str, Any]] = {}
        for finding in findings:
            entry = objects.setdefault(
                finding["object"], {"object": finding["object"], "kinds": {}, "fingerprints": []}
            )
            verdicts = entry["kinds"].setdefault(finding["kind"], {})
            verdicts[finding["verdict"]] = verdicts.get(finding["verdict"], 0) + finding["occurrences"]
            if finding["fingerprint"] not in entry["fingerprints"]:
                entry["fingerprints"].append(finding["fingerprint"])
        kinds = {
            name: {("objects" if k == "rows" else k): v for k, v in counts.items() if k != "tasks"}
            for name, counts in scanned["kinds"].items()
        }
        return {
            "scope": self.scope.key,
            "verdict": scanned["verdict"],
            "unverified": scanned["unverified"],
            "objects_listed": self._objects,
            "objects_scanned": self._scanned,
            "bytes_scanned": self._bytes,
            "chunks_scanned": self._chunks,
            "objects_not_utf8": self._not_utf8,
            "skipped": dict(sorted(self._skipped.items())),
            "skipped_objects": sorted(self._skipped_objects, key=lambda entry: entry["object"]),
            "partially_scanned": dict(sorted(self._partial.items())),
            "partially_scanned_objects": sorted(self._partial_objects, key=lambda entry: entry["object"]),
            "objects_with_findings": self._scanner.rows_with_matches,
            "objects": sorted(objects.values(), key=lambda entry: entry["object"]),
            "kinds": kinds,
            "pem": scanned["pem"],
            "findings": findings,
            "findings_omitted": scanned["findings_omitted"],
        }


def raw_scan(
    store: TraceStore, scope: RunScope, options: ScanOptions, progress: Progress | None = None
) -> dict[str, Any]:
    """Scan every object under the scope's prefix; the report holds counts and fingerprints only."""
    return RawTreeScan(store, scope, options).run(progress)
