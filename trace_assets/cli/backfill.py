"""`trace-assets backfill`: a real asset backfill (the UI's backfill page shows it), queued through
Dagster's GraphQL API and run by the daemon, one run per scope; `--wait` reports each run."""

from __future__ import annotations

import argparse
import json
import os
import time
from typing import TYPE_CHECKING, Any

from trace_assets.cli.config import config_from_args
from trace_assets.cli.console import say
from trace_assets.cli.instance import finished_statuses, get_instance
from trace_assets.cli.scopes import expand_scopes, listed_scopes, why_missing, why_no_runs
from trace_assets.core.run_tags import PARTITION_TAG, SWEEP_TAG
from trace_assets.core.scope import RunScope, validate_scope_keys
from trace_assets.settings import PipelineSettings, ProcessSettings, load

if TYPE_CHECKING:
    import dagster as dg

    from trace_assets.cli.backfill_api import BackfillStatus
    from trace_assets.defs.resources import TraceAssetsConfig


def run(args: argparse.Namespace) -> int:
    from trace_assets.cli.backfill_api import parse_headers, request_headers

    headers: dict[str, str] = {}
    for given in args.dagster_headers or []:
        headers.update(parse_headers(given, "--webserver-header"))
    request_headers(headers)  # a malformed variable's too: refused before anything is registered
    trace_config = config_from_args(args)
    run_ids = (
        listed_scopes(trace_config) if args.all else expand_scopes(validate_scope_keys(args.run_ids), trace_config)
    )
    if not run_ids:
        raise ValueError(why_no_runs(trace_config))
    store = trace_config.parts().store()
    missing = {key: why_missing(store, RunScope.from_key(key)) for key in run_ids}
    if any(missing.values()):
        raise ValueError("; ".join(f"{key}: {why}" for key, why in missing.items() if why))
    url = args.dagster_url or load(ProcessSettings, os.environ).dagster_url or None
    return backfill_runs(
        run_ids, _as_run_config(trace_config), args.wait, url, trace_config.sweep_name(), headers=headers
    )


def _as_run_config(trace_config: TraceAssetsConfig) -> dict[str, Any]:
    """The CLI's configuration (environment plus options) as the backfill runs' resource config."""
    config = {name: getattr(trace_config, name) for name in PipelineSettings.model_fields}
    return {"resources": {"trace_config": {"config": config}}}


def backfill_runs(
    run_ids: list[str],
    run_config: dict[str, Any],
    wait: bool,
    url: str | None,
    sweep: str,
    poll_seconds: float = 2.0,
    headers: dict[str, str] | None = None,
) -> int:
    """Launch the backfill (its runs tagged with the `sweep`); with `wait`, one line per run (status,
    reason, coverage). `headers` go with every GraphQL request, over the environment's (`ProcessSettings.dagster_headers`)."""
    from trace_assets.cli.backfill_api import BackfillStatus, backfill_status, launch_backfill, webserver
    from trace_assets.defs.jobs import ASSETS
    from trace_assets.defs.partitions import register_scopes

    instance = get_instance()
    register_scopes(instance, run_ids)
    paths = [list(key.path) for asset in ASSETS for key in asset.keys]
    with webserver(url, say) as base:
        title = f"trace-assets backfill of {len(run_ids)} run(s)"
        tags = {SWEEP_TAG: sweep}
        backfill_id = launch_backfill(
            base, paths, run_ids, tags=tags, run_config=run_config, title=title, headers=headers
        )
        say(f"backfill {backfill_id} queued for {len(run_ids)} run(s)")
        status = BackfillStatus.REQUESTED
        while wait and not status.finished:
            time.sleep(poll_seconds)
            status = _finished_by_runs(instance, backfill_id, run_ids) or backfill_status(
                base, backfill_id, headers=headers
            )
        failed = _report_runs(instance, base, backfill_id, headers) if wait else 0
    print(json.dumps({"backfill_id": backfill_id, "run_ids": run_ids, "status": status}), flush=True)
    return 0 if status.succeeded and not failed else 1


def _finished_by_runs(instance: dg.DagsterInstance, backfill_id: str, partitions: list[str]) -> BackfillStatus | None:
    """The status the backfill will take once every partition's run has finished (each run holds a
    partition's whole graph), else None: `--wait` need not sit out the backfill daemon's next tick
    (every 30 s) to learn what the runs already say."""
    import dagster as dg

    from trace_assets.cli.backfill_api import BackfillStatus

    latest = _latest_runs(instance, backfill_id)
    finished = {partition: run.status for partition, run in latest.items() if run.status in finished_statuses()}
    if set(partitions) - set(finished):
        return None
    succeeded = all(status == dg.DagsterRunStatus.SUCCESS for status in finished.values())
    return BackfillStatus.COMPLETED_SUCCESS if succeeded else BackfillStatus.COMPLETED_FAILED


def _latest_runs(instance: dg.DagsterInstance, backfill_id: str) -> dict[str, dg.DagsterRun]:
    """Each partition's run in the backfill: its newest, when it was re-executed within it."""
    import dagster as dg

    latest: dict[str, dg.DagsterRun] = {}
    for record in instance.get_run_records(dg.RunsFilter(tags={"dagster/backfill": backfill_id})):  # newest first
        latest.setdefault(record.dagster_run.tags.get(PARTITION_TAG, ""), record.dagster_run)
    return latest


def _report_runs(instance: dg.DagsterInstance, url: str, backfill_id: str, headers: dict[str, str] | None) -> int:
    """One JSON line per run of the backfill (and a sentence on stderr); returns how many failed."""
    import dagster as dg

    from trace_assets.cli.backfill_api import GraphQLError, failure_reason
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
                line["reason"] = failure_reason(url, run.run_id, headers=headers)
            except GraphQLError as error:  # this run's reason only: the other runs are still reported
                line["reason"] = f"its failure could not be read: {error}"
        coverage = (
            f"{line['trial_dirs']} trial folders, {line['scored']} scored, {line['exported']} exported "
            f"({line['export_ratio']:.2%} of scored)"
            if "scored" in line
            else "no coverage (the rows step did not finish)"
        )
        say(f"{partition}: {line['status']}; {coverage}" + (f"; {line['reason']}" if "reason" in line else ""))
        print(json.dumps(line), flush=True)
    return failed
