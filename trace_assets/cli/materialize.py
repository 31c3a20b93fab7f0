"""`trace-assets materialize`: the export job for each scope, in this process, on the UI's instance;
one JSON line a scope on stdout, its coverage and outcome in a sentence on stderr."""

from __future__ import annotations

import argparse
import json
import os
import socket
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trace_assets.cli.config import config_from_args
from trace_assets.cli.console import one_line_console, say
from trace_assets.cli.dry_run import dry_run_runs
from trace_assets.cli.instance import HOST_TAG, PID_TAG, free_slots_of_dead_runs, get_instance
from trace_assets.cli.report import coverage_sentence, unblocking
from trace_assets.cli.scopes import expand_scopes, preflight, resolved
from trace_assets.core.run_tags import (
    CODE_LOCATION,
    CODE_LOCATION_TAG,
    REPOSITORY_LABEL,
    REPOSITORY_TAG,
    SWEEP_TAG,
    failure_line,
)
from trace_assets.core.scope import RunScope, validate_scope_keys
from trace_assets.runtime.machine_faults import INSTANCE, fault_detail, fault_line
from trace_assets.runtime.progress import quiet
from trace_assets.settings import dagster_home

if TYPE_CHECKING:
    import dagster as dg

    from trace_assets.defs.resources import HuggingFaceHub, TraceAssetsConfig

SLOT_WAIT_LOG_SECONDS = 10.0


def run(args: argparse.Namespace) -> int:
    trace_config = config_from_args(args)
    scopes = expand_scopes(validate_scope_keys(args.run_ids), trace_config)
    if args.dry_run:
        return dry_run_runs(scopes, trace_config)
    return materialize_runs(scopes, trace_config, args.verbose)


def materialize_runs(
    run_ids: list[str], trace_config: TraceAssetsConfig, verbose: bool = False, hub: HuggingFaceHub | None = None
) -> int:
    from trace_assets.definitions import build_definitions, export_trace_run
    from trace_assets.defs.partitions import register_scopes
    from trace_assets.defs.resources import ObjectStorage, hub_from_env
    from trace_assets.publishing.targets import Unread, kept_after_fault

    hub = hub or hub_from_env()
    problems = preflight(run_ids, trace_config, hub)
    target = trace_config.publish_target(ObjectStorage(), resolved(hub))
    found = [run_id for run_id in run_ids if run_id not in problems]
    dagster_instance = get_instance()
    if found:
        register_scopes(dagster_instance, found)
    for run_id in free_slots_of_dead_runs(dagster_instance):
        say(f"freed the pool slots of run {run_id}, whose process is gone")
    loggers = {"console": one_line_console(verbose)}
    job = build_definitions(trace_config, hub=hub, loggers=loggers).resolve_job_def(export_trace_run.name)
    if found:
        say(
            f"the UI lists these runs under Runs and on job {job.name}'s page, not on the Overview timeline"
            " (it draws only runs launched from the code location: the UI, the sensor, `backfill`)"
        )
    failures = 0
    for run_id in run_ids:
        if run_id in problems:
            failures += 1
            say(f"{run_id}: {problems[run_id]}")
            print(json.dumps({"run_id": run_id, "status": "failed", "reason": problems[run_id]}), flush=True)
            continue
        scope = RunScope.from_key(run_id)
        staging = trace_config.staging(scope)
        say(f"materializing {run_id} from {trace_config.traces_root}")
        dagster_run_id = str(uuid.uuid4())  # Dagster's own run ids are uuid4s too
        try:
            with (
                staging.locked(say, holder=f"trace-assets materialize {run_id} (dagster run {dagster_run_id})"),
                _log_slot_holders(dagster_instance, dagster_run_id),
            ):
                result = job.execute_in_process(
                    instance=dagster_instance,
                    partition_key=run_id,
                    raise_on_error=False,
                    run_id=dagster_run_id,
                    tags={
                        PID_TAG: str(os.getpid()),
                        HOST_TAG: socket.gethostname(),
                        SWEEP_TAG: trace_config.sweep_name(),
                        REPOSITORY_TAG: REPOSITORY_LABEL,  # listed on export_trace_run's page
                        CODE_LOCATION_TAG: CODE_LOCATION,  # and by the Runs page's filter by location
                    },
                    run_config={"loggers": {"console": {"config": {"verbose": verbose}}}},
                )
                lifts = unblocking(trace_config.scan_policy(), staging.scan_report)
                line = _result_line(run_id, result, staging.coverage, lifts)
        except Exception as error:  # the instance's database or the staging folder failed under the run
            # A fault in a step is the step's failure, which says what is kept: no read before each scope
            # here, only one now, for a fault outside the steps, which may have come after the publish.
            places = {"the staging folder": staging.folder, INSTANCE: dagster_home(os.environ)}
            kept = kept_after_fault(target, scope, Unread.OUTSIDE_THE_STEPS, say if verbose else quiet)
            reason = fault_line(error, {**places, "the publish root": trace_config.publish_root}, kept)
            if reason is None:
                raise
            if verbose:
                say(fault_detail(error))
            say(f"{run_id}: {reason}")
            line = {"run_id": run_id, "dagster_run_id": dagster_run_id, "status": "failed", "reason": reason}
        if line["status"] != "published":
            failures += 1
        print(json.dumps(line), flush=True)
    return 1 if failures else 0


@contextmanager
def _log_slot_holders(instance: dg.DagsterInstance, run_id: str) -> Iterator[None]:
    """While `run_id` waits for a pool slot, say every few seconds which run holds it."""
    done = threading.Event()

    def watch() -> None:
        while not done.wait(SLOT_WAIT_LOG_SECONDS):
            try:
                storage = instance.event_log_storage
                for key in storage.get_concurrency_keys():
                    info = storage.get_concurrency_info(key)
                    if run_id in info.pending_run_ids:
                        holders = ", ".join(f"run {s.run_id} ({s.step_key})" for s in info.claimed_slots)
                        say(f"waiting for a slot of pool {key!r}, held by {holders or 'nobody yet'}")
            except Exception:  # a log line is not worth failing the run for
                continue

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        yield
    finally:
        done.set()
        watcher.join()


def _result_line(
    run_id: str, result: dg.ExecuteInProcessResult, coverage_path: Path, unblocking: str = ""
) -> dict[str, Any]:
    """The run's JSON line: figures only from this attempt (coverage only if it made it)."""
    line: dict[str, Any] = {"run_id": run_id, "dagster_run_id": result.run_id}
    if result.asset_materializations_for_node("last_episode_rows") and coverage_path.exists():
        line.update(json.loads(coverage_path.read_text()))
    warnings = _warnings(result)
    for warning in warnings:
        say(f"{run_id}: warning: {warning}")
    if result.success:
        line.update(status="published", published_to=_published_to(result), warnings=warnings)
        say(f"{run_id}: {coverage_sentence(line)}; published to {line['published_to']}")
    else:
        reason = _failure_reason(result, unblocking)
        line.update(status="failed", reason=reason, warnings=warnings)
        say(f"{run_id}: {reason}")
    return line


def _failure_reason(result: dg.ExecuteInProcessResult, unblocking: str = "") -> str:
    """The first failed step's error, or the blocking check that stopped the run (the secret scan's
    with `unblocking`, what lifts it)."""
    from trace_assets.core.run_tags import blocked_by
    from trace_assets.defs.checks import no_live_secrets

    for evaluation in result.get_asset_check_evaluations():
        if not evaluation.passed and evaluation.blocking:
            detail = evaluation.description or "failed"
            if unblocking and evaluation.asset_check_key in no_live_secrets.check_keys:
                detail += f"; {unblocking}"
            return blocked_by(evaluation.check_name, evaluation.asset_key.to_user_string(), detail)
    for event in result.all_events:
        if event.is_step_failure:
            data = event.step_failure_data
            if data.user_failure_data is not None and data.user_failure_data.description:
                return f"step {event.step_key} failed: {failure_line(data.user_failure_data.description)}"
            error = data.error
            while error is not None and error.cause is not None:
                error = error.cause
            return f"step {event.step_key} failed: {failure_line(error.message if error else None)}"
    return "run failed"


def _warnings(result: dg.ExecuteInProcessResult) -> list[str]:
    """Checks that did not pass but do not block (the export ratio)."""
    return [
        f"check {e.check_name} on {e.asset_key.to_user_string()}: {e.description or 'did not pass'}"
        for e in result.get_asset_check_evaluations()
        if not e.passed and not e.blocking
    ]


def _published_to(result: dg.ExecuteInProcessResult) -> str:
    """Where published_shards put the run: its folder, or the Hub commit."""
    for materialization in result.asset_materializations_for_node("published_shards"):
        return str(materialization.metadata["published_to"].value)
    return "nowhere: published_shards did not materialize"
