"""The secret scan over a run's staged rows, and the redaction applied while publishing."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import polars as pl
import pyarrow as pa

from trace_assets.row_parts import RowParts, iter_rows
from trace_assets.secret_scan import SecretScanner, parse_pattern_specs, redact

SCAN_BATCH_ROWS = 256  # rows are whole conversations: a batch of them is tens of MB


def _allowlist(spec: str) -> list[str]:
    return [item.strip() for item in spec.split(",") if item.strip()]


def scan_run(rows: RowParts, run_id: str, pattern_spec: str, allowlist_spec: str) -> dict[str, Any]:
    """Scan every text column of every row, a batch at a time."""
    scanner = SecretScanner(run_id, parse_pattern_specs(pattern_spec), _allowlist(allowlist_spec))
    for table in iter_rows(rows, SCAN_BATCH_ROWS):
        scanner.scan(pl.from_arrow(table))
    return scanner.report()


def secret_redactor(
    on_secret: str, pattern_spec: str, allowlist_spec: str, report: dict[str, Any]
) -> tuple[Callable[[pa.Table], pa.Table] | None, dict[str, int]]:
    """The per-batch transform publishing applies (None: rows go out as they are), and the
    redaction counts it fills in.

    The counts dict is the report's own `redacted` entry, so the published report carries them.
    """
    counts: dict[str, int] = report.setdefault("redacted", {})
    if on_secret != "redact":
        return None, counts
    patterns = parse_pattern_specs(pattern_spec)
    allowlist = _allowlist(allowlist_spec)

    def transform(table: pa.Table) -> pa.Table:
        redacted, batch_counts = redact(pl.from_arrow(table), patterns, allowlist)
        for kind, count in batch_counts.items():
            counts[kind] = counts.get(kind, 0) + count
        return redacted.to_arrow().cast(table.schema)

    return transform, counts
