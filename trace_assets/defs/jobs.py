"""The one job: a run's whole asset graph, one partition at a time."""

from __future__ import annotations

import dagster as dg

from trace_assets.defs.assets import (
    last_episode_rows,
    published_shards,
    raw_trial_listing,
    scored_trials,
    secret_scan_report,
)

EXPORT_ASSETS = [raw_trial_listing, scored_trials, last_episode_rows, secret_scan_report]  # then publishing
ASSETS = [*EXPORT_ASSETS, published_shards]
# The steps are a strictly linear chain: one process per step (the multiprocess default) only adds a
# Python start-up and definitions load per step (7-9 s each under load). The run launcher is what
# scales out, a run per scope. Both the job and the definitions' default use it: asset backfills and
# the UI's "Materialize" run Dagster's implicit asset job, which takes the definitions' executor.
RUN_EXECUTOR = dg.in_process_executor

export_trace_run = dg.define_asset_job(
    "export_trace_run",
    selection=dg.AssetSelection.assets(*ASSETS),
    # The steps are a strictly linear chain: one process per step (the multiprocess default) only adds
    # a Python start-up and definitions load per step. The run launcher is what scales out, a run per scope.
    executor_def=dg.in_process_executor,
    description="List, score, export, scan and publish one RL run",
)
