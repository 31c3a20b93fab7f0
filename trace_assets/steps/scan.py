"""Step 4, `secret_scan_report`: the secret scan over a scope's staged rows, and the redaction
publishing applies to them."""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Literal

import polars as pl
import pyarrow as pa

from trace_assets.core.defaults import DEFAULT_WRAP_WIDTH
from trace_assets.runtime.ahead import available_cores, threads_for
from trace_assets.runtime.progress import Progress, ProgressReporter, quiet, terminal
from trace_assets.secret_scan.finder import Finder
from trace_assets.secret_scan.kinds import parse_pattern_specs
from trace_assets.secret_scan.policy import OnNearMiss, ScanPolicy
from trace_assets.secret_scan.privacy import Assignment, PrivacyOptions, Tokens
from trace_assets.secret_scan.redaction import Redaction
from trace_assets.secret_scan.scanner import (
    Replaceable,
    ScanOptions,
    ScanRows,
    SecretScanner,
    compiled_finder,
    parse_allowlist,
)
from trace_assets.secret_scan.verdicts import RunVerdict, Verdict
from trace_assets.steps.sessions import SCAN_BATCH_SESSIONS, scan_sessions
from trace_assets.steps.staged_rows import RowParts, iter_rows
from trace_assets.steps.staging import write_json_atomically

SCAN_BATCH_ROWS = 256  # rows are whole conversations: a batch of them is tens of MB


Found = dict[int, list[Replaceable]]  # batch index -> what the scan found in it, for batches with a match
# The verdicts a policy can have replaced (placeholders and near misses never are): only those are recorded.
REPLACEABLE = frozenset({Verdict.LIVE, Verdict.UNVERIFIED})
MAX_RECORDED = 100_000  # matches; past it (hostile text) no record is kept and publishing finds them again


@dataclass(frozen=True)
class ScannedMatches:
    """What the scan found in each batch of the rows and of the session files, as it cut them
    (`rows_batch`, `sessions_batch` at a time, in publishing order): redaction reading batches cut
    alike replaces it without running the finder again (most batches hold no match). It holds the
    matched text, as the staged rows it sits beside do, and the private values' token numbering
    (by digest), which redaction goes on with so that the report's tokens are the published ones.
    `rows_scanned` and `bytes_scanned` tie it to the report it was made with, `options` to the
    scan's kinds, allowlist, wrap width and privacy options: any other report or options ignore it."""

    rows_batch: int
    sessions_batch: int
    rows: Found | None  # None: too many matches to record (MAX_RECORDED)
    sessions: Found | None  # None: the scan read no session files, or too many matches
    rows_scanned: int
    bytes_scanned: int
    options: str
    tokens: Assignment | None = None  # None: no privacy scan
    # the trials with a finding the card shows no example from (`SecretScanner.flagged_trials`)
    flagged_trials: list[str] | None = None

    def write(self, path: Path) -> None:
        def found(batches: Found | None) -> dict[str, list[list[Any]]] | None:
            if batches is None:
                return None
            return {
                str(i): [[m.kind, str(m.verdict), list(m.pieces), list(m.kept)] for m in batches[i]]
                for i in sorted(batches)
            }

        write_json_atomically(path, {**self.__dict__, "rows": found(self.rows), "sessions": found(self.sessions)})

    @classmethod
    def read(cls, path: Path, report: dict[str, Any], options: ScanOptions) -> ScannedMatches | None:
        """The record made with `report` and `options`, or None (none, unreadable or another scan's)."""

        def found(batches: dict[str, list[list[Any]]] | None) -> Found | None:
            if batches is None:
                return None
            return {
                int(i): [
                    Replaceable(kind, Verdict(verdict), tuple(pieces), tuple(kept))
                    for kind, verdict, pieces, kept in matches
                ]
                for i, matches in batches.items()
            }

        try:
            fields = json.loads(path.read_text())
            scanned = cls(**{**fields, "rows": found(fields["rows"]), "sessions": found(fields["sessions"])})
            Tokens(scanned.tokens)  # its categories are ours
        except (OSError, ValueError, TypeError, KeyError, AttributeError):
            return None
        tied = (scanned.rows_scanned, scanned.bytes_scanned) == _tie(report) and scanned.options == _digest(options)
        return scanned if tied else None


def scan_options(
    pattern_spec: str,
    allowlist_spec: str,
    wrap_width: int = DEFAULT_WRAP_WIDTH,
    privacy: PrivacyOptions | None = None,
    near_misses: OnNearMiss = "redact",
) -> ScanOptions:
    """The scan's options from config strings: `name=regex;...` and comma-separated fingerprints.

    A ValueError names the bad pattern or entry: the config calls this when it is built, so a typo
    is refused at start rather than in the scan step."""
    allowlist = parse_allowlist(allowlist_spec.split(","))
    return ScanOptions(tuple(parse_pattern_specs(pattern_spec)), allowlist, wrap_width, privacy, near_misses)


class CandidateRecorder(Finder):
    """The finder, remembering every text its prefilter lets through (texts holding a kind's
    literal or an encoded trigger: about 0.1% of a run's texts), in `seen`.

    A session text staged as the very string of a text of its trial's rows (`in_rows`), and not
    in `seen` once the rows are scanned, holds no literal: the session scan leaves it out. Only
    an exact string is ever left out; `seen` may hold more (views the finder derives), which only
    means more is scanned. With a kind of no literal (every text is its candidate) nothing is."""

    def __init__(self, options: ScanOptions) -> None:
        # The process's compiled rules, shared (a finder holds no state between scans): compiling
        # them again took about 8 ms of every scope's scan step.
        vars(self).update(vars(compiled_finder(options)))
        self.seen: set[str] = set()

    @property
    def skips(self) -> bool:
        return not self.unfiltered_rules

    def candidates(self, texts: pl.DataFrame) -> pl.DataFrame:
        found = super().candidates(texts)
        self.seen.update(found["text"].to_list())
        return found


def _scan_rows(table: pa.Table) -> ScanRows:
    return ScanRows(pl.DataFrame(table))


def record_found(found: Found, index: int, batch: list[Replaceable]) -> None:
    """Keep what a batch's scan found that a policy can have replaced, while the record is small."""
    replaceable = [match for match in batch if match.verdict in REPLACEABLE]
    if replaceable and sum(map(len, found.values())) <= MAX_RECORDED:
        found[index] = replaceable


def _tie(report: dict[str, Any]) -> tuple[Any, Any]:
    return report.get("rows_scanned"), report.get("bytes_scanned")


def _digest(options: ScanOptions) -> str:
    """What the finder and the judge were given: each kind's rules, the allowlist, the wrap width, how
    near misses are judged; and the privacy scan its operator values."""
    kinds = [[kind.name, str(kind.judged), [rule.regex for rule in kind.rules]] for kind in options.kinds]
    privacy = options.privacy
    operator = None if privacy is None else [list(privacy.literals), list(privacy.patterns)]
    given = json.dumps([kinds, list(options.allowlist), options.wrap_width, operator, options.near_misses])
    return hashlib.sha256(given.encode()).hexdigest()


def scan_run(
    rows: RowParts,
    run_id: str,
    options: ScanOptions,
    sessions: Path | None = None,
    progress: Progress | None = None,
    matched: Path | None = None,
) -> dict[str, Any]:
    """Scan every text column of every row, a batch at a time, then every text of the session
    files but those the rows' scan already covered (see `CandidateRecorder`). With `matched`, what it
    found in each batch and the private values' tokens are recorded there (`ScannedMatches`)."""
    finder = CandidateRecorder(options)
    scanner = SecretScanner(run_id, options, finder)
    reporter = ProgressReporter("secret_scan_report", "rows", rows.rows, progress or quiet, bar=terminal())
    in_rows: Found = {}
    workers = available_cores()
    batches = scanner.scan_batches(
        iter_rows(rows, SCAN_BATCH_ROWS), _scan_rows, threads_for(rows.rows, SCAN_BATCH_ROWS, workers)
    )
    for index, (batch, _) in enumerate(batches):
        record_found(in_rows, index, scanner.last_found)
        reporter.advance(batch.num_rows)
    reporter.finish()
    known = finder.seen if finder.skips else None
    in_sessions: Found | None = None
    sessions_scanned = None
    if sessions is not None:
        in_sessions = {}
        sessions_scanned = scan_sessions(
            scanner, sessions, progress or quiet, known, partial(record_found, in_sessions), workers
        )
    report = scanner.report()
    recorded = sum(map(len, in_rows.values())) + sum(map(len, (in_sessions or {}).values()))
    if matched is not None:
        small = recorded <= MAX_RECORDED
        record = ScannedMatches(
            SCAN_BATCH_ROWS,
            SCAN_BATCH_SESSIONS,
            in_rows if small else None,
            in_sessions if small else None,
            *_tie(report),
            _digest(options),
            scanner.private_tokens,
            scanner.flagged_trials,
        )
        record.write(matched)
    return report if sessions_scanned is None else {**report, "sessions_scanned": sessions_scanned}


class Redactor:
    """The per-batch transform publishing applies when the policy redacts, counting what it replaced."""

    def __init__(self, options: ScanOptions, policy: ScanPolicy, scanned: ScannedMatches | None = None) -> None:
        tokens = Tokens(scanned.tokens) if scanned is not None and scanned.tokens is not None else None
        self._redaction = Redaction(options, policy.redacted, policy.private_redacted, tokens)
        self.counts: dict[str, int] = {}
        self.scanned = scanned

    def __call__(self, table: pa.Table, found: list[Replaceable] | None = None) -> pa.Table:
        """The table redacted (itself when nothing is replaced); `found`: what the scan found in it."""
        frame = pl.DataFrame(table)
        redacted, batch_counts = self._redaction(frame, found)
        for kind, count in batch_counts.items():
            self.counts[kind] = self.counts.get(kind, 0) + count
        return table if redacted is frame else redacted.to_arrow().cast(table.schema)

    def cut_as_scanned(self, what: Literal["rows", "sessions"], batch: int) -> Callable[[pa.Table], pa.Table]:
        """The redaction of `what`, all of it read in publishing order `batch` at a time: what the
        scan found in each batch is replaced without running the finder again, when the scan cut
        the batches alike (else the finder reads every batch)."""
        scanned = self.scanned
        if scanned is None or batch != (scanned.rows_batch if what == "rows" else scanned.sessions_batch):
            return self
        if not self._redaction.verdicts <= REPLACEABLE:  # the record keeps no other verdict
            return self
        found = scanned.rows if what == "rows" else scanned.sessions
        if found is None:  # the scan read no session files, or found too much to record
            return self
        index = itertools.count()
        return lambda table: self(table, found.get(next(index), []))

    @property
    def private_counts(self) -> dict[str, int]:
        """Private values replaced per category, rows and session files alike."""
        return dict(sorted(self._redaction.private_counts.items()))

    def published_report(self, report: dict[str, Any]) -> dict[str, Any]:
        """The report as published: what was replaced, and the verdict `redacted` once anything was."""
        published = {**report, "redacted": dict(sorted(self.counts.items()))}  # the same whatever the batching
        if "privacy" in report:
            published["privacy"] = {**report["privacy"], "redacted": self.private_counts}
        if any(self.counts.values()):
            published.update(verdict=str(RunVerdict.REDACTED), verdict_as_read=report["verdict"])
        return published


def secret_redactor(
    policy: ScanPolicy, report: dict[str, Any], options: ScanOptions, scanned: ScannedMatches | None = None
) -> Redactor | None:
    """The redaction publishing applies, or None when rows go out as they are (nothing the policy
    redacts); `scanned` is what the scan recorded of each batch (see `ScannedMatches`)."""
    if not policy.redacts(report):
        return None
    return Redactor(options, policy, scanned)
