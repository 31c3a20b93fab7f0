"""S3 event notifications (as SQS message bodies) turned into the scopes they touch.

A bucket that sends its ObjectCreated/ObjectRemoved events to an SQS queue tells the sensor what
changed, so a tick lists only those scopes instead of the whole traces root. Message bodies are
hostile input: each one that touches no scope gets a named reason (`NoTouch`) and a short detail,
never an exception. Bodies are S3's own (`{"Records": [...]}`), S3's `s3:TestEvent` (sent once
when a notification is configured), or either wrapped in an SNS notification (`"Message"` holds
the S3 body as a string). Keys in records are URL-encoded with `+` for spaces.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any
from urllib.parse import unquote_plus, urlsplit

from trace_assets.core.scope import STEP_FOLDER, TRACE_JOBS, InvalidScopeKey, validate_scope_key

DETAIL_CHARS = 120  # a hostile body's detail is cut to this
MESSAGES_PER_TICK = 100  # the rest wait for the next tick; bounds the cursor's receipt handles


class NoTouch(StrEnum):
    """Why a message, or one record in it, touches no scope."""

    MALFORMED_JSON = "malformed_json"  # the body (or an SNS wrapper's Message) is not JSON
    TEST_EVENT = "test_event"  # S3's s3:TestEvent, sent when the notification is configured
    NOT_AN_S3_EVENT = "not_an_s3_event"  # JSON of another shape, or a record without bucket and key
    OTHER_BUCKET = "other_bucket"  # a record for a bucket other than the traces root's
    OUTSIDE_ROOT = "outside_root"  # a key outside the traces root's prefix
    NOT_IN_TRACE_JOBS = "not_in_trace_jobs"  # a key under the root but not in a run's trace_jobs/
    INVALID_RUN_ID = "invalid_run_id"  # the run folder's name cannot be a partition key


@dataclass(frozen=True, order=True)
class Touch:
    """A run, and the step folder under its trace_jobs/ the object lies in (None: not in one)."""

    run_id: str
    step: str | None


@dataclass
class QueueReading:
    """What a batch of messages says: the touched runs and steps, and why the rest touch nothing."""

    touches: set[Touch] = field(default_factory=set)
    ignored: list[tuple[NoTouch, str]] = field(default_factory=list)  # (reason, detail)

    def reasons(self) -> dict[str, int]:
        """How many messages or records were ignored, by reason."""
        counts: dict[str, int] = {}
        for reason, _ in self.ignored:
            counts[reason.value] = counts.get(reason.value, 0) + 1
        return counts


def bucket_and_prefix(traces_root: str) -> tuple[str, str]:
    """`s3://bucket/some/prefix` as ("bucket", "some/prefix/"); the prefix is "" for a bucket root."""
    parts = urlsplit(traces_root)
    if parts.scheme not in ("s3", "s3a") or not parts.netloc:
        raise ValueError(f"the event queue needs an s3:// traces root, not {traces_root!r}")
    prefix = parts.path.strip("/")
    return parts.netloc, f"{prefix}/" if prefix else ""


def read_messages(bodies: Iterable[str], bucket: str, prefix: str) -> QueueReading:
    """The scopes a batch of message bodies touch under `s3://bucket/prefix`."""
    reading = QueueReading()
    for body in bodies:
        _read_body(body, bucket, prefix, reading, wrapped=False)
    return reading


def _cut(text: Any) -> str:
    shown = repr(text)
    return shown if len(shown) <= DETAIL_CHARS else shown[:DETAIL_CHARS] + "..."


def _read_body(body: Any, bucket: str, prefix: str, reading: QueueReading, wrapped: bool) -> None:
    try:
        message = json.loads(body)
    except (TypeError, ValueError, RecursionError):
        reading.ignored.append((NoTouch.MALFORMED_JSON, _cut(body)))
        return
    if not isinstance(message, dict):
        reading.ignored.append((NoTouch.NOT_AN_S3_EVENT, _cut(message)))
        return
    if message.get("Event") == "s3:TestEvent":
        reading.ignored.append((NoTouch.TEST_EVENT, _cut(message.get("Bucket"))))
        return
    if not wrapped and message.get("Type") == "Notification" and isinstance(message.get("Message"), str):
        _read_body(message["Message"], bucket, prefix, reading, wrapped=True)  # SNS fan-out to SQS
        return
    records = message.get("Records")
    if not isinstance(records, list) or not records:
        reading.ignored.append((NoTouch.NOT_AN_S3_EVENT, _cut(body)))
        return
    for record in records:
        _read_record(record, bucket, prefix, reading)


def _read_record(record: Any, bucket: str, prefix: str, reading: QueueReading) -> None:
    s3 = record.get("s3") if isinstance(record, dict) else None
    record_bucket = (
        s3.get("bucket", {}).get("name") if isinstance(s3, dict) and isinstance(s3.get("bucket"), dict) else None
    )
    encoded_key = (
        s3.get("object", {}).get("key") if isinstance(s3, dict) and isinstance(s3.get("object"), dict) else None
    )
    if not isinstance(record_bucket, str) or not isinstance(encoded_key, str):
        reading.ignored.append((NoTouch.NOT_AN_S3_EVENT, _cut(record)))
        return
    if record_bucket != bucket:
        reading.ignored.append((NoTouch.OTHER_BUCKET, _cut(record_bucket)))
        return
    key = unquote_plus(encoded_key)
    if not key.startswith(prefix):
        reading.ignored.append((NoTouch.OUTSIDE_ROOT, _cut(key)))
        return
    segments = key[len(prefix) :].split("/")
    if len(segments) < 3 or segments[1] != TRACE_JOBS:  # run/trace_jobs/<something>
        reading.ignored.append((NoTouch.NOT_IN_TRACE_JOBS, _cut(key)))
        return
    run_id = segments[0]
    try:
        validate_scope_key(run_id)
    except InvalidScopeKey as error:
        reading.ignored.append((NoTouch.INVALID_RUN_ID, _cut(str(error))))
        return
    in_step = len(segments) > 3 and STEP_FOLDER.fullmatch(segments[2]) is not None
    reading.touches.add(Touch(run_id, segments[2] if in_step else None))
