"""Step 4, `secret_scan_report`: the secret scan over a scope's staged rows, and the redaction
publishing applies to them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa

from trace_assets.secret_scan.policy import OnSecret
from trace_assets.secret_scan.scanner import SecretScanner, parse_pattern_specs, redact
from trace_assets.steps.sessions import scan_sessions
from trace_assets.steps.staged_rows import RowParts, iter_rows

SCAN_BATCH_ROWS = 256  # rows are whole conversations: a batch of them is tens of MB


def _allowlist(spec: str) -> list[str]:
    return [item.strip() for item in spec.split(",") if item.strip()]


def scan_run(
    rows: RowParts, run_id: str, pattern_spec: str, allowlist_spec: str, sessions: Path | None = None
) -> dict[str, Any]:
    """Scan every text column of every row, a batch at a time, then every text of the session files."""
    scanner = SecretScanner(run_id, parse_pattern_specs(pattern_spec), _allowlist(allowlist_spec))
    for table in iter_rows(rows, SCAN_BATCH_ROWS):
        scanner.scan(pl.DataFrame(table))
    sessions_scanned = scan_sessions(scanner, sessions) if sessions is not None else None
    report = scanner.report()
    return report if sessions_scanned is None else {**report, "sessions_scanned": sessions_scanned}


class Redactor:
    """The per-batch transform publishing applies under `redact`, counting what it replaced."""

    def __init__(self, pattern_spec: str, allowlist_spec: str) -> None:
        self.patterns = parse_pattern_specs(pattern_spec)
        self.allowlist = _allowlist(allowlist_spec)
        self.counts: dict[str, int] = {}

    def __call__(self, table: pa.Table) -> pa.Table:
        redacted, batch_counts = redact(pl.DataFrame(table), self.patterns, self.allowlist)
        for kind, count in batch_counts.items():
            self.counts[kind] = self.counts.get(kind, 0) + count
        return redacted.to_arrow().cast(table.schema)


def secret_redactor(on_secret: OnSecret, pattern_spec: str, allowlist_spec: str) -> Redactor | None:
    """The redaction publishing applies, or None when rows go out as they are."""
    return Redactor(pattern_spec, allowlist_spec) if on_secret == "redact" else None
