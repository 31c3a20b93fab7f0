"""A partition materialized on a PostgreSQL-backed instance, and the production dagster.yaml on it.

The local instance is SQLite; production shares one PostgreSQL database between the webserver,
the daemon and every run. These tests run against a real server (see `services.postgres_server`).
"""

from __future__ import annotations

from contextlib import closing
from pathlib import Path

import dagster as dg
import yaml
from dagster._core.instance.ref import InstanceRef
from dagster_postgres import PostgresEventLogStorage, PostgresRunStorage, PostgresScheduleStorage

from trace_assets.definitions import build_definitions, export_trace_run, trace_runs
from trace_assets.defs.assets import HUB_COMMIT_POOL
from trace_assets.defs.resources import config_from_env
from trace_assets_tests.support import service_processes as services
from trace_assets_tests.support.helpers import PROJECT_DIR, SAMPLE_RUN, SAMPLE_TRACES
from trace_assets_tests.support.instance_config import validated_instance_ref
from trace_assets_tests.support.service_processes import PostgresServer

postgres_server = services.postgres_server  # the session-wide server; each test makes its own database

DEPLOY_DIR = PROJECT_DIR / "deploy"
ASSET_NAMES = ["raw_trial_listing", "scored_trials", "last_episode_rows", "secret_scan_report", "published_shards"]


def postgres_home(tmp_path: Path, server: PostgresServer) -> Path:
    """A DAGSTER_HOME whose dagster.yaml keeps runs, event logs and schedules in the server's database."""
    home = tmp_path / "dagster_home"
    home.mkdir()
    config = {"storage": server.dagster_storage_config(), "telemetry": {"enabled": False}}
    (home / "dagster.yaml").write_text(yaml.safe_dump(config))
    return home


def assert_postgres_backed(instance: dg.DagsterInstance) -> None:
    """Runs, event logs and schedules: the three storages `storage: postgres:` replaces."""
    assert isinstance(instance.run_storage, PostgresRunStorage)
    assert isinstance(instance.event_log_storage, PostgresEventLogStorage)
    assert isinstance(instance.schedule_storage, PostgresScheduleStorage)


def test_partition_run_and_metadata_live_in_postgres(postgres_server: PostgresServer, tmp_path):
    database = postgres_server.create_database("dagster_partition_run")
    home = postgres_home(tmp_path, database)
    trace_config = config_from_env(
        {},
        traces_root=str(SAMPLE_TRACES),
        publish_root=str(tmp_path / "published"),
        staging_root=str(tmp_path / "staging"),
        on_secret="allow",
    )
    with dg.DagsterInstance.from_config(str(home)) as instance:
        assert_postgres_backed(instance)
        instance.add_dynamic_partitions(trace_runs.name, [SAMPLE_RUN])
        job = build_definitions(trace_config).resolve_job_def(export_trace_run.name)
        result = job.execute_in_process(instance=instance, partition_key=SAMPLE_RUN, raise_on_error=False)
        assert result.success
        run_id = result.run_id

    # A second instance on the same database sees it all, as the webserver and daemon would.
    with dg.DagsterInstance.from_config(str(home)) as instance:
        run = instance.get_run_by_id(run_id)
        assert run is not None and run.status == dg.DagsterRunStatus.SUCCESS
        assert run.tags["dagster/partition"] == SAMPLE_RUN
        assert instance.get_dynamic_partitions(trace_runs.name) == [SAMPLE_RUN]
        event = instance.get_latest_materialization_event(dg.AssetKey("last_episode_rows"))
        assert event is not None and event.run_id == run_id
        assert event.asset_materialization.partition == SAMPLE_RUN
        metadata = {key: value.value for key, value in event.asset_materialization.metadata.items()}
        assert (metadata["trial_dirs"], metadata["scored"], metadata["exported"]) == (36, 34, 28)
        assert metadata["export_ratio"] == "82.4% of scored"

    with closing(database.connect()) as connection, connection.cursor() as cursor:
        cursor.execute("SELECT status FROM runs WHERE run_id = %s", (run_id,))
        assert cursor.fetchall() == [("SUCCESS",)]
        cursor.execute(
            "SELECT asset_key, partition FROM event_logs WHERE run_id = %s AND dagster_event_type = 'ASSET_MATERIALIZATION'",
            (run_id,),
        )
        assert sorted(cursor.fetchall()) == sorted((f'["{name}"]', SAMPLE_RUN) for name in ASSET_NAMES)


def test_production_config_validates_and_its_storage_and_run_queue_load(
    postgres_server: PostgresServer, tmp_path, monkeypatch
):
    """deploy/dagster.yaml: every section against its class's schema; storage and run coordinator built for real."""
    database = postgres_server.create_database("dagster_production_config")
    for name, value in {
        "DAGSTER_PG_HOST": database.host,
        "DAGSTER_PG_PORT": str(database.port),
        "DAGSTER_PG_USERNAME": database.username,
        "DAGSTER_PG_PASSWORD": database.password,
        "DAGSTER_PG_DB": database.db_name,
        "DAGSTER_COMPUTE_LOG_BUCKET": "trace-assets-logs",
    }.items():
        monkeypatch.setenv(name, value)
    ref = validated_instance_ref(DEPLOY_DIR, tmp_path)
    assert (ref.run_launcher_data.module_name, ref.run_launcher_data.class_name) == (
        "dagster_aws.ecs",
        "EcsRunLauncher",
    )

    # The ECS launcher and S3 logs need AWS; swapped for local ones, the rest is the file as written.
    local_only = {
        "run_launcher": {"module": "dagster", "class": "DefaultRunLauncher"},
        "compute_logs": {"module": "dagster", "class": "LocalComputeLogManager", "config": {"base_dir": str(tmp_path)}},
    }
    ref = InstanceRef.from_dir(str(tmp_path), config_dir=str(DEPLOY_DIR), overrides=local_only)
    with dg.DagsterInstance.from_ref(ref) as instance:
        assert_postgres_backed(instance)
        instance.add_dynamic_partitions(trace_runs.name, [SAMPLE_RUN])
        assert instance.has_dynamic_partition(trace_runs.name, SAMPLE_RUN)
        assert isinstance(instance.run_coordinator, dg.QueuedRunCoordinator)
        queue = instance.run_coordinator.get_run_queue_config()
        assert queue.max_concurrent_runs == 16
        limits = {(limit["key"], str(limit.get("value"))): limit["limit"] for limit in queue.tag_concurrency_limits}
        assert limits == {
            ("trace_assets/hub", "commit"): 1,
            ("dagster/partition", "None"): 8,  # export runs reading the store, however launched
            ("dagster/partition", "{'applyLimitPerUniqueValue': True}"): 1,  # one run per run id at a time
        }
        # README's `dagster instance concurrency set hub_commits 1`, which the Postgres storage supports.
        instance.event_log_storage.set_concurrency_slots(HUB_COMMIT_POOL, 1)
        assert instance.event_log_storage.get_concurrency_info(HUB_COMMIT_POOL).slot_count == 1
