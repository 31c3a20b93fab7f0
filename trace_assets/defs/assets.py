"""The asset graph, one partition per RL run: listing -> scored -> rows -> secret scan -> shards.

Each asset is a few lines: the partition's scope, the domain step, its figures as metadata. The
data lives as Parquet in the staging folder.
"""

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import dagster as dg

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
from trace_assets.defs.resources import TraceAssetsConfig
from trace_assets.defs.sweep import PREVIOUS_VERSION, PREVIOUS_VERSION_WHY, PUBLISHED_SHARDS, TRACES_ROOT
from trace_assets.orchestration.context import ScopeContext
from trace_assets.orchestration.pipeline import PUBLISH_STEP, export, list_trials, publish, scan, score, upstream_of
from trace_assets.publishing.blocked_version import PreviousVersion
from trace_assets.publishing.targets import (
    Unread,
    kept_after_fault,
    published_version,
    read_published_versions,
)
from trace_assets.runtime.machine_faults import fault_detail, fault_line
from trace_assets.runtime.progress import HeldLines
from trace_assets.secret_scan.verdicts import found_by_category
from trace_assets.settings import PipelineSettings, env_name
from trace_assets.steps.free_space import NotEnoughSpace
from trace_assets.store.missing import why_missing

GROUP = "trace_export"
RAW_TREE_CHECK = "raw_tree_secrets"  # the check on raw_trial_listing, defined only while the raw-tree scan is on
HUB_COMMIT_POOL = "hub_commits"  # dagster.yaml's pool limit keeps Hub commits one at a time


@contextmanager
def partition_context(context: dg.AssetExecutionContext, trace_config: TraceAssetsConfig) -> Iterator[ScopeContext]:
    """The partition's steps context, its staging locked for the step.

    A fault of the machine (a full disk, a removed folder, see `runtime.machine_faults`) fails the
    step with one line naming it, where it struck and what is left as it was: the published version,
    unchanged by any step before the publish (which says its own, see `_publish_scope`). The
    exception chain (and a copy's every file) goes to the run's debug log."""
    lines = HeldLines(context.log.info)  # the step's progress and summary, as one message where it is quick
    ctx = trace_config.parts().scope_context(scope_of(context), lines)
    try:
        with ctx.staging.locked(context.log.info):
            try:
                yield ctx
            finally:
                lines.flush()
    except NotEnoughSpace as error:
        raise dg.Failure(description=str(error), allow_retries=False) from None
    except dg.Failure:
        raise
    except Exception as error:
        failure = _fault_failure(context, error, ctx, trace_config.publish_root, Unread.NOT_PUBLISHING)
        if failure is None:
            raise
        raise failure from error


def _fault_failure(
    context: dg.AssetExecutionContext,
    error: Exception,
    ctx: ScopeContext,
    publish_root: str,
    before: str | None | Unread,
) -> dg.Failure | None:
    """A machine fault in `error`'s chain as the step's failure, saying what the scope's target
    holds now against the version read `before` the step (None: not a machine fault)."""
    places: dict[str, str | Path] = {"the staging folder": ctx.staging.folder, "the publish root": publish_root}
    line = fault_line(error, places, "")
    if line is None:
        return None
    context.log.debug(fault_detail(error))
    kept = kept_after_fault(ctx.target, ctx.scope, before, context.log.debug)
    return dg.Failure(description=f"{line}; {kept}" if kept else line, allow_retries=False)


@dg.asset(partitions_def=trace_runs, group_name=GROUP, kinds={"parquet"}, deps=upstream_of("raw_trial_listing"))
def raw_trial_listing(
    context: dg.AssetExecutionContext,
    trace_config: TraceAssetsConfig,
) -> dg.MaterializeResult:
    """Every trial folder of the run, from one recursive listing of its trace_jobs/ prefix."""
    if trace_config.raw_scan and not _raw_tree_check_planned(context):
        raise dg.Failure(
            description=f"raw_scan is on in this run's config, but its plan has no {RAW_TREE_CHECK} check (the "
            "code location loaded with the raw-tree scan off, which leaves the check out): set "
            f"{env_name(PipelineSettings, 'raw_scan')}=1 where the code location runs and reload it, "
            "or run `trace-assets materialize --raw-scan`",
            allow_retries=False,
        )
    with partition_context(context, trace_config) as ctx:
        try:
            stats = list_trials(ctx)
        except FileNotFoundError:
            # A partition that names no run there (a key mistyped in the UI): the CLI's line, with
            # the closest runs ("did you mean ...?"), as the run's failure.
            missing = why_missing(ctx.store, scope_of(context), env_name(PipelineSettings, "traces_root"))
            if missing is None:
                raise
            raise dg.Failure(description=missing, allow_retries=False) from None
        ctx.progress(f"listed {stats.objects} objects in {stats.trial_dirs} trial folders")
    return dg.MaterializeResult(
        metadata={
            "trial_dirs": dg.MetadataValue.int(stats.trial_dirs),
            "objects": dg.MetadataValue.int(stats.objects),
            "bytes": size_text(stats.bytes),
            "objects_outside_trials": dg.MetadataValue.int(stats.stray_objects),
            "without_result_json": dg.MetadataValue.int(stats.unscored),
            "path": dg.MetadataValue.path(str(ctx.staging.listing)),
            TRACES_ROOT: dg.MetadataValue.text(trace_config.traces_root),  # whose scope: see sweep.scope_statuses
        }
    )


def _raw_tree_check_planned(context: dg.AssetExecutionContext) -> bool:
    """Whether this run's plan holds `raw_tree_secrets` (Dagster logs each planned check at the run's start)."""
    planned = context.instance.all_logs(context.run_id, of_type=dg.DagsterEventType.ASSET_CHECK_EVALUATION_PLANNED)
    key = dg.AssetCheckKey(context.asset_key, RAW_TREE_CHECK)
    return any(entry.dagster_event.asset_check_planned_data.asset_check_key == key for entry in planned)


@dg.asset(partitions_def=trace_runs, group_name=GROUP, kinds={"parquet"}, deps=upstream_of("scored_trials"))
def scored_trials(
    context: dg.AssetExecutionContext,
    trace_config: TraceAssetsConfig,
) -> dg.MaterializeResult:
    """Each folder's result.json read as a TrialResult: task, reward, exception, agent, model."""
    with partition_context(context, trace_config) as ctx:
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
) -> dg.MaterializeResult:
    """Harbor's `export --episodes last` row for every scored trial, and a status for every folder."""
    with partition_context(context, trace_config) as ctx:
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
) -> dg.MaterializeResult:
    """Credential-shaped strings in every text column of the rows, with a verdict per finding."""
    with partition_context(context, trace_config) as ctx:
        scanned = scan(ctx)
        ctx.progress(f"secret scan verdict: {scanned.report['verdict']}")
    metadata = scan_metadata(scanned.report, ctx.staging.scan_report)
    if scanned.block is not None:  # blocked: kept or withdrawn, and why
        metadata[PREVIOUS_VERSION] = dg.MetadataValue.text(str(scanned.block.previous))
        metadata[PREVIOUS_VERSION_WHY] = dg.MetadataValue.text(scanned.block.line)
        if scanned.block.previous == PreviousVersion.WITHDRAWN:
            context.log_event(withdrawn_observation(context.partition_key, context.run.run_id, scanned.block.line))
    return dg.MaterializeResult(metadata=metadata)


def withdrawn_observation(scope: str, run_id: str, line: str) -> dg.AssetObservation:
    """On `published_shards`' page, after its last materialization (whose `published_to` now holds
    the scan report alone): the version is withdrawn. Dagster's open-source instance has no public
    way to retract a partition's materialization (dagster#14749), so its badge stays green."""
    return dg.AssetObservation(
        asset_key=PUBLISHED_SHARDS,
        partition=scope,
        description=f"withdrawn by run {run_id}: {line}",
        metadata={
            PREVIOUS_VERSION: dg.MetadataValue.text(str(PreviousVersion.WITHDRAWN)),
            PREVIOUS_VERSION_WHY: dg.MetadataValue.text(line),
        },
    )


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
    ) -> dg.MaterializeResult:
        """The run as a Hugging Face dataset folder: shards, card, coverage.json, trials.parquet.

        Refused when it would replace the published version with a worse one (no rows, or fewer trial
        folders or rows past `shrink_threshold`), unless `allow_shrink`.
        """
        return _publish_scope(context, trace_config)

    return published_shards


published_shards = published_shards_asset(to_hub=True)  # its key, and the definition for Hub targets


def _publish_scope(
    context: dg.AssetExecutionContext,
    trace_config: TraceAssetsConfig,
) -> dg.MaterializeResult:
    with partition_context(context, trace_config) as ctx:
        # read first: the card's history, and the version a fault in the publish leaves or replaces
        versions = read_published_versions(ctx.target, ctx.scope)
        try:
            done = publish(ctx, versions)
        except Exception as error:
            before = published_version(versions)
            failure = _fault_failure(context, error, ctx, trace_config.publish_root, before)
            if failure is None:
                raise
            raise failure from error
        shards, redactor, to = done.shards, done.redactor, done.published_to
        ctx.progress(f"published {shards.num_examples} rows in {len(shards.files)} shard(s) to {to}")
    return dg.MaterializeResult(
        metadata={
            **coverage_metadata(done.coverage),
            **dataset_metadata(shards.num_examples, done.schema),  # the rows: dagster/row_count
            "shards": dg.MetadataValue.int(len(shards.files)),
            "download_size": size_text(shards.download_size),
            "redacted": counts_text(redactor.counts if redactor else {}),
            "private_found": counts_text(found_by_category(done.report)),
            "private_replaced": counts_text(redactor.private_counts if redactor else {}),
            "secret_verdict": dg.MetadataValue.text(
                (redactor.published_report(done.report) if redactor else done.report)["verdict"]
            ),
            **reward_metadata(done.facts),
            "published_to": dg.MetadataValue.url(to) if "://" in to else dg.MetadataValue.path(to),
        }
    )
