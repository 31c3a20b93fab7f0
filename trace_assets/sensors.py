"""Notice new trace prefixes, and export each run once its listing has stopped changing.

The cursor maps each run to `[fingerprint, first_seen_with_it, fingerprint_last_requested]`,
so it survives restarts, stays a few dozen bytes a run, and a run that grows after its export
is exported again once it settles anew.
"""

import json
import os
import time
from collections.abc import Iterable
from datetime import timedelta

import dagster as dg

from trace_assets.assets import trace_runs
from trace_assets.jobs import export_trace_run
from trace_assets.listing import ObjectBatch
from trace_assets.pipeline import fingerprint
from trace_assets.resources import ObjectStorage, config_from_env
from trace_assets.storage import EPOCH

DEFAULT_SETTLE_SECONDS = 600
CURSOR_VERSION = 1


def listing_fingerprint(pages: Iterable[ObjectBatch]) -> str:
    """Object count, total bytes and newest modification time: what changes while a run is written."""
    count = size = 0
    newest = None
    for page in pages:
        count += len(page)
        size += sum(page.sizes)
        newest = max((m for m in [*page.modified, newest] if m is not None), default=None)
    modified = "" if newest is None else (EPOCH + timedelta(microseconds=newest)).isoformat()
    return fingerprint([], count, size, modified)[:16]


def settle_seconds() -> float:
    return float(os.environ.get("TRACE_ASSETS_SETTLE_SECONDS", DEFAULT_SETTLE_SECONDS))


def load_cursor(cursor: str | None) -> dict[str, list]:
    if not cursor:
        return {}
    data = json.loads(cursor)
    return data.get("runs", {}) if data.get("v") == CURSOR_VERSION else {}


def dump_cursor(runs: dict[str, list]) -> str:
    return json.dumps({"v": CURSOR_VERSION, "runs": runs}, separators=(",", ":"), sort_keys=True)


def plan_requests(
    seen: dict[str, list], fingerprints: dict[str, str], now: float, settle: float
) -> tuple[list[str], dict[str, list]]:
    """Which runs to export now, and the next cursor state. Pure, so ticks are easy to reason about."""
    to_request = []
    state: dict[str, list] = {}
    for run_id, current in sorted(fingerprints.items()):
        previous_fp, since, requested = seen.get(run_id, [None, now, None])
        if previous_fp != current:
            since = now
        if requested != current and now - since >= settle:
            to_request.append(run_id)
            requested = current
        state[run_id] = [current, since, requested]
    return to_request, state


@dg.sensor(
    job=export_trace_run,
    minimum_interval_seconds=int(os.environ.get("TRACE_ASSETS_SENSOR_INTERVAL_SECONDS", "60")),
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Adds a partition for each new run under the traces root; exports it once its listing settles",
)
def new_trace_runs_sensor(context: dg.SensorEvaluationContext) -> dg.SensorResult:
    # Read at each tick from the same environment the definitions are built from, so the sensor
    # also evaluates standalone (Dagster's build_sensor_context + evaluate_tick).
    store = config_from_env().store(ObjectStorage())
    run_ids = store.run_ids()
    known = set(context.instance.get_dynamic_partitions(trace_runs.name))
    new_runs = [run_id for run_id in run_ids if run_id not in known]
    fingerprints = {run_id: listing_fingerprint(store.iter_run(run_id)) for run_id in run_ids}
    to_request, state = plan_requests(load_cursor(context.cursor), fingerprints, time.time(), settle_seconds())
    if new_runs:
        context.log.info(f"new trace runs: {', '.join(new_runs)}")
    return dg.SensorResult(
        run_requests=[
            dg.RunRequest(partition_key=run_id, run_key=f"{run_id}:{fingerprints[run_id]}") for run_id in to_request
        ],
        dynamic_partitions_requests=[trace_runs.build_add_request(new_runs)] if new_runs else [],
        cursor=dump_cursor(state),
    )
