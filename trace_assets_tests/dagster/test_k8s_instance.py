"""deploy/k8s/dagster.yaml: every section validates against its class's schema, and the instance
loads with its run queue (storage swapped for SQLite, the launcher for a local one: no cluster)."""

from __future__ import annotations

import dagster as dg
import pytest
from dagster._core.instance.ref import InstanceRef

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
        limits = {(limit["key"], str(limit.get("value"))): limit["limit"] for limit in queue.tag_concurrency_limits}
        assert limits == {
            ("dagster/partition", "None"): 16,
            ("trace_assets/sweep", "{'applyLimitPerUniqueValue': True}"): 4,
            ("dagster/partition", "{'applyLimitPerUniqueValue': True}"): 1,
        }
