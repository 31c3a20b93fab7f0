"""Notice new runs and steps, and export each scope once its listing settles, at a per-tick cost
that follows what changed (see `discovery`)."""

import os
import time

import dagster as dg

from trace_assets.defs.jobs import export_trace_run
from trace_assets.defs.partitions import TRACE_RUNS, trace_runs
from trace_assets.defs.resources import ObjectStorage, TraceAssetsConfig
from trace_assets.discovery import plan_tick
from trace_assets.scope import RunScope, is_scope_key

PUBLISHED = dg.AssetKey("published_shards")
SKIPS_SHOWN = 20  # scopes named in a tick's skip reason; the log names them all


@dg.sensor(
    job=export_trace_run,
    minimum_interval_seconds=int(os.environ.get("TRACE_ASSETS_SENSOR_INTERVAL_SECONDS", "60")),
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Adds a partition for each new run or step; exports it once its listing settles",
)
def new_trace_runs_sensor(
    context: dg.SensorEvaluationContext, trace_config: TraceAssetsConfig, object_storage: ObjectStorage
) -> dg.SensorResult:
    store = trace_config.store(object_storage)
    instance = context.instance

    def run_scopes(run_id: str) -> list[str]:
        try:
            return [scope.key for scope in trace_config.run_scopes(object_storage, run_id)]
        except FileNotFoundError:  # no trace_jobs/ folder: not a run (yet)
            return []

    def published_at(key: str) -> float | None:
        records = instance.fetch_materializations(
            dg.AssetRecordsFilter(asset_key=PUBLISHED, asset_partitions=[key]), limit=1
        ).records
        return records[0].timestamp if records else None

    known = instance.get_dynamic_partitions(TRACE_RUNS)
    plan = plan_tick(
        context.cursor,
        [run_id for run_id in store.run_folders() if is_scope_key(run_id)],  # see scope.validate_scope_key
        run_scopes,
        lambda key: store.iter_run(RunScope.from_key(key)),
        published_at,
        known,
        time.time(),
        trace_config.settle_seconds,
    )
    if plan.new_keys:
        context.log.info(f"new scopes: {', '.join(plan.new_keys)}")
    for key, error in plan.errors.items():
        context.log.error(f"{key!r} skipped this tick, its listing failed: {error}")
    for key, why in plan.skipped.items():
        context.log.debug(f"{key!r} not requested: {why}")
    context.log.info(
        f"listed {plan.listed_runs} run(s) and {plan.listed_scopes} scope(s); "
        f"requested {len(plan.requests)}, skipped {len(plan.skipped)}, errors {len(plan.errors)}"
    )
    reasons = [f"{key!r}: listing failed: {error}" for key, error in plan.errors.items()]
    reasons += [f"{key!r}: {why}" for key, why in plan.skipped.items()]
    more = f" (and {len(reasons) - SKIPS_SHOWN} more)" if len(reasons) > SKIPS_SHOWN else ""
    return dg.SensorResult(
        skip_reason="; ".join(reasons[:SKIPS_SHOWN]) + more if reasons and not plan.requests else None,
        run_requests=[dg.RunRequest(partition_key=key, run_key=f"{key}:{fp}") for key, fp in plan.requests],
        dynamic_partitions_requests=[trace_runs.build_add_request(plan.new_keys)] if plan.new_keys else [],
        cursor=plan.cursor,
    )
