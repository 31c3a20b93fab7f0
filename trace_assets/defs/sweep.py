"""The sweep view in Dagster: `sweep_coverage`, refreshed by a sensor after each publish.

Its records are read from the latest `published_shards` materialization of each partition in the
instance, so the view holds even when staging is gone; `trace-assets status` reads the same.
"""

import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import dagster as dg

from trace_assets.defs.assets import published_shards
from trace_assets.defs.partitions import TRACE_RUNS
from trace_assets.defs.resources import HuggingFaceHub, ObjectStorage, TraceAssetsConfig
from trace_assets.secret_scan.verdicts import RunVerdict
from trace_assets.sweep import (
    SWEEP_FILE,
    SWEEP_PLOT,
    ScopeRecord,
    display_rows,
    markdown_table,
    plot_svg,
    write_parquet,
)

PAGE = 1000  # materializations read per request


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
        rows=int(values.get("rows", 0)),
        secret_verdict=_published_verdict(values),
        published_at=datetime.fromtimestamp(record.timestamp, UTC).strftime("%Y-%m-%d %H:%M:%S UTC"),
        published_to=str(values.get("published_to", "")),
        excluded={str(r.data["reason"]): int(r.data["folders"] or 0) for r in excluded.records}
        if isinstance(excluded, dg.TableMetadataValue)
        else {},
        mean_reward=float(mean_reward) if isinstance(mean_reward, int | float) else None,
    )


def _published_verdict(values: dict[str, Any]) -> str:
    """The verdict of what went out: `redacted` once anything was, which publishes recorded before
    `secret_verdict` said so (it held the scan's verdict, `live`) tell by their `redacted` counts."""
    redacted = values.get("redacted")
    if isinstance(redacted, dict) and any(redacted.values()):
        return RunVerdict.REDACTED.value
    return str(values.get("secret_verdict", ""))


TABLE_COLUMNS = {
    "scope": "string",
    "run": "string",
    "step": "string",
    "trial_dirs": "int",
    "scored": "int",
    "exported": "int",
    "export_ratio": "float",
    "excluded": "int",
    "excluded_by_reason": "string",
    "secret_verdict": "string",
    "rows": "int",
    "mean_reward": "string",
    "published_at": "string",
    "published_to": "string",
}
COLUMN_NOTES = {
    "step": "the step's number; - for a scope that is a whole run",
    "mean_reward": "of the exported trials with a finite, valid reward, to 3 places; - when unknown",
}


@dg.asset(group_name="sweep", kinds={"parquet"}, deps=[published_shards])
def sweep_coverage(
    context: dg.AssetExecutionContext,
    trace_config: TraceAssetsConfig,
    object_storage: ObjectStorage,
    hub: HuggingFaceHub,
) -> dg.MaterializeResult:
    """One row per published scope: coverage, exclusions, verdict, rows, when and where; a Parquet
    file and an SVG plot beside the datasets (folder targets; a Hub target keeps neither)."""
    records = published_records(context.instance)
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
                records=[dg.TableRecord(row) for row in display_rows(records)],
                schema=dg.TableSchema(
                    columns=[
                        dg.TableColumn(name, kind, description=COLUMN_NOTES.get(name))
                        for name, kind in TABLE_COLUMNS.items()
                    ]
                ),
            ),
            "plot": dg.MetadataValue.md(markdown_table(records)),
            "dagster/row_count": dg.MetadataValue.int(len(records)),
            "parquet": dg.MetadataValue.text(written or "not written: Hub targets keep no sweep file"),
            "svg": dg.MetadataValue.text(plot_written or "not written: Hub targets keep no sweep file"),
        }
    )


refresh_sweep_coverage = dg.define_asset_job(
    "refresh_sweep_coverage", selection=[sweep_coverage], description="Rebuild the sweep view"
)


@dg.asset_sensor(
    asset_key=published_shards.key,
    job=refresh_sweep_coverage,
    default_status=dg.DefaultSensorStatus.RUNNING,
    minimum_interval_seconds=30,
)
def sweep_coverage_after_publish(context: dg.SensorEvaluationContext, asset_event: dg.EventLogEntry) -> dg.RunRequest:
    """A publish (of any partition) since the last tick requests one refresh: a burst of publishes
    in a backfill makes one run per tick, not one per scope."""
    return dg.RunRequest()
