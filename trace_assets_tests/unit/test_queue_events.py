"""S3 event notifications as SQS bodies: the scopes they touch, and a named reason for the rest."""

from __future__ import annotations

import json

import pytest

from trace_assets.store.queue_events import NoTouch, Touch, bucket_and_prefix, read_messages


def _event(key: str, bucket: str = "traces-bucket", name: str = "ObjectCreated:Put") -> str:
    record = {"eventSource": "aws:s3", "eventName": name, "s3": {"bucket": {"name": bucket}, "object": {"key": key}}}
    return json.dumps({"Records": [record]})


def test_keys_are_url_decoded_and_mapped_to_runs_and_steps():
    reading = read_messages(
        [
            _event("sweeps%2Flr%2Frun-1%2Ftrace_jobs%2Fstep-3%2Ftask+one__x%2Fresult.json"),
            _event("sweeps/lr/run-1/trace_jobs/step-3/task__y/agent/trajectory.json", name="ObjectRemoved:Delete"),
            _event("sweeps/lr/run-2/trace_jobs/task__z/result.json"),
            _event("sweeps/lr/run-3/trace_jobs/step-9"),  # an object named like a step folder: not in one
        ],
        "traces-bucket",
        "sweeps/lr/",
    )
    assert reading.touches == {Touch("run-1", "step-3"), Touch("run-2", None), Touch("run-3", None)}
    assert reading.ignored == []


def test_sns_wrapped_bodies_are_unwrapped_once():
    wrapped = json.dumps(
        {"Type": "Notification", "TopicArn": "arn:aws:sns:x", "Message": _event("run-1/trace_jobs/a/b")}
    )
    twice = json.dumps({"Type": "Notification", "Message": wrapped})
    reading = read_messages([wrapped, twice], "traces-bucket", "")
    assert reading.touches == {Touch("run-1", None)}
    assert [reason for reason, _ in reading.ignored] == [NoTouch.NOT_AN_S3_EVENT]


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ("{not json", NoTouch.MALFORMED_JSON),
        ("\udcff", NoTouch.MALFORMED_JSON),
        (json.dumps({"Type": "Notification", "Message": "{cut"}), NoTouch.MALFORMED_JSON),
        (json.dumps({"Service": "Amazon S3", "Event": "s3:TestEvent", "Bucket": "traces-bucket"}), NoTouch.TEST_EVENT),
        ("[1, 2]", NoTouch.NOT_AN_S3_EVENT),
        (json.dumps({"Records": "all"}), NoTouch.NOT_AN_S3_EVENT),
        (json.dumps({"Records": [{"s3": {"bucket": "x"}}]}), NoTouch.NOT_AN_S3_EVENT),
        (json.dumps({"Records": [17]}), NoTouch.NOT_AN_S3_EVENT),
        (_event("traces/run-1/trace_jobs/a/b", bucket="elsewhere"), NoTouch.OTHER_BUCKET),
        (_event("other/run-1/trace_jobs/a/b"), NoTouch.OUTSIDE_ROOT),
        (_event("traces/run-1/notes.txt"), NoTouch.NOT_IN_TRACE_JOBS),
        (_event("traces/run-1/trace_jobs"), NoTouch.NOT_IN_TRACE_JOBS),
        (_event("traces/run+1/trace_jobs/a/b"), NoTouch.INVALID_RUN_ID),  # '+' is a space: 'run 1'
        (_event("traces/.hidden/trace_jobs/a/b"), NoTouch.INVALID_RUN_ID),
        (_event("traces/README.md/trace_jobs/a/b"), NoTouch.INVALID_RUN_ID),
    ],
)
def test_each_message_that_touches_nothing_says_why(body, reason):
    reading = read_messages([body, _event("traces/run-ok/trace_jobs/t/result.json")], "traces-bucket", "traces/")
    assert reading.touches == {Touch("run-ok", None)}
    assert [r for r, _ in reading.ignored] == [reason]
    assert reading.reasons() == {reason.value: 1}


def test_deeply_nested_or_huge_bodies_are_named_and_cut():
    deep = "[" * 100_000 + "]" * 100_000
    reading = read_messages([deep, "x" * 1_000_000], "traces-bucket", "")
    assert [reason for reason, _ in reading.ignored] == [NoTouch.MALFORMED_JSON, NoTouch.MALFORMED_JSON]
    assert all(len(detail) < 200 for _, detail in reading.ignored)


def test_the_queue_needs_an_s3_root():
    assert bucket_and_prefix("s3://bucket/sweeps/lr/") == ("bucket", "sweeps/lr/")
    assert bucket_and_prefix("s3://bucket") == ("bucket", "")
    with pytest.raises(ValueError, match="s3:// traces root"):
        bucket_and_prefix("/data/traces")
