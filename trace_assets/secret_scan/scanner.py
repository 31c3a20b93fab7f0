"""Credential-shaped strings in trace rows: find them fast, judge each one, never repeat it.

Finding is `finder.py` (a literal prefilter, vectorised regexes, normalised views mapped back to raw
offsets). Python runs per distinct match only, to judge it (`judge.py`, `pem.py`), with the
verdicts of `verdicts.py`. The report describes the rows as read, in counts and fingerprints: a
finding is named by the sha256 of the (normalised) secret and a preview of at most six of its
characters.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sized
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any, NamedTuple, TypeVar

import polars as pl

from trace_assets.core.defaults import DEFAULT_WRAP_WIDTH
from trace_assets.runtime.ahead import mapped_ahead
from trace_assets.secret_scan import assignments, judge
from trace_assets.secret_scan.finder import Finder, Match
from trace_assets.secret_scan.kinds import KEY_BLOCK_KINDS, PUBLIC_SAMPLE_KEYS, Judged, SecretKind, all_kinds
from trace_assets.secret_scan.pem import PEM_MARKER, PemAnalysis, analyse_pem_block
from trace_assets.secret_scan.policy import OnNearMiss
from trace_assets.secret_scan.privacy import Assignment, PrivacyOptions, PrivacyScanner, PrivateMatch
from trace_assets.secret_scan.verdicts import RunVerdict, Verdict, run_verdict

FINDINGS_CAP = 1000
# A trial with a finding of these verdicts is not shown as an example: a near miss is kept in the
# rows, but the card's front page is no place for a string the scan took for a key's prefix.
FLAGGING_VERDICTS = frozenset({Verdict.LIVE, Verdict.UNVERIFIED, Verdict.NEAR_MISS})
FINGERPRINT_CHARS = 16

# Where a text came from: its row, and the column within the row.
_ROW_ORIGIN = ("row_id", "trial_name", "task", "trace_source")
_TEXT_ORIGIN = (*_ROW_ORIGIN, "column")
PLAIN_TEXT_COLUMNS = ("instruction", "verifier_output")
# What `SecretScanner.scan_texts` takes (with a `text_id` index column first, as `with_row_index` adds it).
TEXT_SCHEMA = {
    "row_id": pl.UInt64,
    **dict.fromkeys(_TEXT_ORIGIN[1:], pl.String),
    "message": pl.Int32,
    "text": pl.String,
}


@dataclass(frozen=True)
class ScanOptions:
    """What to look for and how: extra kinds, allowlisted fingerprints, the terminal wrap width, the
    privacy scrub's operator values (None: no privacy scan, the report has no `privacy` section), and
    how a near miss with a generated-looking body is judged (`OnNearMiss`)."""

    extra_kinds: tuple[SecretKind, ...] = ()
    allowlist: tuple[str, ...] = ()
    wrap_width: int = DEFAULT_WRAP_WIDTH
    privacy: PrivacyOptions | None = None
    near_misses: OnNearMiss = "redact"
    kinds: tuple[SecretKind, ...] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "kinds", all_kinds(self.extra_kinds))


def compiled_finder(options: ScanOptions) -> Finder:
    """The finder of these options' kinds and wrap width, compiled once a process: compiling the
    built-in and vendor rules takes ms, paid by every scanner and redaction (a raw scan, the row
    scan and the redaction of one scope alike), and a finder holds no state between scans."""
    shapes = tuple((kind.shape, kind.rough_shape) for kind in options.kinds)  # not compared by kinds' ==
    return _compiled_finder(options.kinds, shapes, options.wrap_width)


@lru_cache(maxsize=4)
def _compiled_finder(kinds: tuple[SecretKind, ...], shapes: tuple[object, ...], wrap_width: int) -> Finder:
    return Finder(kinds, wrap_width)


def has_conversations(rows: pl.DataFrame) -> bool:
    return isinstance(rows.schema.get("conversations"), pl.List)


def _texts(rows: pl.DataFrame, first_row_id: int) -> pl.DataFrame:
    """One row per text (each message content, instruction, verifier output), with its origin and id."""
    origin = [
        (pl.col(name) if name in rows.columns else pl.lit(None)).cast(pl.String).alias(name) for name in _ROW_ORIGIN[1:]
    ]
    row_id = pl.int_range(first_row_id, first_row_id + pl.len(), dtype=pl.UInt64).alias("row_id")
    base = rows.lazy().with_columns(row_id, *origin)
    parts = [
        base.select(
            *_ROW_ORIGIN,
            pl.lit(name).alias("column"),
            pl.lit(-1 - i).alias("message"),
            pl.col(name).cast(pl.String).alias("text"),
        )
        for i, name in enumerate(PLAIN_TEXT_COLUMNS)
        if name in rows.columns
    ]
    if has_conversations(rows):
        parts.insert(
            0,
            base.select(*_ROW_ORIGIN, "conversations")
            .explode("conversations")
            .select(
                *_ROW_ORIGIN,
                pl.lit("conversations").alias("column"),
                pl.int_range(pl.len()).over("row_id").cast(pl.Int32).alias("message"),
                pl.col("conversations").struct.field("content").alias("text"),
            ),
        )
    if not parts:
        return pl.DataFrame(schema=TEXT_SCHEMA).with_row_index("text_id")
    texts = pl.concat([part.with_columns(pl.col("message").cast(pl.Int32)) for part in parts]).filter(
        pl.col("text").is_not_null()
    )
    return texts.collect().with_row_index("text_id")


scanned_texts = _texts  # the texts of a batch of rows, as the scanner and redaction read them


def text_bytes(rows: pl.DataFrame) -> int:
    """UTF-8 bytes of every text the scanner reads."""
    return int(_texts(rows, 0).select(pl.col("text").str.len_bytes().sum()).item() or 0)


@dataclass(frozen=True)
class Replaceable:
    """A judged match as redaction replaces it: its kind and verdict, the raw text of each of its
    spans, then its (normalised) secret; replaced wherever it occurs in the batch. A value that is not
    credential-shaped (`spreads`) is replaced only after what its line held before it: each piece is
    then that lead and the span, and `kept[i]` characters of piece i (the lead) stay."""

    kind: str
    verdict: Verdict
    pieces: tuple[str, ...]
    kept: tuple[int, ...] = ()

    def replacements(self) -> Iterator[tuple[str, str]]:
        """(text, what replaces it) for each non-empty piece."""
        for index, piece in enumerate(self.pieces):
            kept = self.kept[index] if self.kept else 0
            if piece[kept:]:
                yield piece, f"{piece[:kept]}[REDACTED:{self.kind}]"


LEAD_CHARS = 48  # what an anchored value's piece holds of its line before it


def spreads(match: Match) -> bool:
    """Whether a match is replaced wherever its text occurs: a format's token or a key block, or a
    value that looks generated (12 characters or more). A short or person-written value (a password
    in a URL, `hunter2isme`) is replaced where it was found only: the same text elsewhere is
    somebody else's, and replacing it there would rewrite benign lines."""
    return match.kind.judged is not Judged.GENERIC or assignments.generated(match.secret)


def replaceables(matches: list[Match], judgements: list[Judgement], by_id: Mapping[int, str]) -> list[Replaceable]:
    found = []
    for match, judgement in zip(matches, judgements):
        spans = [(by_id[source], start, end) for source, (start, end) in match.spans.items()]
        if spreads(match):
            pieces = (*(text[start:end] for text, start, end in spans), match.secret)
            found.append(Replaceable(match.kind.name, judgement.verdict, pieces))
            continue
        leads = [max(text.rfind("\n", 0, start) + 1, start - LEAD_CHARS) for text, start, _ in spans]
        pieces = tuple(text[lead:end] for (text, _, end), lead in zip(spans, leads))
        kept = tuple(start - lead for (_, start, _), lead in zip(spans, leads))
        found.append(Replaceable(match.kind.name, judgement.verdict, pieces, kept))
    return found


@dataclass(frozen=True)
class Judgement:
    verdict: Verdict
    fingerprint: str
    preview: str
    pem: PemAnalysis | None


def _preview(secret: str) -> str:
    """At most six leading characters, and never more than a quarter of the secret."""
    return secret[: min(6, len(secret) // 4)] + "…"


def _verdict(kind: SecretKind, secret: str) -> tuple[Verdict, PemAnalysis | None]:
    if kind.judged is Judged.KEY_BLOCK:
        pem = analyse_pem_block(secret)
        return pem.verdict, pem
    if kind.judged is Judged.GENERIC:
        credential = kind.value_test(secret) if kind.value_test else not judge.generic_value_is_placeholder(secret)
        return (Verdict.UNVERIFIED if credential else Verdict.PLACEHOLDER), None
    if (
        judge.looks_fake(secret)
        or (kind.name == "jwt" and judge.jwt_payload_is_fake(secret))
        or assignments.placeholder_login(secret)
        or assignments.sample_body(judge.token_body(secret))
    ):
        return Verdict.PLACEHOLDER, None
    if kind.shape is None or kind.shape(secret):
        return Verdict.LIVE, None
    # our format failed: a body of words under the prefix (`gloas-checking_Length-Is-...`) is a stand-in
    # (a vendor rule's match is never checked, and holds its context: `mongodb://admin:...`)
    stand_in = kind.specific and assignments.wordy(judge.token_body(secret))
    return (Verdict.PLACEHOLDER if stand_in else Verdict.UNVERIFIED), None


def _near_miss(secret: str, near_misses: OnNearMiss) -> Verdict:
    """A vendor's prefix whose body fails its kind's exact format, with no credential word before it:
    `unverified` when the body looks generated and near misses are redacted (a key cut short or changed
    by a character is most of a key, sorted out offline by its checksum), else `near_miss`."""
    if near_misses == "redact" and assignments.generated(judge.token_body(secret), 8):
        return Verdict.UNVERIFIED
    return Verdict.NEAR_MISS


def parse_allowlist(entries: Iterable[str]) -> tuple[str, ...]:
    """Allowlisted fingerprints, each the start of a secret's sha256 hex digest: at least the
    FINGERPRINT_CHARS a report names a finding by, at most the whole digest; any other is refused."""
    allowlist = tuple(sorted({entry.strip().lower() for entry in entries if entry.strip()}))
    for entry in allowlist:
        if not re.fullmatch(rf"[0-9a-f]{{{FINGERPRINT_CHARS},64}}", entry):
            raise ValueError(
                f"allowlist entry {entry!r} is not a fingerprint: {FINGERPRINT_CHARS} to 64 hex digits, "
                "the start of a secret's sha256 as secret_scan.json names a finding"
            )
    return allowlist


class Judge:
    """Verdicts per distinct match, cached by (kind, sha256) so the cache holds no secrets."""

    def __init__(self, allowlist: Iterable[str], near_misses: OnNearMiss = "redact") -> None:
        self.allowlist = parse_allowlist(allowlist)
        self.near_misses = near_misses
        self._cache: dict[tuple[str, str, bool, bool], Judgement] = {}

    def judge(self, kind: SecretKind, secret: str, may_be_live: bool = True, context: bool = True) -> Judgement:
        digest = hashlib.sha256(secret.encode()).hexdigest()
        key = (kind.name, digest, may_be_live, context)
        if key not in self._cache:
            verdict, pem = _verdict(kind, secret)
            if verdict is Verdict.LIVE and not may_be_live:
                verdict = Verdict.UNVERIFIED
            if verdict is Verdict.UNVERIFIED and not context and kind.judged is Judged.TOKEN:
                verdict = _near_miss(secret, self.near_misses)
            if digest.startswith(self.allowlist) or secret in PUBLIC_SAMPLE_KEYS:
                verdict = Verdict.PLACEHOLDER
            self._cache[key] = Judgement(verdict, digest[:FINGERPRINT_CHARS], _preview(secret), pem)
        return self._cache[key]


def judged_matches(
    finder: Finder, judge_: Judge, rows: pl.DataFrame, first_row_id: int
) -> tuple[pl.DataFrame, list[Match], list[Judgement], dict[int, str], pl.DataFrame]:
    """Find and judge one batch: (texts, matches, their judgements, matched texts by id, PEM marker rows)."""
    texts = _texts(rows, first_row_id)
    return (texts, *_judged_texts(finder, judge_, texts, {}))


# Where in a text its matches count, [start, end) (None: to its end); a text not listed counts whole.
CountedSpans = Mapping[int, tuple[int, int | None]]
_PEM_MARKER = re.compile(PEM_MARKER)


def _judged_texts(
    finder: Finder, judge_: Judge, texts: pl.DataFrame, counted: CountedSpans
) -> tuple[list[Match], list[Judgement], dict[int, str], pl.DataFrame]:
    matches, by_id = finder.find(texts)
    matches = [match for match in matches if _counted_here(match.spans[match.source][0], match.source, counted)]
    judgements = [judge_.judge(match.kind, match.secret, match.may_be_live, match.context) for match in matches]
    marked = texts.filter(pl.col("text_id").is_in(list(by_id)))
    markers = marked.select(
        "text_id", "row_id", "task", pl.col("text").str.count_matches(PEM_MARKER).alias("pem_markers")
    )
    windowed = markers.filter((pl.col("pem_markers") > 0) & pl.col("text_id").is_in(list(counted)))["text_id"]
    if windowed.len():  # a marker in a text's uncounted part is counted in the text that holds it counted
        recounted = [
            (text_id, sum(_counted_here(m.start(), text_id, counted) for m in _PEM_MARKER.finditer(by_id[text_id])))
            for text_id in windowed.to_list()
        ]
        update = pl.DataFrame(recounted, schema={"text_id": pl.UInt32, "pem_markers": pl.UInt32}, orient="row")
        markers = markers.update(update, on="text_id")
    return matches, judgements, by_id, markers.filter(pl.col("pem_markers") > 0)


def _counted_here(start: int, text_id: int, counted: CountedSpans) -> bool:
    span_start, span_end = counted.get(text_id, (0, None))
    return span_start <= start and (span_end is None or start < span_end)


class ScanRows(NamedTuple):
    """A batch of rows as the scanner reads them, and the UTF-8 bytes of the texts left out of it
    (null) because each is the very string of a text scanned already that the finder's prefilter
    let by: it holds no literal (no match, marker or blob, alone or beside another), so it is
    counted as scanned, as scanning it would have."""

    rows: pl.DataFrame
    known_clean_bytes: int = 0


Batch = TypeVar("Batch", bound=Sized)


@dataclass(frozen=True)
class _Found:
    """One batch's texts with what the finders found in them, before it is tallied."""

    texts: pl.DataFrame
    matches: list[Match]
    judgements: list[Judgement]
    by_id: dict[int, str]
    markers: pl.DataFrame  # texts holding PEM markers, with their counts
    private: list[tuple[int, PrivateMatch]]
    text_bytes: int


_EMPTY_KIND: dict[str, int] = {"matches": 0, **{str(v): 0 for v in Verdict}}


class SecretScanner:
    """Accumulates findings over batches of rows; only counts, sets of names and capped lists are kept."""

    def __init__(self, run_id: str, options: ScanOptions | None = None, finder: Finder | None = None) -> None:
        self.run_id = run_id
        self.options = options or ScanOptions()
        self.kinds = self.options.kinds
        self._finder = finder or compiled_finder(self.options)
        self._judge = Judge(self.options.allowlist, self.options.near_misses)
        self._privacy = PrivacyScanner(self.options.privacy) if self.options.privacy is not None else None
        self._rows_scanned = 0
        self._bytes_scanned = 0
        self._kinds: dict[str, dict[str, int]] = {kind.name: dict(_EMPTY_KIND) for kind in self.kinds}
        self._framings: dict[str, dict[str, int]] = {kind.name: {} for kind in self.kinds}
        self._rows: dict[str, set[int]] = {kind.name: set() for kind in self.kinds}  # rows with a match: few
        self._trials: dict[str, set[str]] = {kind.name: set() for kind in self.kinds}
        self._flagged_trials: set[str] = set()  # trials with a finding of FLAGGING_VERDICTS
        self._tasks: dict[str, set[str]] = {kind.name: set() for kind in self.kinds}
        pem_counts = ("markers", "rows", "blocks", "truncated", "parseable", "placeholder", "max_decoded_bytes")
        self._pem = dict.fromkeys(pem_counts, 0)
        # a set, not a count per batch: a large object's chunks may hold its markers in two batches
        self._pem_rows: set[int] = set()
        self._pem_tasks: set[str] = set()
        self._pem_blocks: dict[tuple[str | None, str], dict[str, Any]] = {}
        self._pem_blocks_omitted = 0
        self._findings: dict[tuple, dict[str, Any]] = {}
        self._findings_omitted = 0
        self.last_found: list[Replaceable] = []  # the last batch's matches, as redaction replaces them
        self.last_found_rows: list[int] = []  # the row id of each, as the scanner numbered the rows

    def scan(self, rows: pl.DataFrame) -> None:
        """Add one batch of rows to the tallies."""
        self._add(self._found_in(_texts(rows, self._rows_scanned), {}), rows.height)

    def scan_batches(
        self, batches: Iterable[Batch], read: Callable[[Batch], ScanRows], workers: int = 1
    ) -> Iterator[tuple[Batch, int]]:
        """Add batches to the tallies in order, as `scan` does with each batch's `read(batch)`,
        yielding each batch once it is added, with its first row id (`last_found` is then its
        matches, `last_found_rows` their row ids). Reading and the
        finders of up to `workers` batches run ahead in threads (their time is polars' and Arrow's,
        which release the GIL); tallies stay in this thread, in order, so the report and the private
        values' tokens are those of a scan in turn. A batch's length is its number of rows."""

        def numbered() -> Iterator[tuple[Batch, int]]:
            first_row_id = self._rows_scanned
            for batch in batches:
                yield batch, first_row_id
                first_row_id += len(batch)

        def find(numbered_batch: tuple[Batch, int]) -> _Found:
            batch, first_row_id = numbered_batch
            rows, known_clean_bytes = read(batch)
            found = self._found_in(_texts(rows, first_row_id), {})
            return replace(found, text_bytes=found.text_bytes + known_clean_bytes)

        ahead = workers if workers > 1 else 0
        for (batch, first_row_id), found in mapped_ahead(numbered(), find, ahead, workers):
            self._add(found, len(batch))
            yield batch, first_row_id

    def scan_texts(self, texts: pl.DataFrame, counted: CountedSpans | None = None) -> None:
        """Add texts that are not rows (`TEXT_SCHEMA`) to the tallies. Only matches (and PEM markers)
        starting inside `counted[text_id]` count: a chunk of a large object also holds context before
        its part (the previous chunk's) and after it (the next chunk's), where the neighbours count."""
        self._add(self._found_in(texts, counted or {}))

    def _found_in(self, texts: pl.DataFrame, counted: CountedSpans) -> _Found:
        """What the finders find in texts, judged; no tally is touched, so batches may be found in
        threads (the judge's cache and the finder's record of candidates take any order)."""
        matches, judgements, by_id, markers = _judged_texts(self._finder, self._judge, texts, counted)
        private = self._privacy.find(texts) if self._privacy is not None else []
        text_bytes = int(texts.select(pl.col("text").str.len_bytes().sum()).item() or 0)
        return _Found(texts, matches, judgements, by_id, markers, private, text_bytes)

    def _add(self, found: _Found, rows: int = 0) -> None:
        self._rows_scanned += rows
        texts, matches, judgements, markers = found.texts, found.matches, found.judgements, found.markers
        self.last_found = replaceables(matches, judgements, found.by_id)
        sources = [match.source for match in matches]
        row_ids = texts.filter(pl.col("text_id").is_in(sources)).select("text_id", "row_id") if sources else None
        row_of = dict(row_ids.iter_rows()) if row_ids is not None else {}
        self.last_found_rows = [row_of[source] for source in sources]
        if self._privacy is not None:
            self._privacy.add(texts, found.private)
        self._bytes_scanned += found.text_bytes
        self._pem["markers"] += int(markers["pem_markers"].sum() or 0)
        self._pem_rows.update(markers["row_id"].unique().to_list())
        self._pem["rows"] = len(self._pem_rows)
        self._pem_tasks.update(markers["task"].drop_nulls().unique().to_list())
        if not matches:
            return
        table = pl.DataFrame(
            {
                "text_id": [match.source for match in matches],
                "kind": [match.kind.name for match in matches],
                "framing": [str(match.framing) for match in matches],  # a Framing or a "json+json" string
                "verdict": [str(j.verdict) for j in judgements],
                "fingerprint": [j.fingerprint for j in judgements],
                "preview": [j.preview for j in judgements],
            },
            schema_overrides={"text_id": pl.UInt32},
        ).join(texts.select("text_id", *_TEXT_ORIGIN), on="text_id", how="left", maintain_order="left")
        pems = {(m.kind.name, j.fingerprint): j for m, j in zip(matches, judgements) if j.pem is not None}
        self._tally_kinds(table)
        flagging = table.filter(pl.col("verdict").is_in([str(v) for v in FLAGGING_VERDICTS]))
        self._flagged_trials.update(flagging["trial_name"].drop_nulls().unique().to_list())
        self._tally_pem(table.filter(pl.col("kind").is_in(list(KEY_BLOCK_KINDS))), pems)
        self._tally_findings(table)

    def _tally_kinds(self, matches: pl.DataFrame) -> None:
        per_kind = matches.group_by("kind").agg(
            pl.len().alias("matches"),
            pl.col("row_id").unique().alias("row_ids"),
            *[(pl.col("verdict") == v).sum().alias(v) for v in Verdict],
            pl.col("trial_name").drop_nulls().unique().alias("trial_names"),
            pl.col("task").drop_nulls().unique().alias("task_names"),
        )
        for row in per_kind.iter_rows(named=True):
            counts = self._kinds[row["kind"]]
            for name in ("matches", *Verdict):
                counts[name] += row[name]
            self._rows[row["kind"]].update(row["row_ids"])
            self._trials[row["kind"]].update(row["trial_names"])
            self._tasks[row["kind"]].update(row["task_names"])
        for kind, framing, count in matches.group_by("kind", "framing").len().iter_rows():
            self._framings[kind][framing] = self._framings[kind].get(framing, 0) + count

    def _tally_pem(self, blocks: pl.DataFrame, judgements: dict[tuple[str, str], Judgement]) -> None:
        """Block counts per occurrence; the listed blocks are one per (trial, distinct block)."""
        for kind, trial_name, fingerprint, occurrences in (
            blocks.group_by("kind", "trial_name", "fingerprint", maintain_order=True).len().iter_rows()
        ):
            judgement = judgements[(kind, fingerprint)]
            pem = judgement.pem
            assert pem is not None, "key blocks are always analysed"
            self._pem["blocks"] += occurrences
            self._pem["truncated"] += occurrences * pem.truncated
            self._pem["parseable"] += occurrences * pem.parseable
            self._pem["placeholder"] += occurrences * pem.placeholder
            self._pem["max_decoded_bytes"] = max(self._pem["max_decoded_bytes"], pem.decoded_bytes)
            listed = self._pem_blocks.get((trial_name, fingerprint))
            if listed is not None:
                listed["occurrences"] += occurrences
            elif len(self._pem_blocks) < FINDINGS_CAP:
                self._pem_blocks[(trial_name, fingerprint)] = {
                    "trial_name": trial_name,
                    "kind": pem.kind,
                    "truncated": pem.truncated,
                    "parseable": pem.parseable,
                    "encrypted": pem.encrypted,
                    "placeholder": pem.placeholder,
                    "decoded_bytes": pem.decoded_bytes,
                    "min_bytes": pem.min_bytes,
                    "verdict": str(judgement.verdict),
                    "fingerprint": fingerprint,
                    "occurrences": occurrences,
                }
            else:
                self._pem_blocks_omitted += occurrences

    def _tally_findings(self, matches: pl.DataFrame) -> None:
        """One finding per (kind, secret, trial, trace source, column, framing), with its occurrence count."""
        keys = ("kind", "fingerprint", "trial_name", "task", "trace_source", "column", "framing", "verdict", "preview")
        for *key, occurrences in matches.group_by(keys, maintain_order=True).len().iter_rows():
            finding = self._findings.get(tuple(key))
            if finding is not None:
                finding["occurrences"] += occurrences
            elif len(self._findings) < FINDINGS_CAP:
                self._findings[tuple(key)] = {**dict(zip(keys, key)), "occurrences": occurrences}
            else:
                self._findings_omitted += occurrences

    @property
    def private_tokens(self) -> Assignment | None:
        """The scope's private-value tokens as numbered so far (None: no privacy scan)."""
        return self._privacy.tokens.assigned() if self._privacy is not None else None

    @property
    def flagged_trials(self) -> list[str]:
        """The trials holding a secret, unverified or near-miss finding or a private value, sorted:
        the ones the card shows no example from, whatever the policies replace."""
        private = self._privacy.trials if self._privacy is not None else set()
        return sorted(self._flagged_trials | private)

    @property
    def rows_with_matches(self) -> int:
        return len(set().union(*self._rows.values()))

    def report(self) -> dict[str, Any]:
        """JSON-ready summary of everything scanned so far; it holds no secret text."""
        kinds = {
            kind.name: {
                "patterns": len(kind.rules),
                "matches": counts["matches"],
                "rows": len(self._rows[kind.name]),
                "trials": len(self._trials[kind.name]),
                "tasks": len(self._tasks[kind.name]),
                **{str(v): counts[v] for v in Verdict},
                "framings": dict(sorted(self._framings[kind.name].items())),
            }
            for kind, counts in zip(self.kinds, self._kinds.values())
        }
        privacy = {"privacy": {**self._privacy.report(), "redacted": {}}} if self._privacy is not None else {}
        return {
            "run_id": self.run_id,
            "verdict": str(overall_verdict(kinds)),
            "unverified": sum(counts[Verdict.UNVERIFIED] for counts in kinds.values()),
            "rows_scanned": self._rows_scanned,
            "bytes_scanned": self._bytes_scanned,
            "kinds": kinds,
            "pem": {**self._pem, "tasks": len(self._pem_tasks)},
            "pem_blocks": sorted(self._pem_blocks.values(), key=_listing_order),
            "pem_blocks_omitted": self._pem_blocks_omitted,
            "findings": sorted(self._findings.values(), key=_listing_order),
            "findings_omitted": self._findings_omitted,
            "redacted": {},
            **privacy,
        }


def _listing_order(entry: dict[str, Any]) -> tuple[str, ...]:
    """Listed entries sort the same however the rows were batched."""
    keys = ("kind", "trial_name", "trace_source", "column", "framing", "fingerprint")
    return tuple(str(entry.get(key) or "") for key in keys)


def overall_verdict(kinds: dict[str, dict[str, Any]]) -> RunVerdict:
    """The run's verdict from its per-kind verdict counts."""
    return run_verdict({v: sum(counts.get(v, 0) for counts in kinds.values()) for v in Verdict})
