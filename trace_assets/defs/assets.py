"""The asset graph, one partition per RL run: listing -> scored -> rows -> secret scan -> shards.

Each asset is a few lines: the partition's scope, the domain step, its figures as metadata. The
data lives as Parquet in the staging folder.
"""

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime

import dagster as dg
import pyarrow.parquet as pq

from trace_assets.accounting import Coverage
from trace_assets.atomic_files import remove_path, temp_sibling
from trace_assets.defs.metadata import (
    counts_text,
    coverage_metadata,
    dataset_metadata,
    excluded_trials_metadata,
    reward_metadata,
    scan_metadata,
    size_text,
)
from trace_assets.defs.partitions import scope_of, trace_runs
from trace_assets.defs.resources import HuggingFaceHub, ObjectStorage, TraceAssetsConfig
from trace_assets.publishing.card import CardContext, usage_name
from trace_assets.publishing.card_facts import gather_facts
from trace_assets.publishing.dataset_folder import VERSIONS_FILE, build_run_folder
from trace_assets.publishing.shrink_guard import refuse_worse_version
from trace_assets.publishing.versions import earlier_versions
from trace_assets.steps.context import ScopeContext
from trace_assets.steps.pipeline import PUBLISH_STEP, export, list_trials, scan, score, upstream_of
from trace_assets.steps.scan import secret_redactor

GROUP = "trace_export"
HUB_COMMIT_POOL = "hub_commits"  # dagster.yaml's pool limit keeps Hub commits one at a time


@contextmanager
def scope_context(
    context: dg.AssetExecutionContext,
    trace_config: TraceAssetsConfig,
    object_storage: ObjectStorage,
    hub: HuggingFaceHub,
) -> Iterator[ScopeContext]:
    """The partition's steps context, its staging locked for the step."""
    with trace_config.staging(scope_of(context), object_storage).locked(context.log.info) as staging:
        yield trace_config.scope_context(staging, object_storage, hub, context.log.info)


@dg.asset(partitions_def=trace_runs, group_name=GROUP, kinds={"parquet"}, deps=upstream_of("raw_trial_listing"))
def raw_trial_listing(
    context: dg.AssetExecutionContext,
    trace_config: TraceAssetsConfig,
    object_storage: ObjectStorage,
    hub: HuggingFaceHub,
) -> dg.MaterializeResult:
    """Every trial folder of the run, from one recursive listing of its trace_jobs/ prefix."""
    with scope_context(context, trace_config, object_storage, hub) as ctx:
        stats = list_trials(ctx)
    context.log.info(f"listed {stats.objects} objects in {stats.trial_dirs} trial folders")
    return dg.MaterializeResult(
        metadata={
            "trial_dirs": dg.MetadataValue.int(stats.trial_dirs),
            "objects": dg.MetadataValue.int(stats.objects),
            "bytes": size_text(stats.bytes),
            "objects_outside_trials": dg.MetadataValue.int(stats.stray_objects),
            "without_result_json": dg.MetadataValue.int(stats.unscored),
            "path": dg.MetadataValue.path(str(ctx.staging.listing)),
        }
    )


@dg.asset(partitions_def=trace_runs, group_name=GROUP, kinds={"parquet"}, deps=upstream_of("scored_trials"))
def scored_trials(
    context: dg.AssetExecutionContext,
    trace_config: TraceAssetsConfig,
    object_storage: ObjectStorage,
    hub: HuggingFaceHub,
) -> dg.MaterializeResult:
    """Each folder's result.json read as a TrialResult: task, reward, exception, agent, model."""
    with scope_context(context, trace_config, object_storage, hub) as ctx:
        stats = score(ctx)
    for key, problem in sorted(stats.passed_over.items()):
        context.log.warning(f"job-level {key} passed over: {problem}")
    return dg.MaterializeResult(
        metadata={
            **{f"status_{status}": dg.MetadataValue.int(count) for status, count in sorted(stats.statuses.items())},
            "result_json_read": dg.MetadataValue.int(stats.reread),
            "result_json_unchanged": dg.MetadataValue.int(stats.cached),
            "job_results_passed_over": dg.MetadataValue.int(len(stats.passed_over)),
            "path": dg.MetadataValue.path(str(ctx.staging.scored)),
        }
    )


@dg.asset(partitions_def=trace_runs, group_name=GROUP, kinds={"parquet"}, deps=upstream_of("last_episode_rows"))
def last_episode_rows(
    context: dg.AssetExecutionContext,
    trace_config: TraceAssetsConfig,
    object_storage: ObjectStorage,
    hub: HuggingFaceHub,
) -> dg.MaterializeResult:
    """Harbor's `export --episodes last` row for every scored trial, and a status for every folder."""
    with scope_context(context, trace_config, object_storage, hub) as ctx:
        coverage, stats = export(ctx)
        excluded = excluded_trials_metadata(ctx.staging.statuses)
    return dg.MaterializeResult(
        metadata={
            **coverage_metadata(coverage),
            **excluded,
            "rows": dg.MetadataValue.int(coverage.rows),
            "subagent_rows": dg.MetadataValue.int(coverage.subagent_rows),
            "sessions": dg.MetadataValue.int(coverage.sessions),
            "sessions_skipped": counts_text(coverage.sessions_skipped),  # by reason, see SessionSkip
            "trials_read": dg.MetadataValue.int(stats.reread),
            "trials_unchanged": dg.MetadataValue.int(stats.cached),
            "path": dg.MetadataValue.path(str(ctx.staging.rows)),
        }
    )


@dg.asset(partitions_def=trace_runs, group_name=GROUP, kinds={"json"}, deps=upstream_of("secret_scan_report"))
def secret_scan_report(
    context: dg.AssetExecutionContext,
    trace_config: TraceAssetsConfig,
    object_storage: ObjectStorage,
    hub: HuggingFaceHub,
) -> dg.MaterializeResult:
    """Credential-shaped strings in every text column of the rows, with a verdict per finding."""
    with scope_context(context, trace_config, object_storage, hub) as ctx:
        report = scan(ctx)
    return dg.MaterializeResult(metadata=scan_metadata(report, ctx.staging.scan_report))


def published_shards_asset(to_hub: bool) -> dg.AssetsDefinition:
    """`published_shards` for the configured target: to the Hub, in the `hub_commits` pool (its
    commits one at a time) and of kind `huggingface`; to a folder or S3 root, in no pool, where
    scopes publish side by side (each in its own folder; the root card merged by compare-and-swap)."""

    @dg.asset(
        name="published_shards",
        partitions_def=trace_runs,
        group_name=GROUP,
        kinds={"parquet", "huggingface"} if to_hub else {"parquet"},
        deps=upstream_of(PUBLISH_STEP),
        pool=HUB_COMMIT_POOL if to_hub else None,
    )
    def published_shards(
        context: dg.AssetExecutionContext,
        trace_config: TraceAssetsConfig,
        object_storage: ObjectStorage,
        hub: HuggingFaceHub,
    ) -> dg.MaterializeResult:
        """The run as a Hugging Face dataset folder: shards, card, coverage.json, trials.parquet.

        Refused when it would replace the published version with a worse one (no rows, or fewer trial
        folders or rows past `shrink_threshold`), unless `allow_shrink`.
        """
        return _publish_scope(context, trace_config, object_storage, hub)

    return published_shards


published_shards = published_shards_asset(to_hub=True)  # its key, and the definition for Hub targets


def _publish_scope(
    context: dg.AssetExecutionContext,
    trace_config: TraceAssetsConfig,
    object_storage: ObjectStorage,
    hub: HuggingFaceHub,
) -> dg.MaterializeResult:
    with scope_context(context, trace_config, object_storage, hub) as ctx:
        scope, staging, target = ctx.scope, ctx.staging, ctx.target
        coverage = Coverage.from_dict(staging.read_json(staging.coverage, "last_episode_rows"))
        report = staging.read_json(staging.scan_report, "secret_scan_report")
        published = target.published_coverage(scope)
        if ctx.shrink_threshold is not None:
            refuse_worse_version(scope.key, coverage, published, ctx.shrink_threshold, target.location(scope))
        card = CardContext(
            ctx.card,
            gather_facts(staging, staging.require_rows()),
            earlier_versions(target.published_json(scope, VERSIONS_FILE), published),
            datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
            usage_name(target.location(scope)),
            ctx.card_plots,
            target.location(scope),
        )
        redactor = secret_redactor(ctx.policy, report, ctx.scan_options, staging.scan_matches)
        build = temp_sibling(staging.publish_build)  # this attempt's own; a killed one's is a leftover
        try:
            shards = build_run_folder(
                build,
                staging.require_rows(),
                staging.statuses,
                coverage,
                report,
                ctx.max_rows_per_shard,
                redactor,
                ctx.options,
                ctx.sessions_folder(),
                card,
                scope.source_prefix,
                scope.step,
                ctx.progress,
            )
            schema = pq.read_schema(build / shards.files[0])
            published_to = target.publish(build, scope, ctx.progress)
        finally:
            remove_path(build)
    context.log.info(f"published {shards.num_examples} rows in {len(shards.files)} shard(s) to {published_to}")
    return dg.MaterializeResult(
        metadata={
            **coverage_metadata(coverage),
            **dataset_metadata(shards.num_examples, schema),  # the rows: dagster/row_count
            "shards": dg.MetadataValue.int(len(shards.files)),
            "download_size": size_text(shards.download_size),
            "redacted": counts_text(redactor.counts if redactor else {}),
            "private_replaced": counts_text(redactor.private_counts if redactor else {}),
            "secret_verdict": dg.MetadataValue.text(
                (redactor.published_report(report) if redactor else report)["verdict"]
            ),
            **reward_metadata(card.facts),
            "published_to": dg.MetadataValue.url(published_to)
            if "://" in published_to
            else dg.MetadataValue.path(published_to),
        }
    )
