"""`trace-assets`: list runs under a traces root and materialize them on the local Dagster instance.

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

from trace_assets.resources import ON_SECRET_MODES, PROJECT_DIR, TraceAssetsConfig, config_from_env


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="trace-assets", description=__doc__.splitlines()[0])
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--traces-root", help="fsspec URL of the traces root (env TRACE_ASSETS_TRACES_ROOT)")
    common.add_argument("--publish-root", help="fsspec URL to publish under (env TRACE_ASSETS_PUBLISH_ROOT)")
    common.add_argument(
        "--subagents", action="store_true", default=None, help="include subagent rows (env TRACE_ASSETS_SUBAGENTS=1)"
    )
    common.add_argument("--on-secret", choices=ON_SECRET_MODES, help="on live credentials (env TRACE_ASSETS_ON_SECRET)")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("runs", parents=[common], help="list the run ids under the traces root")
    materialize = commands.add_parser("materialize", parents=[common], help="materialize the asset graph for runs")
    materialize.add_argument("run_ids", nargs="+", metavar="RUN_ID")
    return parser


def _config(args: argparse.Namespace) -> TraceAssetsConfig:
    return config_from_env(
        traces_root=args.traces_root,
        publish_root=args.publish_root,
        include_subagents=args.subagents,
        on_secret=args.on_secret,
    )


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
    excluded = ", ".join(f"{count} {reason}" for reason, count in sorted(coverage["excluded"].items(), key=lambda i: -i[1]))
    return (
        f"{coverage['trial_dirs']} trial folders, {coverage['scored']} scored, {coverage['exported']} exported "
        f"({coverage['export_ratio']:.2%} of scored)" + (f"; excluded: {excluded}" if excluded else "")
    )


def _published_to(result, trace_config: TraceAssetsConfig, run_id: str) -> str:
    """Where published_shards put the run: its folder, or the Hub commit."""
    for materialization in result.asset_materializations_for_node("published_shards"):
        return str(materialization.metadata["published_to"].value)
    return trace_config.publish_url(run_id)


def materialize_runs(run_ids: list[str], trace_config: TraceAssetsConfig) -> int:
    from trace_assets.definitions import build_definitions, export_trace_run, trace_runs

    instance = _instance()
    known = set(instance.get_dynamic_partitions(trace_runs.name))
    missing = [run_id for run_id in run_ids if run_id not in known]
    if missing:
        instance.add_dynamic_partitions(trace_runs.name, missing)
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
        coverage_path = trace_config.staging(run_id).coverage
        if coverage_path.exists():
            line.update(json.loads(coverage_path.read_text()))
        if result.success:
            line.update(status="published", published_to=_published_to(result, trace_config, run_id))
            print(f"[trace-assets] {run_id}: {_coverage_sentence(line)}; published to {line['published_to']}", file=sys.stderr)
        else:
            failures += 1
            reason = _failure_reason(result)
            line.update(status="failed", reason=reason)
            print(f"[trace-assets] {run_id}: {reason}", file=sys.stderr)
        print(json.dumps(line), flush=True)
    return 1 if failures else 0


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        trace_config = _config(args)
        if args.command == "runs":
            from trace_assets.resources import ObjectStorage

            for run_id in trace_config.store(ObjectStorage()).run_ids():
                print(run_id)
            return 0
        return materialize_runs(args.run_ids, trace_config)
    except (OSError, ValueError) as err:
        print(f"trace-assets: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
