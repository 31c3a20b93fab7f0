"""The SQS queue S3 sends its events to: receive and delete, with boto3. Its own module, so that
neither the tick planner (`queue_events`) nor the code location loads boto3 unless a queue is read."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import boto3
from botocore.config import Config

from trace_assets.store.queue_events import MESSAGES_PER_TICK


class EventQueue:
    """The SQS queue S3 sends its events to, on the queue URL's own host, with the object store's
    session settings (profile, credentials, region) and client settings (TLS, retries)."""

    def __init__(self, url: str, session: dict[str, Any], client: dict[str, Any], max_attempts: int = 8) -> None:
        parts = urlsplit(url)
        host = parts.hostname or ""
        session = dict(session)
        if "region_name" not in session and host.startswith("sqs.") and host.endswith(".amazonaws.com"):
            session["region_name"] = host.split(".")[1]
        self.url = url
        self.client = boto3.Session(**session).client(
            "sqs",
            endpoint_url=f"{parts.scheme}://{parts.netloc}",
            config=Config(retries={"max_attempts": max_attempts, "mode": "standard"}),
            **client,
        )

    def receive(self, visibility_seconds: int) -> tuple[list[str], list[str]]:
        """Up to MESSAGES_PER_TICK messages' bodies and receipt handles, without waiting."""
        bodies: list[str] = []
        handles: list[str] = []
        while len(bodies) < MESSAGES_PER_TICK:
            messages = self.client.receive_message(
                QueueUrl=self.url,
                MaxNumberOfMessages=min(10, MESSAGES_PER_TICK - len(bodies)),
                VisibilityTimeout=visibility_seconds,
                WaitTimeSeconds=0,
            ).get("Messages", [])
            bodies += [message.get("Body", "") for message in messages]
            handles += [message["ReceiptHandle"] for message in messages]
            if not messages:
                break
        return bodies, handles

    def delete(self, handles: list[str]) -> list[str]:
        """Delete messages a committed tick acted on; returns what failed, as log lines (a failure
        only means those messages are read again: delivery is at least once)."""
        failures = []
        for start in range(0, len(handles), 10):
            chunk = handles[start : start + 10]
            entries = [{"Id": str(i), "ReceiptHandle": handle} for i, handle in enumerate(chunk)]
            try:
                failed = self.client.delete_message_batch(QueueUrl=self.url, Entries=entries).get("Failed", [])
            except Exception as err:
                failures.append(f"could not delete {len(chunk)} queue message(s), they will be read again: {err}")
                continue
            if failed:
                failures.append(
                    f"could not delete {len(failed)} queue message(s), they will be read again: {failed[0]}"
                )
        return failures
