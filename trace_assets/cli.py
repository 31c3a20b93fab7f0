"""`trace-assets`: list the runs under a traces root, materialize them, queue a backfill of them,
forget runs that are gone, or ask the sensor to re-check scopes.

Runs go through the same job and instance as the UI (`DAGSTER_HOME`), so they show up there.
Progress goes to stderr, one line a message (`-v` for Dagster's full log and stack traces);
stdout carries one JSON line per run, for scripts. Before any work the CLI checks what it can:
run ids, that each run exists, that the publish root is writable (or the Hub token valid), and
only then registers partitions.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import shutil
import socket
import sys
import threading
import traceback
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trace_assets.harbor.options import add_export_arguments, export_overrides
from trace_assets.run_tags import PARTITION_TAG, SWEEP_TAG
from trace_assets.scope import (
    InvalidScopeKey,
    RunScope,
    ScopeUnit,
    partitions_named,
    validate_scope_key,
    validate_scope_keys,
)
from trace_assets.secret_scan.policy import ON_SECRET_CHOICES, ON_UNVERIFIED_CHOICES, ScanPolicy
from trace_assets.secret_scan.verdicts import Verdict

# Dagster and the resources take seconds to import: only the commands that run import them, so
# `--help` and argument errors answer at once (`unit/test_layers.py` keeps argparse's path light).
if TYPE_CHECKING:
    import dagster as dg

    from trace_assets.backfill_api import BackfillStatus
    from trace_assets.defs.resources import HuggingFaceHub, TraceAssetsConfig

PREFIX = "[trace-assets]"
# Tags on the CLI's runs, so a later CLI can tell a run whose process is gone (kill -9, OOM).
PID_TAG, HOST_TAG = "trace_assets/cli_pid", "trace_assets/cli_host"
INSTANCE_INIT_LOCK = ".trace-assets-instance.lock"
SLOT_WAIT_LOG_SECONDS = 10.0
SKIPPED_CHECK_NOTE = "did not yield or return expected outputs"  # Dagster's, on raw_tree_secrets when off


def _say(message: str) -> None:
    print(f"{PREFIX} {message}", file=sys.stderr, flush=True)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="trace-assets", description=__doc__.splitlines()[0])
    parser.add_argument("-v", "--verbose", action="store_true", help="Dagster's full log, stack traces on failure")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("-v", "--verbose", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    common.add_argument("--traces-root", help="fsspec URL of the traces root (env TRACE_ASSETS_TRACES_ROOT)")
    common.add_argument("--publish-root", help="fsspec URL to publish under (env TRACE_ASSETS_PUBLISH_ROOT)")
    add_export_arguments(common)
    common.add_argument(
        "--on-secret", choices=ON_SECRET_CHOICES, help="on live credentials (env TRACE_ASSETS_ON_SECRET)"
    )
    common.add_argument(
        "--on-unverified",
        choices=ON_UNVERIFIED_CHOICES,
        help="on unverified credentials (env TRACE_ASSETS_ON_UNVERIFIED; default redact)",
    )
    common.add_argument(
        "--raw-scan",
        action="store_true",
        default=None,
        help="also scan every object under each scope's prefix for secrets, as the raw_tree_secrets check "
        "(env TRACE_ASSETS_RAW_SCAN=1)",
    )
    common.add_argument(
        "--allow-shrink",
        action="store_true",
        default=None,
        help="publish even a run with 0 rows or one that shrank past the threshold (env TRACE_ASSETS_ALLOW_SHRINK=1)",
    )
    common.add_argument(
        "--scope",
        choices=[unit.value for unit in ScopeUnit],
        help="a dataset per step folder (step, the default) or per run (env TRACE_ASSETS_SCOPE)",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("runs", parents=[common], help="list the scopes (runs, or runs' steps) under the traces root")
    materialize = commands.add_parser("materialize", parents=[common], help="materialize the asset graph for runs")
    materialize.add_argument("run_ids", nargs="+", metavar="RUN_ID")
    materialize.add_argument(
        "--dry-run",
        action="store_true",
        help="list, score and scan into staging; print coverage, verdict and what would be published; publish nothing",
    )
    backfill = commands.add_parser(
        "backfill", parents=[common], help="queue a Dagster backfill (one run per partition) for runs"
    )
    chosen = backfill.add_mutually_exclusive_group(required=True)
    chosen.add_argument("--all", action="store_true", help="every run under the traces root")
    chosen.add_argument("run_ids", nargs="*", metavar="RUN_ID", default=[])
    backfill.add_argument(
        "--wait", action="store_true", help="wait until the daemon has finished; one line per run, exit 1 if any failed"
    )
    backfill.add_argument(
        "--webserver",
        metavar="URL",
        default=os.environ.get("TRACE_ASSETS_DAGSTER_URL"),
        help="a running Dagster webserver for the GraphQL API (env TRACE_ASSETS_DAGSTER_URL); default: start one",
    )
    commands.add_parser(
        "status", help="the sweep view: one line per published scope, from the instance (no staging needed)"
    )
    forget = commands.add_parser(
        "forget", parents=[common], help="remove the partitions and staging of runs gone from the traces root"
    )
    forget.add_argument("run_ids", nargs="+", metavar="RUN_ID")
    recheck = commands.add_parser(
        "recheck", help="make the sensor list these scopes again at its next tick, whatever their back-off"
    )
    recheck.add_argument(
        "run_ids", nargs="+", metavar="SCOPE", help="a scope key (run/step-N), or a run: all its steps"
    )
    return parser


def _config(args: argparse.Namespace) -> TraceAssetsConfig:
    from trace_assets.defs.resources import config_from_env

    return config_from_env(
        traces_root=args.traces_root,
        publish_root=args.publish_root,
        on_secret=args.on_secret,
        on_unverified=args.on_unverified,
        raw_scan=args.raw_scan,
        scope_unit=args.scope,
        **export_overrides(args),
        allow_shrink=args.allow_shrink,
    )


def _run_ids(trace_config: TraceAssetsConfig) -> list[str]:
    """Scope keys under the traces root; folders whose names cannot be run ids are named and skipped."""
    from trace_assets.defs.resources import ObjectStorage
    from trace_assets.store.missing import root_problem

    store = trace_config.store(ObjectStorage())
    if not store.fs.isdir(store.root):  # an empty root lists nothing, and is no error
        raise ValueError(root_problem(store))
    found = []
    for run_id in store.run_ids():
        try:
            found.append(validate_scope_key(run_id))
        except InvalidScopeKey as error:
            _say(f"skipping {error}")
    return _scopes(found, trace_config)


def _scopes(keys: list[str], trace_config: TraceAssetsConfig) -> list[str]:
    """Each run id given as the keys of its scopes (its steps, under `--scope step`); step keys,
    and runs not found (preflight names them), as they are."""
    from trace_assets.defs.resources import ObjectStorage

    expanded = []
    for key in keys:
        scope = RunScope.from_key(key)
        if scope.step is None and _run_exists(trace_config, scope):
            expanded += [s.key for s in trace_config.run_scopes(ObjectStorage(), key)]
        else:
            expanded.append(key)
    return list(dict.fromkeys(expanded))


def _run_exists(trace_config: TraceAssetsConfig, scope: RunScope) -> bool:
    import fsspec

    from trace_assets.defs.resources import ObjectStorage

    options = ObjectStorage().storage_options(trace_config.traces_root)
    fs, root = fsspec.core.url_to_fs(trace_config.traces_root, **options)
    return fs.isdir(f"{root.rstrip('/')}/{scope.source_prefix}")


def _why_missing(trace_config: TraceAssetsConfig, scope: RunScope) -> str | None:
    """None when the scope is under the traces root; else what is missing, and what is there instead."""
    from trace_assets.defs.resources import ObjectStorage
    from trace_assets.store.missing import why_missing

    return why_missing(trace_config.store(ObjectStorage()), scope)


def _why_no_runs(trace_config: TraceAssetsConfig) -> str:
    """Why `--all` found nothing: the root is missing or empty, or none of its folders is a run."""
    from trace_assets.defs.resources import ObjectStorage
    from trace_assets.store.missing import root_problem

    problem = root_problem(trace_config.store(ObjectStorage()))
    return problem or f"no runs under {trace_config.traces_root}: no folder there holds a trace_jobs/ folder"


def _as_run_config(trace_config: TraceAssetsConfig) -> dict[str, Any]:
    """The CLI's configuration (environment plus options) as the backfill runs' resource config."""
    from trace_assets.defs.resources import TraceAssetsConfig

    config = {name: getattr(trace_config, name) for name in TraceAssetsConfig.model_fields}
    return {"resources": {"trace_config": {"config": config}}}


def _instance() -> dg.DagsterInstance:
    """The instance, initialised under a file lock: two first commands on a fresh DAGSTER_HOME
    would otherwise both create the SQLite schemas (two alembic heads, every later command fails)."""
    import dagster as dg

    from trace_assets.defs.resources import PROJECT_DIR
    from trace_assets.steps.staging import hold_lock

    if not os.environ.get("DAGSTER_HOME"):
        default_home = PROJECT_DIR / ".dagster_home"
        default_home.mkdir(exist_ok=True)
        if not (default_home / "dagster.yaml").exists():
            shutil.copyfile(PROJECT_DIR / "dagster.yaml", default_home / "dagster.yaml")
        os.environ["DAGSTER_HOME"] = str(default_home)
    with hold_lock(Path(os.environ["DAGSTER_HOME"], INSTANCE_INIT_LOCK), "the Dagster instance", _say, "instance init"):
        instance = dg.DagsterInstance.get()
        from trace_assets.defs.partitions import TRACE_RUNS

        instance.get_runs(limit=1)  # each storage creates its schema on first use
        instance.get_dynamic_partitions(TRACE_RUNS)
        instance.all_instigator_state()
        instance.event_log_storage.get_concurrency_keys()
    return instance


def one_line_console() -> dg.LoggerDefinition:
    """Each step's own messages as one line; Dagster's events and stack traces only with -v."""
    import dagster as dg

    return dg.LoggerDefinition(_one_line_logger, config_schema={"verbose": dg.Field(bool, default_value=False)})


def _one_line_logger(init_context: dg.InitLoggerContext) -> logging.Logger:
    verbose = init_context.logger_config["verbose"]
    logger = logging.Logger("trace_assets.cli", level=logging.DEBUG if verbose else logging.INFO)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_OneLine(verbose))
    logger.addHandler(handler)
    return logger


class _OneLine(logging.Formatter):
    def __init__(self, verbose: bool):
        super().__init__("%(asctime)s - %(levelname)s - %(message)s")
        self.verbose = verbose

    def format(self, record: logging.LogRecord) -> str:
        if self.verbose:
            return super().format(record)
        meta = getattr(record, "dagster_meta", {}) or {}
        where = meta.get("step_key") or "run"
        return f"{PREFIX} {where}: {str(meta.get('orig_message', record.getMessage())).splitlines()[0]}"


class _StepMessagesOnly(logging.Filter):
    """Without -v: the steps' own log lines, not Dagster's events (the CLI says how a run ended), nor
    its note on a check that yielded no result (a skipped check says why itself)."""

    def filter(self, record: logging.LogRecord) -> bool:
        meta = getattr(record, "dagster_meta", {}) or {}
        return meta.get("dagster_event") is None and SKIPPED_CHECK_NOTE not in str(meta.get("orig_message", ""))


_EXCEPTION_CLASS = re.compile(r"^(?:[A-Za-z_][\w]*\.)+[A-Za-z_]\w*: ")  # a dotted class path, kept only with -v


def _failure_reason(result: dg.ExecuteInProcessResult, unblocking: str = "") -> str:
    """The first failed step's error, or the blocking check that stopped the run (the secret scan's
    with `unblocking`, what lifts it)."""
    from trace_assets.defs.checks import no_live_secrets

    for evaluation in result.get_asset_check_evaluations():
        if not evaluation.passed and evaluation.blocking:
            detail = evaluation.description or "failed"
            if unblocking and evaluation.asset_check_key in no_live_secrets.check_keys:
                detail += f"; {unblocking}"
            return f"blocked by check {evaluation.check_name} on {evaluation.asset_key.to_user_string()}: {detail}"
    for event in result.all_events:
        if event.is_step_failure:
            error = event.step_failure_data.error
            message = error.message.strip() if error else "failed"
            while error is not None and error.cause is not None:
                error = error.cause
                message = error.message.strip()
            first_line = message.splitlines()[0] if message else "failed"
            return f"step {event.step_key} failed: {_EXCEPTION_CLASS.sub('', first_line)}"
    return "run failed"


def _warnings(result: dg.ExecuteInProcessResult) -> list[str]:
    """Checks that did not pass but do not block (the export ratio)."""
    return [
        f"check {e.check_name} on {e.asset_key.to_user_string()}: {e.description or 'did not pass'}"
        for e in result.get_asset_check_evaluations()
        if not e.passed and not e.blocking
    ]


def _coverage_sentence(coverage: dict[str, Any]) -> str:
    excluded = ", ".join(
        f"{count} {reason}" for reason, count in sorted(coverage["excluded"].items(), key=lambda i: -i[1])
    )
    return (
        f"{coverage['trial_dirs']} trial folders, {coverage['scored']} scored, {coverage['exported']} exported "
        f"({coverage['export_ratio']:.2%} of scored)" + (f"; excluded: {excluded}" if excluded else "")
    )


def _published_to(result: dg.ExecuteInProcessResult) -> str:
    """Where published_shards put the run: its folder, or the Hub commit."""
    for materialization in result.asset_materializations_for_node("published_shards"):
        return str(materialization.metadata["published_to"].value)
    return "nowhere: published_shards did not materialize"


def _resolved(hub: HuggingFaceHub) -> HuggingFaceHub:
    """The hub with its `EnvVar("HF_TOKEN")` read, for the CLI's own Hub calls; the definitions keep
    the EnvVar, so the token is never part of a job's config or snapshot."""
    return hub.process_config_and_initialize()


# What lifts a block, for each verdict a policy can block on.
_UNBLOCK = {Verdict.LIVE: "--on-secret redact (or allow)", Verdict.UNVERIFIED: "--on-unverified redact (or keep)"}


def _unblocking(policy: ScanPolicy, report: Path) -> str:
    """For a scope the secret scan blocks: the options that would publish it, and where its report
    is; "" when nothing in the report is blocked."""
    if not report.exists():
        return ""
    kinds = json.loads(report.read_text()).get("kinds", {})
    found = {verdict for counts in kinds.values() for verdict, count in counts.items() if count}
    options = [option for verdict, option in _UNBLOCK.items() if verdict in policy.blocked and verdict in found]
    return f"to publish, run again with {' and '.join(options)}; scan report: {report}" if options else ""


def _preflight(run_ids: list[str], trace_config: TraceAssetsConfig, hub: HuggingFaceHub) -> dict[str, str]:
    """Runs that cannot be materialized, with why: not under the traces root, or not publishable."""
    from trace_assets.defs.resources import ObjectStorage

    target = trace_config.publish_target(ObjectStorage(), _resolved(hub))
    problems = {}
    for run_id in run_ids:
        scope = RunScope.from_key(run_id)
        missing = _why_missing(trace_config, scope)
        if missing:
            problems[run_id] = missing
            continue
        try:
            target.check_writable(scope)
        except Exception as error:  # any access failure (permissions, S3, Hub) is reported, not raised
            problems[run_id] = f"cannot publish to {target.location(scope)}: {error}"
    return problems


def _finished_statuses() -> set[dg.DagsterRunStatus]:
    import dagster as dg

    return {dg.DagsterRunStatus.SUCCESS, dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.CANCELED}


def free_slots_of_dead_runs(instance: dg.DagsterInstance) -> list[str]:
    """Fail the CLI's runs on this host whose process is gone, and free every pool slot held by a
    run that is no longer running, so no later run waits for a slot forever."""
    import dagster as dg

    unfinished = [status for status in dg.DagsterRunStatus if status not in _finished_statuses()]
    freed = []
    host = socket.gethostname()
    for run in instance.get_runs(dg.RunsFilter(statuses=unfinished, tags={HOST_TAG: host})):
        pid = int(run.tags.get(PID_TAG, "0") or 0)
        if pid and not _alive(pid):
            instance.report_run_failed(run, f"its trace-assets process (pid {pid}) is gone")
            freed.append(run.run_id)
    storage = instance.event_log_storage
    for key in storage.get_concurrency_keys():
        for slot in storage.get_concurrency_info(key).claimed_slots:
            holder = instance.get_run_by_id(slot.run_id)
            if holder is None or holder.is_finished or slot.run_id in freed:
                storage.free_concurrency_slots_for_run(slot.run_id)
                freed.append(slot.run_id)
    return list(dict.fromkeys(freed))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


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
                        _say(f"waiting for a slot of pool {key!r}, held by {holders or 'nobody yet'}")
            except Exception:  # a log line is not worth failing the run for
                continue

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        yield
    finally:
        done.set()
        watcher.join()


def materialize_runs(
    run_ids: list[str], trace_config: TraceAssetsConfig, verbose: bool = False, hub: HuggingFaceHub | None = None
) -> int:
    from trace_assets.definitions import build_definitions, export_trace_run
    from trace_assets.defs.partitions import register_scopes
    from trace_assets.defs.resources import hub_from_env

    hub = hub or hub_from_env()
    problems = _preflight(run_ids, trace_config, hub)
    found = [run_id for run_id in run_ids if run_id not in problems]
    instance = _instance()
    if found:
        register_scopes(instance, found)
    for run_id in free_slots_of_dead_runs(instance):
        _say(f"freed the pool slots of run {run_id}, whose process is gone")
    console = one_line_console() if verbose else _quiet(one_line_console())
    job = build_definitions(trace_config, hub=hub, loggers={"console": console}).resolve_job_def(export_trace_run.name)
    failures = 0
    for run_id in run_ids:
        if run_id in problems:
            failures += 1
            _say(f"{run_id}: {problems[run_id]}")
            print(json.dumps({"run_id": run_id, "status": "failed", "reason": problems[run_id]}), flush=True)
            continue
        staging = trace_config.staging(RunScope.from_key(run_id))
        _say(f"materializing {run_id} from {trace_config.traces_root}")
        dagster_run_id = str(uuid.uuid4())  # Dagster's own run ids are uuid4s too
        with (
            staging.locked(_say, holder=f"trace-assets materialize {run_id} (dagster run {dagster_run_id})"),
            _log_slot_holders(instance, dagster_run_id),
        ):
            result = job.execute_in_process(
                instance=instance,
                partition_key=run_id,
                raise_on_error=False,
                run_id=dagster_run_id,
                tags={PID_TAG: str(os.getpid()), HOST_TAG: socket.gethostname(), SWEEP_TAG: trace_config.sweep_name()},
                run_config={"loggers": {"console": {"config": {"verbose": verbose}}}},
            )
            unblocking = _unblocking(trace_config.scan_policy(), staging.scan_report)
            line = _result_line(run_id, result, staging.coverage, unblocking)
        if line["status"] != "published":
            failures += 1
        print(json.dumps(line), flush=True)
    return 1 if failures else 0


def _quiet(logger_def: dg.LoggerDefinition) -> dg.LoggerDefinition:
    import dagster as dg

    def make(init_context: dg.InitLoggerContext) -> logging.Logger:
        logger = logger_def.logger_fn(init_context)
        for handler in logger.handlers:
            handler.addFilter(_StepMessagesOnly())
        return logger

    return dg.LoggerDefinition(make, config_schema=logger_def.config_schema)


def _result_line(
    run_id: str, result: dg.ExecuteInProcessResult, coverage_path: Path, unblocking: str = ""
) -> dict[str, Any]:
    """The run's JSON line: figures only from this attempt (coverage only if it made it)."""
    line: dict[str, Any] = {"run_id": run_id, "dagster_run_id": result.run_id}
    if result.asset_materializations_for_node("last_episode_rows") and coverage_path.exists():
        line.update(json.loads(coverage_path.read_text()))
    warnings = _warnings(result)
    for warning in warnings:
        _say(f"{run_id}: warning: {warning}")
    if result.success:
        line.update(status="published", published_to=_published_to(result), warnings=warnings)
        _say(f"{run_id}: {_coverage_sentence(line)}; published to {line['published_to']}")
    else:
        reason = _failure_reason(result, unblocking)
        line.update(status="failed", reason=reason, warnings=warnings)
        _say(f"{run_id}: {reason}")
    return line


def backfill_runs(
    run_ids: list[str],
    run_config: dict[str, Any],
    wait: bool,
    url: str | None,
    sweep: str,
    poll_seconds: float = 2.0,
) -> int:
    """A real asset backfill, shown in the UI's backfill page, launched through Dagster's GraphQL API;
    the daemon launches its runs, each tagged with the `sweep`. With `wait`, one line per run
    (status, reason, coverage)."""
    import time

    from trace_assets.backfill_api import BackfillStatus, backfill_status, launch_backfill, webserver
    from trace_assets.defs.jobs import ASSETS, STORE_READ_TAG
    from trace_assets.defs.partitions import register_scopes
    from trace_assets.defs.resources import PROJECT_DIR

    instance = _instance()
    register_scopes(instance, run_ids)
    paths = [list(key.path) for asset in ASSETS for key in asset.keys]
    with webserver(url, PROJECT_DIR / "workspace.yaml", _say) as base:
        title = f"trace-assets backfill of {len(run_ids)} run(s)"
        tags = {**STORE_READ_TAG, SWEEP_TAG: sweep}
        backfill_id = launch_backfill(base, paths, run_ids, tags, run_config, title)
        _say(f"backfill {backfill_id} queued for {len(run_ids)} run(s)")
        status = BackfillStatus.REQUESTED
        while wait and not status.finished:
            time.sleep(poll_seconds)
            status = _finished_by_runs(instance, backfill_id, run_ids) or backfill_status(base, backfill_id)
        failed = _report_runs(instance, base, backfill_id) if wait else 0
    print(json.dumps({"backfill_id": backfill_id, "run_ids": run_ids, "status": status}), flush=True)
    return 0 if status.succeeded and not failed else 1


def _finished_by_runs(instance: dg.DagsterInstance, backfill_id: str, partitions: list[str]) -> BackfillStatus | None:
    """The status the backfill will take once every partition's run has finished (each run holds a
    partition's whole graph), else None: `--wait` need not sit out the backfill daemon's next tick
    (every 30 s) to learn what the runs already say."""
    import dagster as dg

    from trace_assets.backfill_api import BackfillStatus

    latest = _latest_runs(instance, backfill_id)
    finished = {partition: run.status for partition, run in latest.items() if run.status in _finished_statuses()}
    if set(partitions) - set(finished):
        return None
    succeeded = all(status == dg.DagsterRunStatus.SUCCESS for status in finished.values())
    return BackfillStatus.COMPLETED_SUCCESS if succeeded else BackfillStatus.COMPLETED_FAILED


def _latest_runs(instance: dg.DagsterInstance, backfill_id: str) -> dict[str, dg.DagsterRun]:
    """Each partition's run in the backfill: its newest, when it was re-executed within it."""
    import dagster as dg

    latest: dict[str, dg.DagsterRun] = {}
    for run in instance.get_runs(dg.RunsFilter(tags={"dagster/backfill": backfill_id})):  # newest first
        latest.setdefault(run.tags.get(PARTITION_TAG, ""), run)
    return latest


def _report_runs(instance: dg.DagsterInstance, url: str, backfill_id: str) -> int:
    """One JSON line per run of the backfill (and a sentence on stderr); returns how many failed."""
    import dagster as dg

    from trace_assets.backfill_api import GraphQLError, failure_reason
    from trace_assets.defs.assets import last_episode_rows

    failed = 0
    for partition, run in sorted(_latest_runs(instance, backfill_id).items()):
        line: dict[str, Any] = {"run_id": partition, "dagster_run_id": run.run_id, "status": run.status.value}
        records = instance.fetch_materializations(
            dg.AssetRecordsFilter(asset_key=last_episode_rows.key, asset_partitions=[partition]), limit=20
        ).records
        for record in records:
            if record.run_id == run.run_id and record.asset_materialization is not None:
                figures = record.asset_materialization.metadata
                line.update({k: figures[k].value for k in ("trial_dirs", "scored", "exported", "rows") if k in figures})
                line["export_ratio"] = line["exported"] / line["scored"] if line.get("scored") else 0.0
        if run.status != dg.DagsterRunStatus.SUCCESS:
            failed += 1
            try:
                line["reason"] = failure_reason(url, run.run_id)
            except GraphQLError as error:  # this run's reason only: the other runs are still reported
                line["reason"] = f"its failure could not be read: {error}"
        coverage = (
            f"{line['trial_dirs']} trial folders, {line['scored']} scored, {line['exported']} exported "
            f"({line['export_ratio']:.2%} of scored)"
            if "scored" in line
            else "no coverage (the rows step did not finish)"
        )
        _say(f"{partition}: {line['status']}; {coverage}" + (f"; {line['reason']}" if "reason" in line else ""))
        print(json.dumps(line), flush=True)
    return failed


def dry_run_runs(run_ids: list[str], trace_config: TraceAssetsConfig, hub: HuggingFaceHub | None = None) -> int:
    """Each run through the steps without Dagster or the publish target's writes: one JSON line each."""
    from trace_assets.defs.resources import ObjectStorage, hub_from_env
    from trace_assets.steps.dry_run import dry_run

    target = trace_config.publish_target(ObjectStorage(), _resolved(hub or hub_from_env()))
    failures = 0
    for run_id in run_ids:
        scope = RunScope.from_key(run_id)  # a run, or a step of one
        reason = _why_missing(trace_config, scope)
        if reason:
            failures += 1
            _say(f"{run_id}: {reason}")
            print(json.dumps({"run_id": run_id, "status": "failed", "reason": reason}), flush=True)
            continue
        staging = trace_config.staging(scope)
        with staging.locked(_say, holder=f"trace-assets materialize --dry-run {run_id}"):
            sessions = trace_config.session_writer(staging)
            line = dry_run(
                trace_config.store(ObjectStorage()),
                staging,
                trace_config.export_options(),
                trace_config.batch_size,
                trace_config.max_rows_per_shard,
                (trace_config.scan_options(), trace_config.scan_policy()),
                target,
                None if trace_config.allow_shrink else trace_config.shrink_threshold,
                _say,
                (sessions, trace_config.sessions_folder(staging) or staging.folder) if sessions else None,
                trace_config.raw_scan,
            )
        plan = line["would_publish"]
        unblocking = _unblocking(trace_config.scan_policy(), staging.scan_report)
        if plan.get("blocked") and unblocking:
            plan["blocked"] += f"; {unblocking}"
        outcome = plan.get("blocked") or plan.get("refused") or f"{plan['rows']} rows in {plan['shards']} shard(s)"
        raw = line.get("raw_scan")
        raw_note = f"; raw tree: {raw['verdict']} in {raw['objects_with_findings']} object(s)" if raw else ""
        _say(
            f"{run_id}: {_coverage_sentence(line)}; scan verdict {line['verdict']}{raw_note}; "
            f"would publish to {plan['to']}: {outcome}"
        )
        print(json.dumps({"run_id": run_id, **line}), flush=True)
        failures += bool(plan.get("blocked") or plan.get("refused"))  # as the real run would fail
    return 1 if failures else 0


def forget_runs(run_ids: list[str], trace_config: TraceAssetsConfig) -> int:
    """Remove the partitions and staging folders of runs gone from the traces root; published
    datasets stay. A run still under the traces root is refused (it would be listed again)."""
    from trace_assets.defs.partitions import TRACE_RUNS

    instance = _instance()
    known = set(instance.get_dynamic_partitions(TRACE_RUNS))
    # a run: its step partitions; a key no partition names: its staging folder alone
    run_ids = [scope for key in run_ids for scope in (partitions_named(key, known) or [key])]
    failures = 0
    for run_id in run_ids:
        scope = RunScope.from_key(run_id)
        if _run_exists(trace_config, scope):
            failures += 1
            reason = (
                f"run {run_id!r} still exists under {trace_config.traces_root}; forget only removes runs that are gone"
            )
            _say(reason)
            print(json.dumps({"run_id": run_id, "status": "kept", "reason": reason}), flush=True)
            continue
        staging = trace_config.staging(scope)
        with staging.locked(_say, holder=f"trace-assets forget {run_id}"):
            staging.remove()
            if run_id in known:
                instance.delete_dynamic_partition(TRACE_RUNS, run_id)
        staging.lock_file.unlink(missing_ok=True)
        _say(f"forgot {run_id}" + ("" if run_id in known else " (it was not a partition)"))
        print(json.dumps({"run_id": run_id, "status": "forgotten"}), flush=True)
    return 1 if failures else 0


def recheck_command(keys: list[str]) -> int:
    """Record, for each scope, a request the sensor reads at its next tick (see `defs/recheck.py`,
    shared with the UI's `recheck_scopes` job); a run stands for its step partitions."""
    import getpass

    from trace_assets.defs.recheck import request_rechecks, unknown_scope_reason

    requested_by = f"trace-assets recheck ({getpass.getuser()}@{socket.gethostname()})"
    asked = request_rechecks(_instance(), keys, requested_by)
    for key, scopes in asked.items():
        if not scopes:
            reason = unknown_scope_reason(key)
            _say(reason)
            print(json.dumps({"run_id": key, "status": "unknown", "reason": reason}), flush=True)
        for scope in scopes:
            _say(f"{scope}: re-check requested; the sensor lists it at its next tick")
            print(json.dumps({"run_id": scope, "status": "recheck_requested"}), flush=True)
    return 1 if not all(asked.values()) else 0


def print_status() -> int:
    """The same table as the `sweep_coverage` asset, read from the instance."""
    from trace_assets.defs.sweep import status_text

    print(status_text(_instance()), end="", flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "status":
            return print_status()
        if args.command == "recheck":
            return recheck_command(validate_scope_keys(args.run_ids))
        trace_config = _config(args)
        if args.command == "runs":
            for run_id in _run_ids(trace_config):
                print(run_id)
            return 0
        if args.command == "forget":
            return forget_runs(validate_scope_keys(args.run_ids), trace_config)
        if args.command == "backfill":
            run_ids = _run_ids(trace_config) if args.all else _scopes(validate_scope_keys(args.run_ids), trace_config)
            if not run_ids:
                raise ValueError(_why_no_runs(trace_config))
            missing = {key: _why_missing(trace_config, RunScope.from_key(key)) for key in run_ids}
            if any(missing.values()):
                raise ValueError("; ".join(f"{key}: {why}" for key, why in missing.items() if why))
            run_config = _as_run_config(trace_config)
            return backfill_runs(run_ids, run_config, args.wait, args.webserver, trace_config.sweep_name())
        scopes = _scopes(validate_scope_keys(args.run_ids), trace_config)
        if args.dry_run:
            return dry_run_runs(scopes, trace_config)
        return materialize_runs(scopes, trace_config, args.verbose)
    except Exception as error:  # one line for the operator; -v for the trace
        if args.verbose:
            traceback.print_exc()
        print(f"trace-assets: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
