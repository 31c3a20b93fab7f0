"""Notice new runs and steps, and export each scope once its listing settles, at a per-tick cost
that follows what changed (see `discovery`), or, with an event queue, what S3's events touched
(see `queue_events`).

Queue messages are deleted one tick late: a tick records the receipt handles of the messages it
read in its cursor and deletes them at the start of the next tick, whose cursor proves that the
tick which acted on them (its plan, run requests and cursor, committed together by Dagster) was
committed. A tick that dies before its commit leaves them in the queue, to be read again once
their visibility timeout ends: delivery is at least once, and reading a message twice only lists
its scope twice.
"""

import time
from typing import Any

import dagster as dg

from trace_assets.core.run_tags import SWEEP_TAG
from trace_assets.core.scope import RunScope, is_scope_key
from trace_assets.defs.jobs import export_trace_run
from trace_assets.defs.partitions import TRACE_RUNS, trace_runs
from trace_assets.defs.recheck import recheck_requests
from trace_assets.defs.resources import TraceAssetsConfig
from trace_assets.defs.sweep import ScopeFactsReader, scopes_tried_since
from trace_assets.store.queue_events import bucket_and_prefix, read_messages
from trace_assets.store.s3_options import aws_session_options
from trace_assets.sweep.discovery import (
    TickSources,
    cursor_extra,
    is_current,
    plan_queue_tick,
    plan_tick,
    tick_summary,
)

SKIPS_SHOWN = 20  # scopes named in a tick's summary; the debug log names them all
RUNS_SINCE = "runs_since"  # in the cursor's extra: when the last tick began (its runs read from then on)
RUNS_SINCE_MARGIN = 5.0  # seconds read again: a run updated as the last tick read them is not missed


def new_trace_runs_sensor(interval_seconds: int) -> dg.SensorDefinition:
    """The sensor, ticking every `interval_seconds` (the declared setting, read when the code
    location loads: Dagster fixes it on the definition)."""
    # Long enough that the next tick deletes a message before it shows again (else it is read twice).
    visibility_seconds = max(300, 5 * interval_seconds)

    @dg.sensor(
        name="new_trace_runs_sensor",
        job=export_trace_run,
        minimum_interval_seconds=interval_seconds,
        default_status=dg.DefaultSensorStatus.RUNNING,
        description="Adds a partition for each new run or step; exports it once its listing settles",
    )
    def sensor(context: dg.SensorEvaluationContext, trace_config: TraceAssetsConfig) -> dg.SensorResult:
        return _tick(context, trace_config, visibility_seconds)

    return sensor


def _tick(
    context: dg.SensorEvaluationContext,
    trace_config: TraceAssetsConfig,
    visibility_seconds: int,
) -> dg.SensorResult:
    parts = trace_config.parts()
    store = parts.store()
    instance = context.instance

    def run_scopes(run_id: str) -> list[str]:
        try:
            return [scope.key for scope in parts.scopes(run_id)]
        except FileNotFoundError:  # no trace_jobs/ folder: not a run (yet)
            return []

    def listing(key: str) -> Any:
        return store.iter_run(RunScope.from_key(key))

    known = instance.get_dynamic_partitions(TRACE_RUNS)
    now = time.time()
    extra = cursor_extra(context.cursor)
    # Runs anyone launched (the UI, the CLI, a backfill) that changed since the last tick began: their
    # scopes are followed whatever their back-off, so no tick calls one "published" while it is not.
    since = extra.get(RUNS_SINCE)
    tried = scopes_tried_since(instance, since - RUNS_SINCE_MARGIN) if isinstance(since, int | float) else set()
    sources = TickSources(run_scopes, listing, ScopeFactsReader(instance, known), tried)
    asked, seen = recheck_requests(instance, extra.get("rechecked_through"))
    recheck = {key for key in asked if is_scope_key(key)}  # an observation from any caller: checked here
    for key in sorted(asked - recheck):
        context.log.warning(f"re-check request for {key!r} ignored: not a scope key")
    if recheck:
        context.log.info(f"re-check requested for {', '.join(sorted(recheck))}")
    queue_url = trace_config.event_queue_url
    ignored: dict[str, int] = {}
    if queue_url and is_current(context.cursor):  # after one full tick, even over an empty root
        from trace_assets.store.event_queue import EventQueue  # boto3 loads only for a queue

        storage = trace_config.object_storage
        queue = EventQueue(queue_url, *aws_session_options(storage), max_attempts=storage.max_attempts)
        for failure in queue.delete(extra.get("acks", [])):
            context.log.warning(failure)
        bodies, handles = queue.receive(visibility_seconds)
        reading = read_messages(bodies, *bucket_and_prefix(trace_config.traces_root))
        for reason, detail in reading.ignored:
            context.log.warning(f"queue message ignored ({reason.value}): {detail}")
        ignored = reading.reasons()
        context.log.info(f"read {len(bodies)} queue message(s): {len(reading.touches)} run(s) or step(s) touched")
        plan = plan_queue_tick(
            context.cursor or "",
            reading.touches,
            sources,
            known,
            now,
            settle=trace_config.settle_seconds,
            recheck=recheck,
            extra={"rechecked_through": seen, "acks": handles, RUNS_SINCE: now},
        )
    else:  # the root, listed with a delimiter; with a queue, only on the first tick (no cursor)
        plan = plan_tick(
            context.cursor,
            [run_id for run_id in store.run_folders() if is_scope_key(run_id)],  # see scope.validate_scope_key
            sources,
            known,
            now,
            settle=trace_config.settle_seconds,
            recheck=recheck,
            extra={"rechecked_through": seen, RUNS_SINCE: now},
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
    notes = [f"queue messages ignored: {', '.join(f'{n} {why}' for why, n in ignored.items())}"] if ignored else []
    summary = tick_summary(plan, SKIPS_SHOWN, notes)
    context.log.info(summary)  # a tick that requests runs has no skip reason: its log says the rest
    tags = {SWEEP_TAG: trace_config.sweep_name()}
    return dg.SensorResult(
        skip_reason=summary if not plan.requests else None,
        run_requests=[
            dg.RunRequest(partition_key=key, run_key=_run_key(key, fp, key in plan.retried, now), tags=tags)
            for key, fp in plan.requests
        ],
        dynamic_partitions_requests=[trace_runs.build_add_request(plan.new_keys)] if plan.new_keys else [],
        cursor=plan.cursor,
    )


def _run_key(key: str, fingerprint: str, retried: bool, now: float) -> str:
    """A scope's export, once per listing; a retry after a failed export needs a key of its own
    (Dagster never launches a run key twice)."""
    return f"{key}:{fingerprint}:retry-{int(now)}" if retried else f"{key}:{fingerprint}"
