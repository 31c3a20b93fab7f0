"""`--dry-run`: the same staged steps as the assets (`pipeline.run_staged_steps`) into the scope's
staging folder, with a target that writes nothing, then what a publish would do (where, how many
rows, blocked or refused)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from trace_assets.core.accounting import Coverage
from trace_assets.core.scope import RunScope
from trace_assets.orchestration.context import ScopeContext
from trace_assets.orchestration.pipeline import run_staged_steps
from trace_assets.publishing.shards import shard_count
from trace_assets.publishing.shrink_guard import ShrinkRefused, refuse_worse_version
from trace_assets.publishing.targets import PublishTarget
from trace_assets.runtime.progress import Progress, quiet
from trace_assets.steps.raw_scan import RAW_SCAN_REPORT, raw_scan
from trace_assets.steps.staging import write_json_atomically


@dataclass(frozen=True)
class ReadOnlyTarget:
    """A publish target that reads what is published and writes nothing."""

    published: PublishTarget

    def location(self, scope: RunScope) -> str:
        return self.published.location(scope)

    def publish(self, local_dir: Path, scope: RunScope, progress: Progress = quiet) -> str:
        raise RuntimeError(f"a dry run publishes nothing (asked to publish {scope.key})")

    def published_coverage(self, scope: RunScope) -> dict[str, Any] | None:
        return self.published.published_coverage(scope)

    def published_file(self, scope: RunScope, name: str) -> bytes | None:
        return self.published.published_file(scope, name)

    def check_writable(self, scope: RunScope) -> None:
        self.published.check_writable(scope)

    def publish_blocked(self, scan_report: Path, scope: RunScope, versions: list[dict[str, Any]] | None = None) -> bool:
        """The blocked scope's report stays in staging: nothing published is removed."""
        return False

    def record_versions(self, scope: RunScope, versions: list[dict[str, Any]]) -> bool:
        """Nothing published is written."""
        return False

    def publish_root_file(self, local_file: Path) -> str | None:
        return None


def dry_run(ctx: ScopeContext, raw_tree: bool = False) -> dict[str, Any]:
    """The scope's JSON line: its coverage, the scan verdict, `would_publish`, and with `raw_tree`
    the raw-tree scan's summary (its report in staging, as the check writes it)."""
    target = ReadOnlyTarget(ctx.target)
    ctx = replace(ctx, make_target=lambda: target)
    results = run_staged_steps(ctx)
    coverage: Coverage = results["last_episode_rows"][0]
    report: dict[str, Any] = results["secret_scan_report"].report
    where = target.location(ctx.scope)
    blocking = ctx.policy.blocking(report)
    refused = None
    if ctx.shrink_threshold is not None:
        try:
            refuse_worse_version(
                ctx.scope.key,
                coverage,
                target.published_coverage(ctx.scope),
                ctx.shrink_threshold,
                where,
                ctx.shrink_override,
            )
        except ShrinkRefused as error:
            refused = str(error)
    plan: dict[str, Any] = {
        "to": where,
        "rows": coverage.rows,
        "shards": shard_count(coverage.rows, ctx.max_rows_per_shard),
    }
    if blocking:
        plan.update(blocked=f"live or blocked findings: {blocking}; only secret_scan.json would be published")
    if refused:
        plan.update(refused=refused)
    line = {**coverage.as_dict(), "status": "dry_run", "verdict": report["verdict"], "would_publish": plan}
    if raw_tree:
        raw = raw_scan(ctx.store, ctx.scope, ctx.scan_options, ctx.progress)
        write_json_atomically(ctx.staging.folder / RAW_SCAN_REPORT, raw)
        line["raw_scan"] = {
            "verdict": raw["verdict"],
            "objects_scanned": raw["objects_scanned"],
            "objects_with_findings": raw["objects_with_findings"],
            "acted_on": ctx.policy.acted_on(raw),  # per kind: what the policy would block or redact if published
        }
    return line
