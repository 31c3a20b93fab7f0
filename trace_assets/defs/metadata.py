"""What the UI shows of a run: coverage and scan figures, and their tables."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import dagster as dg

from trace_assets.accounting import Coverage

SCAN_COUNTS = ("patterns", "matches", "rows", "trials", "tasks", "live", "unverified", "placeholder")
FINDING_COLUMNS = ("kind", "verdict", "fingerprint", "trial_name", "task", "framing")
FINDINGS_SHOWN = 200
PEM_BLOCK_COLUMNS = {
    "trial_name": "string",
    "parseable": "bool",
    "placeholder": "bool",
    "decoded_bytes": "int",
    "verdict": "string",
    "fingerprint": "string",
}
PEM_BLOCKS_SHOWN = 200


def coverage_metadata(coverage: Coverage) -> dict[str, dg.MetadataValue]:
    """Coverage as UI metadata: the numbers, and a table of why folders have no row."""
    reasons = sorted(coverage.excluded.items(), key=lambda item: -item[1])
    return {
        "trial_dirs": dg.MetadataValue.int(coverage.trial_dirs),
        "scored": dg.MetadataValue.int(coverage.scored),
        "unscored": dg.MetadataValue.int(coverage.unscored),
        "exported": dg.MetadataValue.int(coverage.exported),
        "excluded_total": dg.MetadataValue.int(sum(coverage.excluded.values())),
        "export_ratio": dg.MetadataValue.float(round(coverage.export_ratio, 6)),
        "rows": dg.MetadataValue.int(coverage.rows),
        "excluded": dg.MetadataValue.table(
            records=[dg.TableRecord({"reason": reason, "folders": count}) for reason, count in reasons],
            schema=dg.TableSchema(columns=[dg.TableColumn("reason", "string"), dg.TableColumn("folders", "int")]),
        ),
    }


def scan_metadata(report: dict[str, Any], path: Path) -> dict[str, dg.MetadataValue]:
    """The scan's verdict, counts for every kind scanned, live and unverified findings per trial, and
    PEM blocks; fingerprints, never the strings."""
    kinds = report.get("kinds", {})
    findings = [f for f in report.get("findings", []) if f.get("verdict") in ("live", "unverified")]
    return {
        "verdict": dg.MetadataValue.text(report["verdict"]),
        "kinds": dg.MetadataValue.table(
            records=[
                dg.TableRecord({"kind": kind, **{k: int(v.get(k, 0)) for k in SCAN_COUNTS}})
                for kind, v in sorted(kinds.items(), key=lambda item: (-item[1].get("matches", 0), item[0]))
            ],
            schema=dg.TableSchema(
                columns=[dg.TableColumn("kind", "string")] + [dg.TableColumn(k, "int") for k in SCAN_COUNTS]
            ),
        ),
        "findings": dg.MetadataValue.table(
            records=[
                dg.TableRecord({c: str(f.get(c) or "") for c in FINDING_COLUMNS}) for f in findings[:FINDINGS_SHOWN]
            ],
            schema=dg.TableSchema(columns=[dg.TableColumn(c, "string") for c in FINDING_COLUMNS]),
        ),
        "pem_blocks": dg.MetadataValue.table(
            records=[
                dg.TableRecord({column: block[column] for column in PEM_BLOCK_COLUMNS})
                for block in report.get("pem_blocks", [])[:PEM_BLOCKS_SHOWN]
            ],
            schema=dg.TableSchema(columns=[dg.TableColumn(name, kind) for name, kind in PEM_BLOCK_COLUMNS.items()]),
        ),
        "path": dg.MetadataValue.path(str(path)),
    }
