"""The sweep view in Dagster: `sweep_coverage`, refreshed by a sensor after each export run ends.

Its records are read from the instance, so the view holds even when staging is gone: what is
published from the latest `published_shards` materialization of each partition, and each
partition's state from the newest run planned to publish it (its failure: the blocking check's
description, the shrink guard's refusal, or the failed step's error). `trace-assets status`
prints the same (`status_text`).
"""

import tempfile
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import dagster as dg

from trace_assets.core.roots import root_location
from trace_assets.core.run_tags import FAILURE_TAG, PARTITION_TAG, failure_line
from trace_assets.defs.assets import published_shards, raw_trial_listing, secret_scan_report
from trace_assets.defs.checks import blocked_by
from trace_assets.defs.jobs import export_trace_run
from trace_assets.defs.metadata import PUBLISHED_VERSION_REMOVED, TRACES_ROOT
from trace_assets.defs.partitions import TRACE_RUNS
from trace_assets.defs.resources import HuggingFaceHub, ObjectStorage, TraceAssetsConfig
from trace_assets.publishing.shrink_guard import ShrinkRefused
from trace_assets.secret_scan.verdicts import RunVerdict
from trace_assets.sweep.view import (
    DISPLAY_COLUMNS,
    SWEEP_FILE,
    SWEEP_PLOT,
    ScopeRecord,
    ScopeState,
    ScopeStatus,
    display_rows,
    markdown_table,
    plot_svg,
    text_table,
    write_parquet,
)

PAGE = 1000  # materializations (or finished runs) read per request
_CANCELED = (dg.DagsterRunStatus.CANCELED, dg.DagsterRunStatus.CANCELING)


def latest_export_run(instance: dg.DagsterInstance, key: str) -> dg.DagsterRun | None:
    """The newest run planned to publish the scope, whoever launched it (sensor, backfill, UI or CLI):
    a run of other assets only (its listing, say) does not hide it. The scope's state is how it
    ended; the sensor requests the scope again when it failed."""
    planned = instance.get_latest_planned_materialization_info(published_shards.key, partition=key)
    return instance.get_run_by_id(planned.run_id) if planned is not None else None


def scope_statuses(instance: dg.DagsterInstance, traces_root: str | None = None) -> tuple[list[ScopeStatus], int]:
    """Every scope still a partition: its newest try's state, and what is published of it; with
    `traces_root`, only the scopes of that root (one instance may serve several), and how many
    of other roots were left out. A scope never listed, or listed before listings recorded their
    root, is kept: nothing says it is another root's."""
    keys = instance.get_dynamic_partitions(TRACE_RUNS)
    hidden = 0
    if traces_root:
        roots = listed_roots(instance, set(keys))
        here = root_location(traces_root)
        ours = [key for key in keys if key not in roots or root_location(roots[key]) == here]
        hidden, keys = len(keys) - len(ours), ours
    published = {record.scope: record for record in published_records(instance)}
    runs = latest_export_runs(instance, keys)
    return [_status(instance, key, published.get(key), runs.get(key)) for key in keys], hidden


KEYS_PER_QUERY = 500  # partition keys in one run query (SQLite binds at most 999 values in old builds)


def latest_export_runs(instance: dg.DagsterInstance, keys: Sequence[str]) -> dict[str, dg.DagsterRun]:
    """`latest_export_run` of each scope, from a run query per `KEYS_PER_QUERY` scopes (their runs,
    newest first) rather than two queries a scope: `status` over thousands of scopes. A run plans to
    publish a scope when its selection holds `published_shards` (the export job's whole runs name
    none, and always do)."""
    latest: dict[str, dg.DagsterRun] = {}
    for start in range(0, len(keys), KEYS_PER_QUERY):
        chunk = keys[start : start + KEYS_PER_QUERY]
        for record in instance.get_run_records(dg.RunsFilter(tags={PARTITION_TAG: chunk})):
            run = record.dagster_run
            key = run.tags.get(PARTITION_TAG)
            if key is not None and key not in latest and _plans_publish(run):
                latest[key] = run
    return latest


def _plans_publish(run: dg.DagsterRun) -> bool:
    if not run.asset_selection:  # the whole job
        return run.job_name == export_trace_run.name
    return published_shards.key in run.asset_selection


def hidden_text(hidden: int) -> str:
    """The line under the view saying what it left out."""
    return f"{hidden} scope(s) of other traces roots on this instance not shown\n" if hidden else ""


def status_text(instance: dg.DagsterInstance, traces_root: str | None = None) -> str:
    """`trace-assets status`: the sweep view as a terminal table (of `traces_root`'s scopes, if given)."""
    statuses, hidden = scope_statuses(instance, traces_root)
    return text_table(statuses) + hidden_text(hidden)


def listed_roots(instance: dg.DagsterInstance, scopes: set[str]) -> dict[str, str]:
    """The traces root each scope was last listed from (`raw_trial_listing`'s `traces_root`), newest
    listing first from the event log."""
    roots: dict[str, str] = {}
    seen: set[str] = set()
    cursor = None
    while seen != scopes:
        page = instance.fetch_materializations(raw_trial_listing.key, limit=PAGE, cursor=cursor, ascending=False)
        for record in page.records:
            key = record.partition_key
            if key in scopes and key not in seen and record.asset_materialization is not None:
                seen.add(key)
                root = record.asset_materialization.metadata.get(TRACES_ROOT)
                if isinstance(root, dg.TextMetadataValue) and root.value:
                    roots[key] = root.value
        if not page.has_more:
            break
        cursor = page.cursor
    return roots


def _status(
    instance: dg.DagsterInstance, key: str, published: ScopeRecord | None, run: dg.DagsterRun | None
) -> ScopeStatus:
    if run is None:  # never tried, or published by a runless report
        return ScopeStatus(key, ScopeState.PUBLISHED if published else ScopeState.NOT_EXPORTED, published=published)
    if run.status == dg.DagsterRunStatus.SUCCESS:
        return ScopeStatus(key, ScopeState.PUBLISHED, published=published)
    if run.status == dg.DagsterRunStatus.FAILURE:
        state, reason = failure_of(instance, run.run_id)
        if state == ScopeState.BLOCKED and _published_version_removed(instance, key, run.run_id):
            published = None  # its folder holds the scan report alone now
        return ScopeStatus(key, state, reason, published)
    if run.status in _CANCELED:
        return ScopeStatus(key, ScopeState.CANCELED, f"run {run.run_id} was canceled", published)
    return ScopeStatus(key, ScopeState.EXPORTING, f"run {run.run_id} is {run.status.value.lower()}", published)


def _published_version_removed(instance: dg.DagsterInstance, key: str, run_id: str) -> bool:
    """Whether the run's blocked scan removed the scope's earlier version (a folder, S3 or a Hub repo
    per sweep): what `published_shards` last recorded is then no longer published."""
    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=secret_scan_report.key, asset_partitions=[key]), limit=1
    ).records
    if not records or records[0].run_id != run_id or records[0].asset_materialization is None:
        return False
    removed = records[0].asset_materialization.metadata.get(PUBLISHED_VERSION_REMOVED)
    return isinstance(removed, dg.BoolMetadataValue) and bool(removed.value)


def failure_of(instance: dg.DagsterInstance, run_id: str) -> tuple[ScopeState, str]:
    """How a failed run failed, in one line: the blocking check that stopped it (its description),
    the shrink guard's refusal, the first failed step's root error, or the run's own message."""
    kinds = {
        dg.DagsterEventType.ASSET_CHECK_EVALUATION,
        dg.DagsterEventType.STEP_FAILURE,
        dg.DagsterEventType.RUN_FAILURE,
    }
    events = [entry.dagster_event for entry in instance.all_logs(run_id, of_type=kinds) if entry.dagster_event]
    for event in events:
        evaluation = event.event_specific_data
        if isinstance(evaluation, dg.AssetCheckEvaluation) and not evaluation.passed and evaluation.blocking:
            description = failure_line(evaluation.description or "failed")
            return ScopeState.BLOCKED, blocked_by(
                evaluation.check_name, evaluation.asset_key.to_user_string(), description
            )
    for event in events:
        if event.is_step_failure:
            data = event.step_failure_data
            error = data.error
            while error is not None and error.cause is not None:
                error = error.cause
            if data.user_failure_data is not None and data.user_failure_data.description:
                message = data.user_failure_data.description
            else:
                message = error.message if error else "failed"
            refused = error is not None and error.cls_name == ShrinkRefused.__name__
            state = ScopeState.REFUSED if refused else ScopeState.FAILED
            return state, f"step {event.step_key} failed: {failure_line(message)}"
    for event in events:
        if event.event_type == dg.DagsterEventType.RUN_FAILURE:
            return ScopeState.FAILED, failure_line(event.message or "run failed")
    return ScopeState.FAILED, "run failed"


def published_records(instance: dg.DagsterInstance) -> list[ScopeRecord]:
    """The latest publish of every scope still a partition, newest first from the event log: a
    forgotten run's partitions are gone, its materializations are not."""
    scopes = set(instance.get_dynamic_partitions(TRACE_RUNS))
    latest: dict[str, dg.EventLogRecord] = {}
    cursor = None
    while True:
        page = instance.fetch_materializations(published_shards.key, limit=PAGE, cursor=cursor, ascending=False)
        for record in page.records:
            if record.partition_key in scopes:
                latest.setdefault(record.partition_key, record)
        if not page.has_more:
            break
        cursor = page.cursor
    return [_record(key, record) for key, record in latest.items()]


def _record(scope: str, record: dg.EventLogRecord) -> ScopeRecord:
    materialization = record.asset_materialization
    assert materialization is not None  # fetch_materializations returns only materializations
    values: dict[str, Any] = {name: value.value for name, value in materialization.metadata.items()}
    excluded = values.get("excluded")
    mean_reward = values.get("mean_reward")
    return ScopeRecord(
        scope=scope,
        trial_dirs=int(values.get("trial_dirs", 0)),
        scored=int(values.get("scored", 0)),
        exported=int(values.get("exported", 0)),
        rows=int(values.get("dagster/row_count", values.get("rows", 0))),  # `rows` until it went (a duplicate)
        secret_verdict=_published_verdict(values),
        published_at=datetime.fromtimestamp(record.timestamp, UTC).strftime("%Y-%m-%d %H:%M:%S UTC"),
        published_to=str(values.get("published_to", "")),
        excluded={str(r.data["reason"]): int(r.data["folders"] or 0) for r in excluded.records}
        if isinstance(excluded, dg.TableMetadataValue)
        else {},
        mean_reward=float(mean_reward) if isinstance(mean_reward, int | float) else None,
        private_found=str(values.get("private_found", "")),
        private_replaced=str(values.get("private_replaced", "")),
    )


def _published_verdict(values: dict[str, Any]) -> str:
    """The verdict of what went out: `redacted` once anything was, which publishes recorded before
    `secret_verdict` said so (it held the scan's verdict, `live`) tell by their `redacted` counts."""
    redacted = values.get("redacted")
    if isinstance(redacted, dict) and any(redacted.values()):
        return RunVerdict.REDACTED.value
    return str(values.get("secret_verdict", ""))


TABLE_COLUMNS = {name: "int" if name == "exported" else "string" for name in DISPLAY_COLUMNS}
COLUMN_NOTES = {
    "exported": "trials in the published version (- when none is published)",
    "verdict": "of what was published: redacted once anything was replaced",
    "published_at": "UTC, to the minute (the Parquet file has the second)",
}


@dg.asset(group_name="sweep", kinds={"parquet"}, deps=[published_shards])
def sweep_coverage(
    context: dg.AssetExecutionContext,
    trace_config: TraceAssetsConfig,
    object_storage: ObjectStorage,
    hub: HuggingFaceHub,
) -> dg.MaterializeResult:
    """Every scope of the configured traces root tried, with its state and why (`status`, a table the
    UI wraps, with totals per run and for the sweep; `other_roots_hidden`, the scopes of other roots
    on the instance left out); the same scopes, each with its state and what is published of it
    (`scopes`); one row per published scope, coverage, exclusions, verdict, rows, when and where, in
    a Parquet file and an SVG plot beside the datasets (folder targets; a Hub target keeps neither)."""
    statuses, hidden = scope_statuses(context.instance, trace_config.traces_root)
    records = [status.published for status in statuses if status.published is not None]
    target = trace_config.publish_target(object_storage, hub)
    with tempfile.TemporaryDirectory() as folder:
        parquet, plot = Path(folder, SWEEP_FILE), Path(folder, SWEEP_PLOT)
        write_parquet(records, parquet)
        plot.write_text(plot_svg(records))
        written = target.publish_root_file(parquet)
        plot_written = target.publish_root_file(plot)
    context.log.info(f"sweep view of {len(records)} scope(s) written to {written or 'nowhere (Hub target)'}")
    return dg.MaterializeResult(
        metadata={
            "scopes": dg.MetadataValue.table(
                records=[dg.TableRecord(row) for row in display_rows(statuses)],
                schema=dg.TableSchema(
                    columns=[
                        dg.TableColumn(name, kind, description=COLUMN_NOTES.get(name))
                        for name, kind in TABLE_COLUMNS.items()
                    ]
                ),
            ),
            "status": dg.MetadataValue.md(markdown_table(statuses) + (f"\n{hidden_text(hidden)}" if hidden else "")),
            "other_roots_hidden": dg.MetadataValue.int(hidden),
            "dagster/row_count": dg.MetadataValue.int(len(records)),
            "parquet": dg.MetadataValue.text(written or "not written: Hub targets keep no sweep file"),
            "svg": dg.MetadataValue.text(plot_written or "not written: Hub targets keep no sweep file"),
        }
    )


refresh_sweep_coverage = dg.define_asset_job(
    "refresh_sweep_coverage", selection=[sweep_coverage], description="Rebuild the sweep view"
)


@dg.sensor(
    job=refresh_sweep_coverage,
    default_status=dg.DefaultSensorStatus.RUNNING,
    minimum_interval_seconds=30,
)
def sweep_coverage_after_export(context: dg.SensorEvaluationContext) -> dg.SensorResult:
    """Export runs (runs of a partition) that ended since the last tick, published or failed (a
    failure is a state the view shows too), request one refresh: a burst of runs in a backfill makes
    one run per tick, not one per scope. Each failed one is tagged with its one-line reason
    (`trace_assets/failure`), for the UI's run list. The cursor is the newest end time seen
    (tagging a run updates it, but does not end it again)."""
    since = float(context.cursor) if context.cursor else 0.0
    records = context.instance.get_run_records(
        dg.RunsFilter(
            statuses=[dg.DagsterRunStatus.SUCCESS, dg.DagsterRunStatus.FAILURE],
            updated_after=datetime.fromtimestamp(since, UTC) if since else None,
        ),
        limit=PAGE,
        order_by="update_timestamp",
        ascending=True,
    )
    ended = [r for r in records if PARTITION_TAG in r.dagster_run.tags and (r.end_time or 0.0) > since]
    for record in ended:
        run = record.dagster_run
        if run.status == dg.DagsterRunStatus.FAILURE and FAILURE_TAG not in run.tags:
            reason = failure_of(context.instance, run.run_id)[1]
            context.instance.add_run_tags(run.run_id, {FAILURE_TAG: reason})
    newest = max([since, *(r.end_time or 0.0 for r in ended)])
    return dg.SensorResult(run_requests=[dg.RunRequest()] if ended else [], cursor=str(newest))
