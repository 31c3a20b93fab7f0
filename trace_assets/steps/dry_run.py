"""`--dry-run`: list, score, export and scan a scope into its staging folder, then say what a
publish would do (where, how many rows, blocked or refused) without writing anything published."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from trace_assets.harbor.options import ExportOptions
from trace_assets.progress import Progress
from trace_assets.publishing.shards import shard_count
from trace_assets.publishing.shrink_guard import ShrinkRefused, refuse_worse_version
from trace_assets.publishing.targets import PublishTarget
from trace_assets.secret_scan.policy import ScanPolicy
from trace_assets.secret_scan.scanner import ScanOptions
from trace_assets.steps.listing import build_listing
from trace_assets.steps.raw_scan import RAW_SCAN_REPORT, raw_scan
from trace_assets.steps.rows import export_rows
from trace_assets.steps.scan import scan_run
from trace_assets.steps.scoring import score_trials
from trace_assets.steps.sessions import SessionWriter
from trace_assets.steps.staging import RunStaging, write_json_atomically
from trace_assets.store.trace_store import TraceStore


def dry_run(
    store: TraceStore,
    staging: RunStaging,
    options: ExportOptions,
    batch_size: int,
    max_rows_per_shard: int,
    scan: tuple[ScanOptions, ScanPolicy],
    target: PublishTarget,
    shrink_threshold: float | None,  # None: --allow-shrink
    progress: Progress,
    sessions: tuple[SessionWriter, Path] | None = None,
    raw_tree: bool = False,
) -> dict[str, Any]:
    """The scope's JSON line: its coverage, the scan verdict, `would_publish`, and with `raw_tree`
    the raw-tree scan's summary (its report in staging, as the check writes it)."""
    scan_options, policy = scan
    build_listing(store, staging, progress)
    score_trials(store, staging, batch_size, progress)
    coverage, _ = export_rows(
        store, staging, options, batch_size, progress, max_rows_per_shard, sessions[0] if sessions else None
    )
    report = scan_run(
        staging.require_rows(), staging.scope.key, scan_options, sessions[1] if sessions else None, progress
    )
    write_json_atomically(staging.scan_report, report)  # where a blocked scope's report is read
    where = target.location(staging.scope)
    blocking = policy.blocking(report)
    refused = None
    if shrink_threshold is not None:
        try:
            refuse_worse_version(
                staging.scope.key, coverage, target.published_coverage(staging.scope), shrink_threshold, where
            )
        except ShrinkRefused as error:
            refused = str(error)
    plan: dict[str, Any] = {
        "to": where,
        "rows": coverage.rows,
        "shards": shard_count(coverage.rows, max_rows_per_shard),
    }
    if blocking:
        plan.update(blocked=f"live or blocked findings: {blocking}; only secret_scan.json would be published")
    if refused:
        plan.update(refused=refused)
    line = {**coverage.as_dict(), "status": "dry_run", "verdict": report["verdict"], "would_publish": plan}
    if raw_tree:
        raw = raw_scan(store, staging.scope, scan_options, progress)
        write_json_atomically(staging.folder / RAW_SCAN_REPORT, raw)
        line["raw_scan"] = {
            "verdict": raw["verdict"],
            "objects_scanned": raw["objects_scanned"],
            "objects_with_findings": raw["objects_with_findings"],
            "acted_on": policy.acted_on(raw),  # per kind: what the policy would block or redact if published
        }
    return line
