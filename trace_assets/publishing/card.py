"""The Hugging Face dataset card: a YAML header the Hub and `datasets` read, then the run in prose."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import yaml

from trace_assets.accounting import REASON_DESCRIPTIONS, Coverage, Reason
from trace_assets.publishing.shards import ShardSet


def _feature(arrow_type: pa.DataType) -> dict[str, Any]:
    """Arrow type -> the `dataset_info.features` entry `datasets` writes for it."""
    if pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type):
        item = arrow_type.value_type
        if pa.types.is_struct(item):
            return {"list": [{"name": f.name, **_feature(f.type)} for f in item]}
        return {"list": _feature(item)}
    if pa.types.is_struct(arrow_type):
        return {"struct": [{"name": f.name, **_feature(f.type)} for f in arrow_type]}
    if pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type):
        return {"dtype": "string"}
    if pa.types.is_floating(arrow_type):
        return {"dtype": f"float{arrow_type.bit_width}"}
    if pa.types.is_integer(arrow_type):
        return {"dtype": f"int{arrow_type.bit_width}"}
    if pa.types.is_boolean(arrow_type):
        return {"dtype": "bool"}
    raise TypeError(f"no dataset feature for Arrow type {arrow_type}")


def card_header(schema: pa.Schema, shards: ShardSet) -> dict[str, Any]:
    return {
        "configs": [{"config_name": "default", "data_files": [{"split": "train", "path": shards.data_files}]}],
        "dataset_info": {
            "features": [{"name": f.name, **_feature(f.type)} for f in schema],
            "splits": [{"name": "train", "num_bytes": shards.num_bytes, "num_examples": shards.num_examples}],
            "download_size": shards.download_size,
            "dataset_size": shards.num_bytes,
        },
        "tags": ["harbor", "agent-traces", "reinforcement-learning"],
    }


def _percent(part: int, whole: int) -> str:
    return f"{100 * part / whole:.2f}%" if whole else "n/a"


def coverage_prose(coverage: Coverage) -> str:
    """The run described the way a person would: folders, scored, exported, why the rest were not."""
    lines = [
        f"The run's `trace_jobs/` held **{coverage.trial_dirs:,}** trial folders. "
        f"**{coverage.scored:,}** were scored (had a `result.json`)"
        + (f" and {coverage.unscored:,} were not" if coverage.unscored else "")
        + f". **{coverage.exported:,}** trials were exported, {_percent(coverage.exported, coverage.scored)} "
        f"of the scored ones, as {coverage.rows:,} rows"
        + (f" ({coverage.subagent_rows:,} of them subagent conversations)" if coverage.subagent_rows else "")
        + "."
    ]
    excluded = {k: v for k, v in coverage.excluded.items() if v}
    if excluded:
        lines.append("")
        lines.append("Trial folders with no row:")
        lines.append("")
        lines.append("| reason | folders | what it means |")
        lines.append("|---|---:|---|")
        for reason, count in sorted(excluded.items(), key=lambda item: -item[1]):
            lines.append(f"| `{reason}` | {count:,} | {REASON_DESCRIPTIONS.get(Reason(reason), reason)} |")
    lines.append("")
    lines.append("Every folder's status and reason is in `trials.parquet`; the counts are in `coverage.json`.")
    return "\n".join(lines)


def scan_prose(report: dict[str, Any]) -> str:
    verdict = report.get("verdict", "unknown")
    kinds = {k: v for k, v in (report.get("kinds") or {}).items() if v.get("matches")}
    if not kinds:
        return "The secret scan found no credential-shaped strings in the rows (verdict: `clean`)."
    lines = [f"Secret scan verdict: **`{verdict}`**. Credential-shaped strings found in the rows as read:", ""]
    lines.append("| kind | matches | rows | trials | live | unverified | placeholder |")
    lines.append("|---|---:|---:|---:|---:|---:|---:|")
    for kind, c in sorted(kinds.items()):
        lines.append(
            f"| `{kind}` | {c['matches']:,} | {c['rows']:,} | {c['trials']:,} | {c.get('live', 0):,} "
            f"| {c.get('unverified', 0):,} | {c.get('placeholder', 0):,} |"
        )
    if report.get("unverified"):
        lines.append("")
        lines.append(
            f"{report['unverified']:,} matches have a credential's rough shape but not its exact format "
            "(`unverified`): they do not block publishing, and redact mode replaces them."
        )
    pem = report.get("pem") or {}
    if pem.get("blocks"):
        lines.append("")
        lines.append(
            f"{pem.get('markers', 0):,} PEM private-key markers in {pem.get('rows', 0):,} rows from "
            f"{pem.get('tasks', 0):,} task(s); of {pem['blocks']:,} blocks, {pem.get('parseable', 0):,} parsed as a key, "
            f"{pem.get('placeholder', 0):,} held a `...` placeholder, the longest decoded to {pem.get('max_decoded_bytes', 0):,} bytes."
        )
    redacted = report.get("redacted") or {}
    if any(redacted.values()):
        total = sum(redacted.values())
        lines.append("")
        lines.append(f"{total:,} matches were replaced by `[REDACTED:<kind>]` in the published rows.")
    lines.append("")
    lines.append("Details, with fingerprints instead of the strings themselves, are in `secret_scan.json`.")
    return "\n".join(lines)


def dataset_card(coverage: Coverage, scan_report: dict[str, Any], shards: ShardSet, schema: pa.Schema) -> str:
    header = yaml.safe_dump(card_header(schema, shards), sort_keys=False)
    return (
        f"---\n{header}---\n\n"
        f"# Harbor traces: {coverage.run_id}\n\n"
        "One row per exported trial: its last episode as an OpenAI-style `conversations` list, "
        "with the same columns `harbor traces export --episodes last` writes "
        "(agent, model, model_provider, date, task, episode, run_id, trial_name, result, instruction, "
        "verifier_output).\n\n"
        f"## Coverage\n\n{coverage_prose(coverage)}\n\n"
        f"## Secret scan\n\n{scan_prose(scan_report)}\n"
    )
