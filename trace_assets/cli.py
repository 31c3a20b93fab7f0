"""`trace-assets`: list the runs under a traces root, materialize them, or queue a backfill of them.

Runs go through the same job and instance as the UI (`DAGSTER_HOME`), so they show up there.
Progress goes to stderr; stdout carries one JSON line per run, for scripts.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from typing import Any

from trace_assets.defs.resources import PROJECT_DIR, ObjectStorage, TraceAssetsConfig, config_from_env
from trace_assets.harbor.options import add_export_arguments, export_overrides
from trace_assets.scope import RunScope
from trace_assets.secret_scan.policy import ON_SECRET_CHOICES


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="trace-assets", description=__doc__.splitlines()[0])
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--traces-root", help="fsspec URL of the traces root (env TRACE_ASSETS_TRACES_ROOT)")
    common.add_argument("--publish-root", help="fsspec URL to publish under (env TRACE_ASSETS_PUBLISH_ROOT)")
    add_export_arguments(common)
    common.add_argument(
        "--on-secret", choices=ON_SECRET_CHOICES, help="on live credentials (env TRACE_ASSETS_ON_SECRET)"
    )
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("runs", parents=[common], help="list the run ids under the traces root")
    materialize = commands.add_parser("materialize", parents=[common], help="materialize the asset graph for runs")
    materialize.add_argument("run_ids", nargs="+", metavar="RUN_ID")
    backfill = commands.add_parser(
        "backfill", parents=[common], help="queue a Dagster backfill (one run per partition) for runs"
    )
    chosen = backfill.add_mutually_exclusive_group(required=True)
    chosen.add_argument("--all", action="store_true", help="every run under the traces root")
    chosen.add_argument("run_ids", nargs="*", metavar="RUN_ID", default=[])
    backfill.add_argument("--wait", action="store_true", help="wait until the daemon has finished the backfill")
    return parser


def _config(args: argparse.Namespace) -> TraceAssetsConfig:
    return config_from_env(
        traces_root=args.traces_root,
        publish_root=args.publish_root,
        on_secret=args.on_secret,
        **export_overrides(args),
    )


def _run_ids(trace_config: TraceAssetsConfig) -> list[str]:
    return trace_config.store(ObjectStorage()).run_ids()


def _as_run_config(trace_config: TraceAssetsConfig) -> dict[str, Any]:
    """The CLI's configuration (environment plus options) as the backfill runs' resource config."""
    config = {name: getattr(trace_config, name) for name in TraceAssetsConfig.model_fields}
    return {"resources": {"trace_config": {"config": config}}}


def _instance():
    from dagster import DagsterInstance

    if not os.environ.get("DAGSTER_HOME"):
        home = PROJECT_DIR / ".dagster_home"
        home.mkdir(exist_ok=True)
        if not (home / "dagster.yaml").exists():
            shutil.copyfile(PROJECT_DIR / "dagster.yaml", home / "dagster.yaml")
        os.environ["DAGSTER_HOME"] = str(home)
    return DagsterInstance.get()


def _failure_reason(result) -> str:
    """The first failed step's error, or the blocking check that stopped the run."""
    for evaluation in result.get_asset_check_evaluations():
        if not evaluation.passed and evaluation.blocking:
            detail = evaluation.description or "failed"
            return f"blocked by check {evaluation.check_name} on {evaluation.asset_key.to_user_string()}: {detail}"
    for event in result.all_events:
        if event.is_step_failure:
            error = event.step_failure_data.error
            message = error.message.strip() if error else "failed"
            while error is not None and error.cause is not None:
                error = error.cause
                message = error.message.strip()
            return f"step {event.step_key} failed: {message}"
    return "run failed"


def _coverage_sentence(coverage: dict[str, Any]) -> str:
    excluded = ", ".join(
        f"{count} {reason}" for reason, count in sorted(coverage["excluded"].items(), key=lambda i: -i[1])
    )
    return (
        f"{coverage['trial_dirs']} trial folders, {coverage['scored']} scored, {coverage['exported']} exported "
        f"({coverage['export_ratio']:.2%} of scored)" + (f"; excluded: {excluded}" if excluded else "")
    )


def _published_to(result) -> str:
    """Where published_shards put the run: its folder, or the Hub commit."""
    for materialization in result.asset_materializations_for_node("published_shards"):
        return str(materialization.metadata["published_to"].value)
    return "nowhere: published_shards did not materialize"


def materialize_runs(run_ids: list[str], trace_config: TraceAssetsConfig) -> int:
    from trace_assets.definitions import build_definitions, export_trace_run

    instance = _instance()
    _register_partitions(instance, run_ids)
    job = build_definitions(trace_config).resolve_job_def(export_trace_run.name)
    failures = 0
    for run_id in run_ids:
        print(f"[trace-assets] materializing {run_id} from {trace_config.traces_root}", file=sys.stderr)
        result = job.execute_in_process(
            instance=instance,
            partition_key=run_id,
            raise_on_error=False,
            run_config={"loggers": {"console": {"config": {"log_level": "INFO"}}}},
        )
        line: dict[str, Any] = {"run_id": run_id, "dagster_run_id": result.run_id}
        coverage_path = trace_config.staging(RunScope(run_id)).coverage
        if coverage_path.exists():
            line.update(json.loads(coverage_path.read_text()))
        if result.success:
            line.update(status="published", published_to=_published_to(result))
            print(
                f"[trace-assets] {run_id}: {_coverage_sentence(line)}; published to {line['published_to']}",
                file=sys.stderr,
            )
        else:
            failures += 1
            reason = _failure_reason(result)
            line.update(status="failed", reason=reason)
            print(f"[trace-assets] {run_id}: {reason}", file=sys.stderr)
        print(json.dumps(line), flush=True)
    return 1 if failures else 0


def backfill_runs(run_ids: list[str], run_config: dict[str, Any], wait: bool, poll_seconds: float = 2.0) -> int:
    """A real asset backfill, shown in the UI's backfill page; the daemon launches its runs."""
    import time

    from dagster._core.execution.backfill import BULK_ACTION_TERMINAL_STATUSES, BulkActionStatus, PartitionBackfill
    from dagster._core.utils import make_new_backfill_id

    from trace_assets.definitions import defs
    from trace_assets.defs.jobs import ASSETS, STORE_READ_TAG

    instance = _instance()
    _register_partitions(instance, run_ids)
    backfill = PartitionBackfill.from_asset_partitions(
        backfill_id=make_new_backfill_id(),
        asset_graph=defs.resolve_asset_graph(),
        partition_names=run_ids,
        asset_selection=[key for asset in ASSETS for key in asset.keys],
        backfill_timestamp=time.time(),
        tags=STORE_READ_TAG,
        dynamic_partitions_store=instance,
        all_partitions=False,
        title=f"trace-assets backfill of {len(run_ids)} run(s)",
        description=", ".join(run_ids[:20]),
        run_config=run_config,
    )
    instance.add_backfill(backfill)
    print(f"[trace-assets] backfill {backfill.backfill_id} queued for {len(run_ids)} run(s)", file=sys.stderr)
    status = backfill.status
    while wait and status not in BULK_ACTION_TERMINAL_STATUSES:
        time.sleep(poll_seconds)
        status = instance.get_backfill(backfill.backfill_id).status
    print(json.dumps({"backfill_id": backfill.backfill_id, "run_ids": run_ids, "status": status.value}), flush=True)
    return 0 if status in (BulkActionStatus.REQUESTED, BulkActionStatus.COMPLETED_SUCCESS) else 1


def _register_partitions(instance, run_ids: list[str]) -> None:
    from trace_assets.defs.partitions import trace_runs

    known = set(instance.get_dynamic_partitions(trace_runs.name))
    missing = [run_id for run_id in run_ids if run_id not in known]
    if missing:
        instance.add_dynamic_partitions(trace_runs.name, missing)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        trace_config = _config(args)
        if args.command == "runs":
            for run_id in _run_ids(trace_config):
                print(run_id)
            return 0
        if args.command == "backfill":
            run_ids = _run_ids(trace_config) if args.all else args.run_ids
            if not run_ids:
                raise ValueError(f"no runs under {trace_config.traces_root}")
            return backfill_runs(run_ids, _as_run_config(trace_config), args.wait)
        return materialize_runs(args.run_ids, trace_config)
    except (OSError, ValueError) as err:
        print(f"trace-assets: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
