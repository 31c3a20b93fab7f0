"""Step 4, `secret_scan_report`: the secret scan over a scope's staged rows, and the redaction
publishing applies to them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa

from trace_assets.progress import Progress, ProgressReporter, quiet, terminal
from trace_assets.secret_scan.finder import Finder
from trace_assets.secret_scan.kinds import parse_pattern_specs
from trace_assets.secret_scan.normalise import DEFAULT_WRAP_WIDTH
from trace_assets.secret_scan.policy import ScanPolicy
from trace_assets.secret_scan.privacy import PrivacyOptions
from trace_assets.secret_scan.redaction import Redaction
from trace_assets.secret_scan.scanner import ScanOptions, SecretScanner, parse_allowlist
from trace_assets.secret_scan.verdicts import RunVerdict
from trace_assets.steps.sessions import scan_sessions
from trace_assets.steps.staged_rows import RowParts, iter_rows

SCAN_BATCH_ROWS = 256  # rows are whole conversations: a batch of them is tens of MB


def scan_options(
    pattern_spec: str, allowlist_spec: str, wrap_width: int = DEFAULT_WRAP_WIDTH, privacy: PrivacyOptions | None = None
) -> ScanOptions:
    """The scan's options from config strings: `name=regex;...` and comma-separated fingerprints.

    A ValueError names the bad pattern or entry: the config calls this when it is built, so a typo
    is refused at start rather than in the scan step."""
    allowlist = parse_allowlist(allowlist_spec.split(","))
    return ScanOptions(tuple(parse_pattern_specs(pattern_spec)), allowlist, wrap_width, privacy)


class CandidateRecorder(Finder):
    """The finder, remembering every text its prefilter lets through (texts holding a kind's
    literal or an encoded trigger: about 0.1% of a run's texts), in `seen`.

    A session text staged as the very string of a text of its trial's rows (`in_rows`), and not
    in `seen` once the rows are scanned, holds no literal: the session scan leaves it out. Only
    an exact string is ever left out; `seen` may hold more (views the finder derives), which only
    means more is scanned. With a kind of no literal (every text is its candidate) nothing is."""

    def __init__(self, options: ScanOptions) -> None:
        super().__init__(options.kinds, options.wrap_width)
        self.seen: set[str] = set()

    @property
    def skips(self) -> bool:
        return not self.unfiltered_rules

    def candidates(self, texts: pl.DataFrame) -> pl.DataFrame:
        found = super().candidates(texts)
        self.seen.update(found["text"].to_list())
        return found


def scan_run(
    rows: RowParts, run_id: str, options: ScanOptions, sessions: Path | None = None, progress: Progress | None = None
) -> dict[str, Any]:
    """Scan every text column of every row, a batch at a time, then every text of the session
    files but those the rows' scan already covered (see `CandidateRecorder`)."""
    finder = CandidateRecorder(options)
    scanner = SecretScanner(run_id, options, finder)
    reporter = ProgressReporter("secret_scan_report", "rows", rows.rows, progress or quiet, bar=terminal())
    for table in iter_rows(rows, SCAN_BATCH_ROWS):
        scanner.scan(pl.DataFrame(table))
        reporter.advance(table.num_rows)
    reporter.finish()
    known = finder.seen if finder.skips else None
    sessions_scanned = scan_sessions(scanner, sessions, progress or quiet, known) if sessions is not None else None
    report = scanner.report()
    return report if sessions_scanned is None else {**report, "sessions_scanned": sessions_scanned}


class Redactor:
    """The per-batch transform publishing applies when the policy redacts, counting what it replaced."""

    def __init__(self, options: ScanOptions, policy: ScanPolicy) -> None:
        self._redaction = Redaction(options, policy.redacted, policy.private_redacted)
        self.counts: dict[str, int] = {}

    def __call__(self, table: pa.Table) -> pa.Table:
        redacted, batch_counts = self._redaction(pl.DataFrame(table))
        for kind, count in batch_counts.items():
            self.counts[kind] = self.counts.get(kind, 0) + count
        return redacted.to_arrow().cast(table.schema)

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


def secret_redactor(policy: ScanPolicy, report: dict[str, Any], options: ScanOptions) -> Redactor | None:
    """The redaction publishing applies, or None when rows go out as they are (nothing the policy redacts)."""
    return Redactor(options, policy) if policy.redacts(report) else None
