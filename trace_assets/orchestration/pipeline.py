"""The pipeline's order, written once: the staged steps, each a function of the scope's context,
then publishing. The assets' chain (`upstream_of`) and `--dry-run` (`run_staged_steps`) both read
`STAGED_STEPS`, so a new step is one entry here (and its asset)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, NamedTuple

import pyarrow as pa
import pyarrow.parquet as pq

from trace_assets.core.accounting import Coverage
from trace_assets.core.scope import RunScope
from trace_assets.orchestration.context import ScopeContext
from trace_assets.publishing.blocked_version import BlockDecision, PreviousVersion, exported_sources
from trace_assets.publishing.blocked_version import decide as decide_on_block
from trace_assets.publishing.card import CardContext, usage_name
from trace_assets.publishing.card_facts import CardFacts, gather_facts
from trace_assets.publishing.dataset_folder import SCAN_REPORT_FILE, TRIALS_FILE, build_run_folder
from trace_assets.publishing.shards import ShardSet
from trace_assets.publishing.shrink_guard import refuse_worse_version
from trace_assets.publishing.targets import PublishTarget, published_json, read_published_versions
from trace_assets.publishing.versions import block_entry, earlier_versions, has_history, with_block
from trace_assets.runtime.atomic_files import remove_path, temp_sibling
from trace_assets.steps.free_space import check_free_space
from trace_assets.steps.listing import ListingStats, build_listing
from trace_assets.steps.rows import export_rows
from trace_assets.steps.scan import Redactor, ScannedMatches, scan_run, secret_redactor
from trace_assets.steps.scoring import StepStats, score_trials
from trace_assets.steps.staging import write_json_atomically

PUBLISH_STEP = "published_shards"  # `publish`, after the staged steps


def list_trials(ctx: ScopeContext) -> ListingStats:
    """Every trial folder of the scope, from one recursive listing; then whether the staging and
    publish file systems have room for what the listing says the run needs (`NotEnoughSpace`)."""
    stats = build_listing(ctx.store, ctx.staging, ctx.progress)
    for warning in check_free_space(stats.row_source_bytes, ctx.staging.folder, ctx.publish_folder):
        ctx.progress(f"warning: {warning}")
    return stats


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


class Scanned(NamedTuple):
    """The scan's report, and for a blocked scope what became of the version published before it
    (None: not blocked)."""

    report: dict[str, Any]
    block: BlockDecision | None


def scan(ctx: ScopeContext) -> Scanned:
    """The secret scan of the rows and session files, its report staged. A scope the policy blocks
    keeps the version published before it when that holds none of the blocking findings in the
    clear; else (or with nothing published) its folder holds that report alone, the version before
    withdrawn (`blocked_version`). The decision is in the report (`previous_version`)."""
    staging = ctx.staging
    report = scan_run(
        staging.require_rows(),
        ctx.scope.key,
        ctx.scan_options,
        ctx.sessions_folder(),
        ctx.progress,
        staging.scan_matches,
    )
    blocking = ctx.policy.blocking(report)
    if not blocking:
        write_json_atomically(staging.scan_report, report)
        return Scanned(report, None)
    target, scope, current = ctx.target, ctx.scope, exported_sources(staging.statuses)
    try:
        trials = target.published_file(scope, TRIALS_FILE)
        earlier = None if trials is None else exported_sources(trials)
        block = decide_on_block(
            report, ctx.policy.blocked, blocking, current, published_json(target, scope, SCAN_REPORT_FILE), earlier
        )
    except ValueError as error:  # a published report or trial list that does not parse: what it holds cannot be shown
        block = BlockDecision(PreviousVersion.WITHDRAWN, f"its scan report or trial list could not be read ({error})")
    history, versions = _history_with_block(target, scope, block, sorted(blocking))
    if block.previous != PreviousVersion.KEPT:  # the report alone, in its place (and on the root card)
        write_json_atomically(staging.scan_report, {**report, "previous_version": block.stored()})
        block = block.done(target.publish_blocked(staging.scan_report, scope, versions))
    if versions != history and block.previous in (PreviousVersion.KEPT, PreviousVersion.LEFT):  # still published
        target.record_versions(scope, versions)
    report = {**report, "previous_version": block.stored()}
    write_json_atomically(staging.scan_report, report)
    return Scanned(report, block)


def _history_with_block(
    target: PublishTarget, scope: RunScope, block: BlockDecision, kinds: list[str]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The scope's published history as read (`versions.json`; one that does not parse starts
    again), and with this block last: a withdrawn version's folder keeps it, a kept one's
    `versions.json` records it. Empty with no history (nothing published before, ever)."""
    try:
        published = read_published_versions(target, scope)
        coverage = None if has_history(published) else target.published_coverage(scope)  # read only if needed
        earlier = earlier_versions(published, coverage)
    except ValueError:
        earlier = []
    if not earlier:
        return [], []
    entry = block_entry(str(block.previous), block.why, kinds, datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"))
    return earlier, with_block(earlier, entry)


@dataclass(frozen=True)
class Published:
    """What `publish` put out, for the asset's metadata."""

    coverage: Coverage
    report: dict[str, Any]  # the scan report as read (the redactor says what was replaced)
    shards: ShardSet
    schema: pa.Schema
    redactor: Redactor | None
    facts: CardFacts
    published_to: str


def publish(ctx: ScopeContext, published_versions: Any) -> Published:
    """The scope as a Hugging Face dataset folder, built in staging and handed to the target;
    `published_versions` is the scope's `versions.json` as the step read it first (the card's history).

    Refused (`ShrinkRefused`) when it would replace the published version with a worse one, unless
    the context has no shrink threshold (allow_shrink).
    """
    scope, staging, target = ctx.scope, ctx.staging, ctx.target
    coverage = Coverage.from_dict(staging.read_json(staging.coverage, "last_episode_rows"))
    report = staging.read_json(staging.scan_report, "secret_scan_report")
    published = target.published_coverage(scope)
    if ctx.shrink_threshold is not None:
        refuse_worse_version(
            scope.key, coverage, published, ctx.shrink_threshold, target.location(scope), ctx.shrink_override
        )
    scanned = ScannedMatches.read(staging.scan_matches, report, ctx.scan_options)
    card = CardContext(
        settings=ctx.card,
        facts=gather_facts(staging, staging.require_rows()),
        earlier_versions=earlier_versions(published_versions, published),
        published_at=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        repo_id=usage_name(target.location(scope)),
        plots=ctx.card_plots,
        location=target.location(scope),
        flagged_trials=frozenset(scanned.flagged_trials) if scanned and scanned.flagged_trials is not None else None,
    )
    redactor = secret_redactor(ctx.policy, report, ctx.scan_options, scanned)
    build = temp_sibling(staging.publish_build)  # this attempt's own; a killed one's is a leftover
    try:
        shards = build_run_folder(
            build,
            staging.require_rows(),
            staging.statuses,
            coverage,
            report,
            ctx.max_rows_per_shard,
            redactor=redactor,
            options=ctx.options,
            sessions=ctx.sessions_folder(),
            card=card,
            source_prefix=scope.source_prefix,
            step=scope.step,
            progress=ctx.progress,
        )
        schema = pq.read_schema(build / shards.files[0])
        published_to = target.publish(build, scope, ctx.progress)
    finally:
        remove_path(build)
    return Published(coverage, report, shards, schema, redactor, card.facts, published_to)


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


def run_staged_steps(ctx: ScopeContext, through: str = STAGED_STEPS[-1].name) -> dict[str, Any]:
    """The staged steps in order, up to and including `through`, each one's result by its name:
    one sequence for `--dry-run` and for whatever stages a scope without Dagster."""
    return {step.name: step.run(ctx) for step in STAGED_STEPS[: ORDER.index(through) + 1]}


def upstream_of(name: str) -> list[str]:
    """The step before `name` in the pipeline's order (none for the first)."""
    index = ORDER.index(name)
    return [ORDER[index - 1]] if index else []
