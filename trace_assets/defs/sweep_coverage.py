"""The sweep view in Dagster: `sweep_coverage`, refreshed by a sensor after each export run ends,
from the records `sweep.py` reads of the instance."""

import tempfile
from datetime import UTC, datetime
from pathlib import Path

import dagster as dg

from trace_assets.core.run_tags import FAILURE_TAG, PARTITION_TAG
from trace_assets.defs.assets import published_shards
from trace_assets.defs.resources import HuggingFaceHub, ObjectStorage, TraceAssetsConfig
from trace_assets.defs.sweep import PAGE, failure_of, hidden_text, scope_statuses
from trace_assets.sweep.parquet_file import write_parquet
from trace_assets.sweep.view import (
    DISPLAY_COLUMNS,
    SWEEP_FILE,
    SWEEP_PLOT,
    display_rows,
    markdown_table,
    plot_svg,
)

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
    statuses, hidden, unlisted = scope_statuses(
        context.instance, trace_config.traces_root, trace_config.store(object_storage)
    )
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
            "status": dg.MetadataValue.md(
                markdown_table(statuses) + "".join(f"\n{line}" for line in (hidden_text(hidden), unlisted) if line)
            ),
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
