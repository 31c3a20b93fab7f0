"""Queue mode against moto's server: the bucket's S3 event notifications go to a real SQS queue,
trial objects are written with s3fs, and each sensor tick lists only the runs the events touched."""

from __future__ import annotations

import json
import uuid

import dagster as dg
import pytest

from trace_assets.core.run_tags import SWEEP_TAG
from trace_assets.definitions import build_definitions
from trace_assets.defs.resources import ObjectStorage, config_from_env
from trace_assets.sweep.discovery import cursor_extra
from trace_assets_tests.support.bad_input import GOOD, result_json
from trace_assets_tests.support.fault_proxy import Fault
from trace_assets_tests.support.s3_fixtures import FAKE_ACCESS_KEY, FAKE_SECRET_KEY, REGION, make_s3fs
from trace_assets_tests.support.sensor_ticks import sensor_tick


@pytest.fixture
def sqs_client(s3_endpoint):
    import boto3

    return boto3.client(
        "sqs",
        endpoint_url=s3_endpoint,
        aws_access_key_id=FAKE_ACCESS_KEY,
        aws_secret_access_key=FAKE_SECRET_KEY,
        region_name=REGION,
    )


def _write_trial(fs, root: str, run: str, trial: str) -> None:
    fs.pipe(
        {
            f"{root}/{run}/trace_jobs/{trial}/result.json": result_json(trial),
            f"{root}/{run}/trace_jobs/{trial}/agent/trajectory.json": GOOD,
        }
    )


def _in_queue(sqs_client, queue_url: str) -> int:
    names = ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]
    counts = sqs_client.get_queue_attributes(QueueUrl=queue_url, AttributeNames=names)["Attributes"]
    return sum(int(counts[name]) for name in names)


def test_queue_ticks_list_only_touched_runs(tmp_path, s3_endpoint, s3_admin_client, sqs_client, fault_proxy):
    bucket = f"queue-{uuid.uuid4().hex[:12]}"
    s3_admin_client.create_bucket(Bucket=bucket)
    queue_url = sqs_client.create_queue(QueueName=f"events-{uuid.uuid4().hex[:12]}")["QueueUrl"]
    arn = sqs_client.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    s3_admin_client.put_bucket_notification_configuration(
        Bucket=bucket,
        NotificationConfiguration={
            "QueueConfigurations": [{"QueueArn": arn, "Events": ["s3:ObjectCreated:*", "s3:ObjectRemoved:*"]}]
        },
    )
    root = f"s3://{bucket}/sweeps/lr-3e4"
    fs = make_s3fs(s3_endpoint)
    for run in ("run-a", "run-b"):
        _write_trial(fs, root, run, "task__1")
    storage = ObjectStorage(endpoint_url=fault_proxy.url, region_name=REGION, max_attempts=1)
    config = config_from_env(
        {},
        traces_root=root,
        publish_root=str(tmp_path / "published"),
        staging_root=str(tmp_path / "staging"),
        settle_seconds=0,
        event_queue_url=queue_url,
        object_storage=storage,
    )
    defs = build_definitions(config)

    with dg.instance_for_test() as instance:
        first = sensor_tick(defs, instance, None)  # no cursor: the whole root, as without a queue
        assert sorted(r.partition_key for r in first.run_requests) == ["run-a", "run-b"]
        assert {r.tags[SWEEP_TAG] for r in first.run_requests} == {"lr-3e4"}
        assert _in_queue(sqs_client, queue_url) == 5  # moto's s3:TestEvent and the four PUTs, unread

        drained = sensor_tick(defs, instance, first.cursor)  # the uploads' events: both runs, unchanged
        assert drained.run_requests == [] and len(cursor_extra(drained.cursor)["acks"]) == 5

        # run-a's listing would now fail: a tick that lists it is seen in faults_injected
        fault_proxy.add_fault(Fault.INTERNAL_ERROR, query_contains="run-a%2Ftrace_jobs%2F&encoding-type")
        _write_trial(fs, root, "run-b", "task__2")
        fault_proxy.reset_stats()
        touched = sensor_tick(defs, instance, drained.cursor)
        assert [r.partition_key for r in touched.run_requests] == ["run-b"]
        assert touched.run_requests[0].tags[SWEEP_TAG] == "lr-3e4"
        assert fault_proxy.stats["faults_injected"] == 0 and fault_proxy.stats["list"] <= 2
        # drained's messages were deleted at this tick's start; this tick's wait for the next one
        assert _in_queue(sqs_client, queue_url) == 2

        hostile = [
            "{not json",
            json.dumps({"Records": [{"s3": {"bucket": {"name": "elsewhere"}, "object": {"key": "k"}}}]}),
        ]
        for body in hostile:
            sqs_client.send_message(QueueUrl=queue_url, MessageBody=body)
        quiet = sensor_tick(defs, instance, touched.cursor)
        assert quiet.run_requests == [] and fault_proxy.stats["faults_injected"] == 0
        assert "queue messages ignored: 1 malformed_json, 1 other_bucket" in quiet.skip_reason.skip_message
        assert _in_queue(sqs_client, queue_url) == 2  # the hostile ones, deleted by the next tick like any other
        assert sensor_tick(defs, instance, quiet.cursor).run_requests == [] and _in_queue(sqs_client, queue_url) == 0
