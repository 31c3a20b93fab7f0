"""The pipeline's order, written once: the staged steps, each a function of the scope's context,
then publishing. The assets' chain (`upstream_of`) and `--dry-run` both read `STAGED_STEPS`, so a
new step is one entry here (and its asset)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from trace_assets.accounting import Coverage
from trace_assets.steps.context import ScopeContext
from trace_assets.steps.listing import ListingStats, build_listing
from trace_assets.steps.rows import export_rows
from trace_assets.steps.scan import scan_run
from trace_assets.steps.scoring import StepStats, score_trials
from trace_assets.steps.staging import write_json_atomically

PUBLISH_STEP = "published_shards"


def list_trials(ctx: ScopeContext) -> ListingStats:
    """Every trial folder of the scope, from one recursive listing."""
    return build_listing(ctx.store, ctx.staging, ctx.progress)


def score(ctx: ScopeContext) -> StepStats:
    """Each folder's result.json read as a TrialResult."""
    return score_trials(ctx.store, ctx.staging, ctx.batch_size, ctx.progress)


def export(ctx: ScopeContext) -> tuple[Coverage, StepStats]:
    """Harbor's rows for every scored trial, a status for every folder, and the session files."""
    return export_rows(
        ctx.store,
        ctx.staging,
        ctx.options,
        ctx.batch_size,
        ctx.progress,
        rows_per_part=ctx.max_rows_per_shard,
        sessions=ctx.session_writer(),
    )


def scan(ctx: ScopeContext) -> dict[str, Any]:
    """The secret scan of the rows and session files, its report staged; a scope the policy blocks
    has only that report published (a target that writes nothing skips it)."""
    staging = ctx.staging
    report = scan_run(
        staging.require_rows(),
        ctx.scope.key,
        ctx.scan_options,
        ctx.sessions_folder(),
        ctx.progress,
        staging.scan_matches,
    )
    write_json_atomically(staging.scan_report, report)
    ctx.progress(f"secret scan verdict: {report['verdict']}")
    if ctx.policy.blocking(report):
        ctx.target.publish_blocked(staging.scan_report, ctx.scope)
    return report


class Step(NamedTuple):
    name: str  # the asset's name
    run: Callable[[ScopeContext], Any]


STAGED_STEPS = (
    Step("raw_trial_listing", list_trials),
    Step("scored_trials", score),
    Step("last_episode_rows", export),
    Step("secret_scan_report", scan),
)
ORDER = (*(step.name for step in STAGED_STEPS), PUBLISH_STEP)


def upstream_of(name: str) -> list[str]:
    """The step before `name` in the pipeline's order (none for the first)."""
    index = ORDER.index(name)
    return [ORDER[index - 1]] if index else []
