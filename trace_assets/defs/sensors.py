"""Notice new trace prefixes, and export each run once its listing has stopped changing."""

import os
import time

import dagster as dg

from trace_assets.defs.jobs import export_trace_run
from trace_assets.defs.partitions import TRACE_RUNS, trace_runs
from trace_assets.defs.resources import ObjectStorage, TraceAssetsConfig
from trace_assets.discovery import dump_cursor, load_cursor, plan_requests, run_fingerprints
from trace_assets.scope import RunScope, is_scope_key


@dg.sensor(
    job=export_trace_run,
    minimum_interval_seconds=int(os.environ.get("TRACE_ASSETS_SENSOR_INTERVAL_SECONDS", "60")),
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Adds a partition for each new run under the traces root; exports it once its listing settles",
)
def new_trace_runs_sensor(
    context: dg.SensorEvaluationContext, trace_config: TraceAssetsConfig, object_storage: ObjectStorage
) -> dg.SensorResult:
    store = trace_config.store(object_storage)
    run_ids = [run_id for run_id in store.run_ids() if is_scope_key(run_id)]  # see scope.validate_scope_key
    known = set(context.instance.get_dynamic_partitions(TRACE_RUNS))
    fingerprints, failures = run_fingerprints(run_ids, lambda run_id: store.iter_run(RunScope(run_id)))
    new_runs = [run_id for run_id in fingerprints if run_id not in known]
    to_request, state = plan_requests(
        load_cursor(context.cursor), fingerprints, time.time(), trace_config.settle_seconds, unlisted=failures
    )
    if new_runs:
        context.log.info(f"new trace runs: {', '.join(new_runs)}")
    for run_id, error in failures.items():
        context.log.error(f"run {run_id!r} skipped this tick, its listing failed: {error}")
    skipped = "; ".join(f"run {run_id!r}: listing failed: {error}" for run_id, error in failures.items())
    return dg.SensorResult(
        skip_reason=skipped if skipped and not to_request else None,
        run_requests=[
            dg.RunRequest(partition_key=run_id, run_key=f"{run_id}:{fingerprints[run_id]}") for run_id in to_request
        ],
        dynamic_partitions_requests=[trace_runs.build_add_request(new_runs)] if new_runs else [],
        cursor=dump_cursor(state),
    )
