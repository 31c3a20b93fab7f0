"""The code location's shape, read from the definitions without an instance: every job runs its
steps in one process, and publishing takes the Hub's commit pool only when it publishes to the Hub."""

from __future__ import annotations

import dagster as dg
import pytest

from trace_assets.definitions import build_definitions
from trace_assets.defs.assets import HUB_COMMIT_POOL
from trace_assets.defs.jobs import export_trace_run
from trace_assets.defs.resources import HuggingFaceHub, config_from_env


def test_every_job_runs_its_steps_in_one_process():
    """Backfills and the UI's Materialize run Dagster's implicit asset job, not export_trace_run; it
    takes the definitions' executor (the multiprocess default made a backfill's run 4.8x the CLI's)."""
    located = build_definitions(config_from_env({}, traces_root="/data/traces", publish_root="/data/published"))
    executors = {job.name: job.executor_def for job in located.resolve_all_job_defs()}
    assert {"__ASSET_JOB", export_trace_run.name} <= executors.keys()
    assert all(executor is dg.in_process_executor for executor in executors.values()), executors


@pytest.mark.parametrize(
    ("publish_root", "repo_id_template", "pool"),
    [
        ("/data/published", "", None),
        ("s3://bucket/published", "", None),
        ("hf://datasets/org/traces", "", HUB_COMMIT_POOL),
        ("/data/published", "{org}/traces-{run_id}", HUB_COMMIT_POOL),
    ],
)
def test_publishing_waits_for_the_hub_commit_pool_only_when_it_publishes_to_the_hub(
    publish_root, repo_id_template, pool
):
    """A sweep's scopes publish to folders side by side; Hub commits go one at a time. The asset's
    kinds name the target: `huggingface` only for the Hub."""
    hub = HuggingFaceHub(repo_id_template=repo_id_template, org="org")
    located = build_definitions(config_from_env({}, traces_root="/data/traces", publish_root=publish_root, hub=hub))
    published = located.resolve_assets_def("published_shards")
    assert published.op.pool == pool
    [spec] = published.specs
    assert spec.kinds == ({"parquet", "huggingface"} if pool else {"parquet"})
