"""What the UI shows of a run: coverage and scan figures, and their tables.

Counts stay numbers (with `dagster/row_count` and the mean reward, to 3 places, Dagster plots them
over time); ratios and sizes are text as a person reads them (82.4%, 553.4 MB); counts by name are
one line of text, "none" for none (the UI would show an empty dict as `{}`).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import dagster as dg
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from trace_assets.core.accounting import REASON_DESCRIPTIONS, Coverage, Reason, TrialStatus
from trace_assets.publishing.card import COLUMN_MEANINGS, found_kinds, kinds_scanned, type_name
from trace_assets.publishing.card_facts import CardFacts

SCAN_COUNTS = ("patterns", "matches", "rows", "trials", "tasks", "live", "unverified", "near_miss", "placeholder")
PRIVACY_COUNTS = ("matches", "placeholders", "values", "rows", "trials")
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
EXCLUDED_TRIALS_SHOWN = 300
DETAIL_CHARS = 300


def size_text(num_bytes: int) -> dg.MetadataValue:
    """Bytes as the UI should show them: 553.4 MB, with the exact count after."""
    for unit, scale in (("GB", 10**9), ("MB", 10**6), ("kB", 10**3)):
        if num_bytes >= scale:
            return dg.MetadataValue.text(f"{num_bytes / scale:,.1f} {unit} ({num_bytes:,} bytes)")
    return dg.MetadataValue.text(f"{num_bytes:,} bytes")


def percent_text(ratio: float) -> str:
    return f"{ratio:.1%}"


def counts_text(counts: Mapping[str, int]) -> dg.MetadataValue:
    """Counts by name, largest first: "hf_token: 2, aws_access_key_id: 1", or "none"."""
    ordered = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return dg.MetadataValue.text(", ".join(f"{name}: {n}" for name, n in ordered) or "none")


def coverage_metadata(coverage: Coverage) -> dict[str, dg.MetadataValue]:
    """Coverage as UI metadata: the numbers, and a table of why folders have no row (the rows are
    counted by each asset: `rows`, or the catalog's `dagster/row_count` once published)."""
    reasons = sorted(coverage.excluded.items(), key=lambda item: -item[1])
    return {
        "trial_dirs": dg.MetadataValue.int(coverage.trial_dirs),
        "scored": dg.MetadataValue.int(coverage.scored),
        "unscored": dg.MetadataValue.int(coverage.unscored),
        "exported": dg.MetadataValue.int(coverage.exported),
        "excluded_total": dg.MetadataValue.int(sum(coverage.excluded.values())),
        "export_ratio": dg.MetadataValue.text(f"{percent_text(coverage.export_ratio)} of scored"),
        "excluded": dg.MetadataValue.table(
            records=[
                dg.TableRecord({"reason": reason, "folders": count, "meaning": _meaning(reason)})
                for reason, count in reasons
            ],
            schema=dg.TableSchema(
                columns=[
                    dg.TableColumn("reason", "string"),
                    dg.TableColumn("folders", "int"),
                    dg.TableColumn("meaning", "string"),
                ]
            ),
        ),
    }


def _meaning(reason: str) -> str:
    known = {r.value: r for r in Reason}
    return REASON_DESCRIPTIONS[known[reason]] if reason in known else reason


def excluded_trials_metadata(statuses: Path) -> dict[str, dg.MetadataValue]:
    """The first excluded trial folders with their reason and detail, for the UI."""
    table = pq.read_table(statuses, columns=["trial_name", "status", "reason", "detail"])
    excluded = table.filter(pc.equal(table["status"], TrialStatus.EXCLUDED.value)).slice(0, EXCLUDED_TRIALS_SHOWN)
    return {
        "excluded_trials": dg.MetadataValue.table(
            records=[
                dg.TableRecord(
                    {
                        "trial_name": r["trial_name"],
                        "reason": r["reason"] or "",
                        "detail": (r["detail"] or "")[:DETAIL_CHARS],
                    }
                )
                for r in excluded.to_pylist()
            ],
            schema=dg.TableSchema(columns=[dg.TableColumn(c, "string") for c in ("trial_name", "reason", "detail")]),
        )
    }


def dataset_metadata(rows: int, schema: pa.Schema) -> dict[str, dg.MetadataValue]:
    """The catalog's row count and column schema for the published dataset."""
    return {
        "dagster/row_count": dg.MetadataValue.int(rows),
        "dagster/column_schema": dg.MetadataValue.table_schema(
            dg.TableSchema(
                columns=[dg.TableColumn(f.name, type_name(f.type), COLUMN_MEANINGS.get(f.name)) for f in schema]
            )
        ),
    }


def reward_metadata(facts: CardFacts) -> dict[str, dg.MetadataValue]:
    """The mean finite, valid reward of the exported trials to 3 places, as a number the sweep view
    reads back (none without one), and how many rewards were no finite number or marked invalid
    (none when none were)."""
    rewards, not_finite = facts.reward_stats, sum(facts.rewards_not_finite.values())
    return {
        **({"mean_reward": dg.MetadataValue.float(round(rewards.mean, 3))} if rewards.count else {}),
        **({"rewards_not_finite": dg.MetadataValue.int(not_finite)} if not_finite else {}),
        **({"rewards_invalid": dg.MetadataValue.int(facts.invalid_rewards)} if facts.invalid_rewards else {}),
    }


def scan_metadata(report: dict[str, Any], path: Path) -> dict[str, dg.MetadataValue]:
    """The scan's verdict, what it searched for in one line, counts for each kind it found, live and
    unverified findings per trial, and PEM blocks; fingerprints, never the strings."""
    kinds = found_kinds(report)
    findings = [f for f in report.get("findings", []) if f.get("verdict") in ("live", "unverified")]
    return {
        "verdict": dg.MetadataValue.text(report["verdict"]),
        "searched": dg.MetadataValue.text(f"{kinds_scanned(report)}; {len(kinds):,} with a match"),
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
        **privacy_metadata(report),
        "path": dg.MetadataValue.path(str(path)),
    }


def privacy_metadata(report: dict[str, Any]) -> dict[str, dg.MetadataValue]:
    """Per privacy category: matches, placeholders among them, distinct values, rows and trials
    (counts only); then the trials holding a private value, one row per category with its tokens
    (the first trials met, the rest counted): tokens, never a value."""
    if "privacy" not in report:
        return {}
    privacy = report["privacy"]
    categories = privacy["categories"]
    trials = [
        dg.TableRecord(
            {
                "trial_name": entry["trial_name"],
                "category": category,
                "values": int(listed["values"]),
                "tokens": _tokens_text(listed["tokens"], int(listed["values"])),
            }
        )
        for entry in privacy.get("trials", [])
        for category, listed in entry["categories"].items()
    ]
    omitted = int(privacy.get("trials_omitted", 0))
    return {
        "privacy": dg.MetadataValue.table(
            records=[
                dg.TableRecord({"category": name, **{k: int(v.get(k, 0)) for k in PRIVACY_COUNTS}})
                for name, v in categories.items()
            ],
            schema=dg.TableSchema(
                columns=[dg.TableColumn("category", "string")] + [dg.TableColumn(k, "int") for k in PRIVACY_COUNTS]
            ),
        ),
        "private_trials": dg.MetadataValue.table(
            records=trials,
            schema=dg.TableSchema(
                columns=[
                    dg.TableColumn("trial_name", "string"),
                    dg.TableColumn("category", "string"),
                    dg.TableColumn("values", "int"),
                    dg.TableColumn("tokens", "string"),
                ]
            ),
        ),
        **({"private_trials_omitted": dg.MetadataValue.int(omitted)} if omitted else {}),
    }


def _tokens_text(tokens: list[str], values: int) -> str:
    """`[EMAIL-1], [EMAIL-3]`, and how many more the report left out."""
    more = values - len(tokens)
    return ", ".join(tokens) + (f" (and {more:,} more)" if more > 0 else "")
