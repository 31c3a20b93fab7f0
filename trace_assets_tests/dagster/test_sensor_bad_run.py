"""One run whose listing fails does not stop the sensor: the others are discovered and exported,
the bad one is named in the log and the skip reason, and listed again on later ticks."""

from __future__ import annotations

import uuid

import dagster as dg

from trace_assets.definitions import build_definitions
from trace_assets.defs.resources import ObjectStorage, config_from_env
from trace_assets.sweep.discovery import load_cursor
from trace_assets_tests.support.bad_input import GOOD, result_json
from trace_assets_tests.support.fault_proxy import Fault
from trace_assets_tests.support.s3_fixtures import make_s3fs, upload_tree
from trace_assets_tests.support.sensor_ticks import sensor_tick


def test_a_run_whose_listing_fails_beside_a_good_one(tmp_path, s3_endpoint, s3_admin_client, fault_proxy):
    bucket = f"sensor-{uuid.uuid4().hex[:12]}"
    s3_admin_client.create_bucket(Bucket=bucket)
    root = f"s3://{bucket}/traces"
    trial = tmp_path / "run" / "trace_jobs" / "task__1"
    (trial / "agent").mkdir(parents=True)
    (trial / "result.json").write_bytes(result_json("task__1"))
    (trial / "agent" / "trajectory.json").write_bytes(GOOD)
    for run in ("run-bad", "run-good"):
        upload_tree(tmp_path / "run", make_s3fs(s3_endpoint), f"{root}/{run}")
    # The run's recursive listing (no delimiter) fails every time; the root's listing does not.
    rule = fault_proxy.add_fault(Fault.INTERNAL_ERROR, query_contains="run-bad%2Ftrace_jobs%2F&encoding-type")
    storage = ObjectStorage(endpoint_url=fault_proxy.url, region_name="us-east-1", max_attempts=1)
    config = config_from_env(
        {},
        traces_root=root,
        publish_root=str(tmp_path / "published"),
        staging_root=str(tmp_path / "staging"),
        settle_seconds=0,
        object_storage=storage,
    )
    defs = build_definitions(config)

    with dg.instance_for_test() as instance:
        first = sensor_tick(defs, instance, None)
        assert [r.partition_key for r in first.run_requests] == ["run-good"]
        assert instance.get_dynamic_partitions("trace_runs") == ["run-good"]
        assert fault_proxy.stats["faults_injected"] >= 1

        quiet = sensor_tick(defs, instance, first.cursor)
        assert quiet.skip_reason is not None and quiet.run_requests == []
        assert "'run-bad': listing failed" in quiet.skip_reason.skip_message
        assert set(load_cursor(quiet.cursor)) == {"run-good"}

        fault_proxy.clear_faults()
        del rule
        healed = sensor_tick(defs, instance, quiet.cursor)
        assert [r.partition_key for r in healed.run_requests] == ["run-bad"]
        assert set(instance.get_dynamic_partitions("trace_runs")) == {"run-good", "run-bad"}
