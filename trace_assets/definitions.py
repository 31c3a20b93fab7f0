"""The code location `dagster dev` and the CLI load: assets, checks, the job, resources."""

from __future__ import annotations

import dagster as dg

from trace_assets.assets import (
    last_episode_rows,
    published_shards,
    raw_trial_listing,
    scored_trials,
    secret_scan_report,
    trace_runs,
)
from trace_assets.checks import coverage_accounts_for_every_folder, export_ratio_above_threshold, no_live_secrets
from trace_assets.resources import ObjectStorage, TraceAssetsConfig, config_from_env

ASSETS = [raw_trial_listing, scored_trials, last_episode_rows, secret_scan_report, published_shards]
CHECKS = [coverage_accounts_for_every_folder, export_ratio_above_threshold, no_live_secrets]

export_trace_run = dg.define_asset_job(
    "export_trace_run",
    selection=dg.AssetSelection.assets(*ASSETS),
    partitions_def=trace_runs,
    description="List, score, export, scan and publish one RL run",
)


def build_definitions(trace_config: TraceAssetsConfig, object_storage: ObjectStorage | None = None) -> dg.Definitions:
    return dg.Definitions(
        assets=ASSETS,
        asset_checks=CHECKS,
        jobs=[export_trace_run],
        resources={"trace_config": trace_config, "object_storage": object_storage or ObjectStorage()},
    )


defs = build_definitions(config_from_env())
