"""The Hugging Face dataset card: a YAML header the Hub and `datasets` read, then the run in prose."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pyarrow as pa
import yaml

from trace_assets.accounting import REASON_DESCRIPTIONS, Coverage, Reason
from trace_assets.harbor.options import ExportOptions
from trace_assets.publishing.sessions_card import sessions_config, sessions_prose
from trace_assets.publishing.shards import ShardSet
from trace_assets.steps.sessions import SessionCounts


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


# An extra config (a subagent kind under `--subagents separate`): its data folder, rows and shards.
Subsets = Mapping[str, tuple[str, pa.Schema, ShardSet]]


def _info(schema: pa.Schema, shards: ShardSet) -> dict[str, Any]:
    return {
        "features": [{"name": f.name, **_feature(f.type)} for f in schema],
        "splits": [{"name": "train", "num_bytes": shards.num_bytes, "num_examples": shards.num_examples}],
        "download_size": shards.download_size,
        "dataset_size": shards.num_bytes,
    }


def card_header(
    schema: pa.Schema, shards: ShardSet, subsets: Subsets | None = None, sessions: SessionCounts | None = None
) -> dict[str, Any]:
    configs = [{"config_name": "default", "data_files": [{"split": "train", "path": shards.data_files}]}]
    info: dict[str, Any] | list[dict[str, Any]] = _info(schema, shards)
    if subsets:
        configs += [
            {"config_name": name, "data_files": [{"split": "train", "path": sub_shards.data_files}]}
            for name, (_, _, sub_shards) in subsets.items()
        ]
        info = [{"config_name": "default", **_info(schema, shards)}] + [
            {"config_name": name, **_info(sub_schema, sub_shards)}
            for name, (_, sub_schema, sub_shards) in subsets.items()
        ]
    if sessions is not None:
        configs.append(sessions_config(sessions))
    return {"configs": configs, "dataset_info": info, "tags": ["harbor", "agent-traces", "reinforcement-learning"]}


def intro_prose(options: ExportOptions, schema: pa.Schema) -> str:
    """What a row is and the Harbor command that writes the same columns, from the options and schema."""
    default_flags = ExportOptions().harbor_flags()
    flags = options.harbor_flags()
    command = " ".join(flags[:1] + [flag for flag in flags[1:] if flag not in default_flags])
    rows = (
        "One row per exported trial: its last episode"
        if options.episodes == "last"
        else "One row per episode of each exported trial (`episode` numbers them across continuations)"
    )
    subagents = {
        "none": "",
        "merged": ", plus one row per subagent conversation (`trace_source` names its kind)",
        "separate": " (subagent conversations are in a config per kind)",
    }[options.subagents]
    columns = ", ".join(f.name for f in schema if f.name != "conversations")
    return (
        f"{rows} as an OpenAI-style `conversations` list{subagents}, "
        f"with the same columns `harbor traces export {command}` writes ({columns})."
    )


def options_prose(options: ExportOptions, shards: ShardSet, subsets: Subsets) -> str:
    """The export options in force, when they are not the defaults, and the extra configs."""
    flags = ", ".join(f"`{flag}`" for flag in options.harbor_flags())
    paragraphs = [f"Exported with these options (Harbor's flag names): {flags}."]
    if options.success_filter != "all":
        paragraphs.append(
            f"Only trials whose reward is {'above' if options.success_filter == 'success' else 'not above'} 0 "
            "were exported (an exception counts as a failure, as in Harbor); the rest are `filtered_out` below."
        )
    if options.sharegpt:
        paragraphs.append("`conversations_sharegpt` holds the same messages in ShareGPT form (`human`/`gpt`).")
    if subsets:
        table = [
            "| config | rows | files |",
            "|---|---:|---|",
            f"| `default` (main agent) | {shards.num_examples:,} | `data/` |",
        ]
        table += [f"| `{name}` | {sub.num_examples:,} | `{folder}/` |" for name, (folder, _, sub) in subsets.items()]
        paragraphs.append("\n".join(table))
    return "\n\n".join(paragraphs)


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
    """The scan per kind: every kind scanned, the ones with findings in a table, and what was done."""
    verdict = report.get("verdict", "unknown")
    all_kinds = report.get("kinds") or {}
    kinds = {k: v for k, v in all_kinds.items() if v.get("matches")}
    patterns = sum(v.get("patterns", 1) for v in all_kinds.values())
    scanned = f"{len(all_kinds)} kinds ({patterns} patterns)"
    if not kinds:
        lines = [
            f"The secret scan found no credential-shaped strings in the rows (verdict: `clean`); it looked for {scanned}."
        ]
    else:
        as_read = report.get("verdict_as_read")
        lines = [
            f"Secret scan verdict: **`{verdict}`**"
            + (f" (`{as_read}` as read)" if as_read else "")
            + f". Credential-shaped strings found in the rows as read, of the {scanned} scanned for:",
            "",
            "| kind | matches | rows | trials | tasks | live | unverified | placeholder |",
            "|---|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for kind, c in sorted(kinds.items()):
            lines.append(
                f"| `{kind}` | {c['matches']:,} | {c['rows']:,} | {c['trials']:,} | {c.get('tasks', 0):,} "
                f"| {c.get('live', 0):,} | {c.get('unverified', 0):,} | {c.get('placeholder', 0):,} |"
            )
    if report.get("unverified"):
        lines.append("")
        lines.append(
            f"{report['unverified']:,} matches have a credential's rough shape but not its exact format "
            "(`unverified`): by default publishing replaces them; placeholders are kept."
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
        per_kind = ", ".join(f"`{kind}` {count:,}" for kind, count in sorted(redacted.items()) if count)
        lines.append("")
        lines.append(f"{total:,} matches were replaced by `[REDACTED:<kind>]` in the published rows ({per_kind}).")
    quiet = sorted(k for k in all_kinds if k not in kinds)
    if kinds and quiet:
        lines.append("")
        lines.append("Kinds scanned for with no finding: " + ", ".join(f"`{k}`" for k in quiet) + ".")
    lines.append("")
    lines.append("Details, with fingerprints instead of the strings themselves, are in `secret_scan.json`.")
    return "\n".join(lines)


def dataset_card(
    coverage: Coverage,
    scan_report: dict[str, Any],
    shards: ShardSet,
    schema: pa.Schema,
    options: ExportOptions | None = None,
    subsets: Subsets | None = None,
    sessions: SessionCounts | None = None,
) -> str:
    options = options or ExportOptions()
    header = yaml.safe_dump(card_header(schema, shards, subsets, sessions), sort_keys=False)
    options_section = (
        f"## Export options\n\n{options_prose(options, shards, subsets or {})}\n\n"
        if options != ExportOptions()
        else ""
    )
    sessions_section = f"## Sessions\n\n{sessions_prose(sessions)}\n\n" if sessions is not None else ""
    return (
        f"---\n{header}---\n\n"
        f"# Harbor traces: {coverage.run_id}\n\n"
        f"{intro_prose(options, schema)}\n\n"
        f"{options_section}"
        f"{sessions_section}"
        f"## Coverage\n\n{coverage_prose(coverage)}\n\n"
        f"## Secret scan\n\n{scan_prose(scan_report)}\n"
    )
