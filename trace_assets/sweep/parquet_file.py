"""The sweep view's Parquet file: one row per published scope, in the view's order. Apart from
`view.py`, whose tables `trace-assets status` prints without loading pyarrow."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from trace_assets.sweep.view import ScopeRecord, sorted_records

SCHEMA = pa.schema(
    [
        ("scope", pa.string()),
        ("run", pa.string()),
        ("step", pa.int64()),
        ("trial_dirs", pa.int64()),
        ("scored", pa.int64()),
        ("exported", pa.int64()),
        ("export_ratio", pa.float64()),
        ("excluded", pa.int64()),
        ("excluded_by_reason", pa.map_(pa.string(), pa.int64())),
        ("secret_verdict", pa.string()),
        ("rows", pa.int64()),
        ("mean_reward", pa.float64()),
        ("published_at", pa.string()),
        ("published_to", pa.string()),
    ]
)


def as_rows(records: list[ScopeRecord]) -> list[dict[str, Any]]:
    """One plain dict per scope, in SCHEMA's columns and the view's order."""
    return [
        {
            "scope": r.scope,
            "run": r.run,
            "step": r.step,
            "trial_dirs": r.trial_dirs,
            "scored": r.scored,
            "exported": r.exported,
            "export_ratio": round(r.export_ratio, 6),
            "excluded": sum(r.excluded.values()),
            "excluded_by_reason": sorted(r.excluded.items(), key=lambda item: (-item[1], item[0])),
            "secret_verdict": r.secret_verdict,
            "rows": r.rows,
            "mean_reward": r.mean_reward,
            "published_at": r.published_at,
            "published_to": r.published_to,
        }
        for r in sorted_records(records)
    ]


def write_parquet(records: list[ScopeRecord], path: Path) -> None:
    pq.write_table(pa.Table.from_pylist(as_rows(records), schema=SCHEMA), path)
