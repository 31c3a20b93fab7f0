"""`trace-assets materialize --dry-run`: each scope through the steps without Dagster and without
the publish target's writes; one JSON line a scope saying what would be published, or what blocks it."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from trace_assets.cli.console import say
from trace_assets.cli.report import coverage_sentence, unblocking
from trace_assets.cli.scopes import why_missing
from trace_assets.core.scope import RunScope

if TYPE_CHECKING:
    from trace_assets.defs.resources import TraceAssetsConfig


def dry_run_runs(run_ids: list[str], trace_config: TraceAssetsConfig) -> int:
    from trace_assets.orchestration.dry_run import dry_run
    from trace_assets.orchestration.options import scan_policy

    parts = trace_config.parts()
    target = parts.publish_target()  # built once, for every scope
    store = parts.store()  # likewise
    failures = 0
    for run_id in run_ids:
        scope = RunScope.from_key(run_id)  # a run, or a step of one
        reason = why_missing(store, scope)
        if reason:
            failures += 1
            say(f"{run_id}: {reason}")
            print(json.dumps({"run_id": run_id, "status": "failed", "reason": reason}), flush=True)
            continue
        ctx = parts.scope_context(scope, say, target)
        staging = ctx.staging
        with staging.locked(say, holder=f"trace-assets materialize --dry-run {run_id}"):
            line = dry_run(ctx, trace_config.raw_scan)
        plan = line["would_publish"]
        lifts = unblocking(scan_policy(trace_config), staging.scan_report)
        if plan.get("blocked") and lifts:
            plan["blocked"] += f"; {lifts}"
        outcome = plan.get("blocked") or plan.get("refused") or f"{plan['rows']} rows in {plan['shards']} shard(s)"
        raw = line.get("raw_scan")
        raw_note = f"; raw tree: {raw['verdict']} in {raw['objects_with_findings']} object(s)" if raw else ""
        say(
            f"{run_id}: {coverage_sentence(line)}; scan verdict {line['verdict']}{raw_note}; "
            f"would publish to {plan['to']}: {outcome}"
        )
        print(json.dumps({"run_id": run_id, **line}), flush=True)
        failures += bool(plan.get("blocked") or plan.get("refused"))  # as the real run would fail
    return 1 if failures else 0
