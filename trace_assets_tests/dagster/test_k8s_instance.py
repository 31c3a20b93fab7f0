"""deploy/k8s/dagster.yaml: every section validates against its class's schema, and the instance
loads with its run queue (storage swapped for SQLite, the launcher for a local one: no cluster)."""

from __future__ import annotations

import dagster as dg
import pytest
from dagster._core.instance.ref import InstanceRef

from trace_assets.definitions import build_definitions, defs
from trace_assets.defs.assets import HUB_COMMIT_POOL
from trace_assets.defs.jobs import export_trace_run
from trace_assets.defs.resources import HuggingFaceHub, config_from_env
from trace_assets_tests.support.helpers import PROJECT_DIR
from trace_assets_tests.support.instance_config import validated_instance_ref

pytestmark = pytest.mark.dagster
K8S_DIR = PROJECT_DIR / "deploy" / "k8s"
ENVIRONMENT = {
    "DAGSTER_PG_HOST": "postgres",
    "DAGSTER_PG_PORT": "5432",
    "DAGSTER_PG_USERNAME": "dagster",
    "DAGSTER_PG_PASSWORD": "unused",
    "DAGSTER_PG_DB": "dagster",
    "DAGSTER_COMPUTE_LOG_BUCKET": "trace-assets-logs",
    "DAGSTER_K8S_NAMESPACE": "trace-assets",
    "TRACE_ASSETS_IMAGE": "registry.example/trace-assets:1",
}


def test_k8s_instance_validates_and_queues_runs_per_sweep(tmp_path, monkeypatch):
    for name, value in ENVIRONMENT.items():
        monkeypatch.setenv(name, value)
    ref = validated_instance_ref(K8S_DIR, tmp_path)
    launcher = ref.run_launcher_data
    assert (launcher.module_name, launcher.class_name) == ("dagster_k8s", "K8sRunLauncher")
    assert launcher.config_dict["job_image"] == {"env": "TRACE_ASSETS_IMAGE"}

    local_only = {
        "storage": {"sqlite": {"base_dir": str(tmp_path / "storage")}},
        "run_launcher": {"module": "dagster", "class": "DefaultRunLauncher"},
        "compute_logs": {"module": "dagster", "class": "LocalComputeLogManager", "config": {"base_dir": str(tmp_path)}},
    }
    ref = InstanceRef.from_dir(str(tmp_path), config_dir=str(K8S_DIR), overrides=local_only)
    with dg.DagsterInstance.from_ref(ref) as instance:
        assert isinstance(instance.run_coordinator, dg.QueuedRunCoordinator)
        queue = instance.run_coordinator.get_run_queue_config()
        limits = {(limit["key"], str(limit["value"])): limit["limit"] for limit in queue.tag_concurrency_limits}
        assert limits == {
            ("trace_assets/store", "read"): 16,
            ("trace_assets/sweep", "{'applyLimitPerUniqueValue': True}"): 4,
            ("dagster/partition", "{'applyLimitPerUniqueValue': True}"): 1,
        }


def test_every_job_runs_its_steps_in_one_process():
    """Backfills and the UI's Materialize run Dagster's implicit asset job, not export_trace_run; it
    takes the definitions' executor (the multiprocess default made a backfill's run 4.8x the CLI's)."""
    executors = {job.name: job.executor_def for job in defs.resolve_all_job_defs()}
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
    config = config_from_env({}, traces_root="/data/traces", publish_root=publish_root)
    located = build_definitions(config, hub=HuggingFaceHub(repo_id_template=repo_id_template))
    published = located.resolve_assets_def("published_shards")
    assert published.op.pool == pool
    [spec] = published.specs
    assert spec.kinds == ({"parquet", "huggingface"} if pool else {"parquet"})
