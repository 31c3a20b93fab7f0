"""S3 requests and wall time per sensor tick for a sweep: 39 runs x 5 steps + 5 growing steps = 200 scopes.

    .venv/bin/python benchmarks/bench_sensor.py [--runs 39] [--steps 5] [--growing 5] [--ticks 10] [--json out.json]

A moto S3 server behind the counting FaultProxy (`trace_assets_tests/support/fault_proxy.py`);
each tick is `discovery.plan_tick` over a real `TraceStore`, as the sensor runs it (no Dagster:
the published-materialization lookup is a database read, not an S3 request). Tick 1 sees the
whole finished sweep for the first time (every scope listed once and requested; moto stamps objects
with the time of upload, so this tick runs with settle 0, as for a sweep written long ago); then a
new step starts in `--growing` runs, and each steady tick writes one object into each of them. The steady ticks include the settled
runs' step-folder re-checks (a request a run every 5-10 min). A re-check tick (the clock past the
first back-off) lists every settled scope again; spread over that back-off (an hour, doubling to a
week, at a 60 s interval) it is the amortised scope re-check cost per tick.
Target: steady requests per tick <= ceil(scopes / 1000) + the growing scopes' own listings
(+ their runs' step listings) + the amortised re-checks.

Then queue mode on the same sweep: the bucket's S3 event notifications go to an SQS queue on the
same moto server, and `--ticks` more ticks (the growing steps written to as before) run
`discovery.plan_queue_tick` over the scopes the events touched; S3 requests counted through the
proxy as above, SQS requests (receives and deletes, on moto directly) counted apart. A last queue
tick, with no event, runs past the first back-off: the scopes due have their publish and export
runs read again (to retry a failed export) without a listing.

Every tick also counts its instance reads (a scope's newest export run and publish: database reads
in the sensor, not S3 requests; here every export requested is published by the next tick, as a
run that succeeds, and none fails).
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
import uuid
from pathlib import Path

import boto3

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from trace_assets.core.scope import RunScope
from trace_assets.store.event_queue import EventQueue
from trace_assets.store.objects import ObjectBatch
from trace_assets.store.queue_events import read_messages
from trace_assets.store.trace_store import TraceStore
from trace_assets.sweep.discovery import (
    BACKOFF_START,
    TickSources,
    listing_fingerprint,
    plan_queue_tick,
    plan_tick,
)
from trace_assets.sweep.scope_state import ScopeFacts, ScopeState
from trace_assets_tests.support.fault_proxy import FaultProxy

INTERVAL = 60.0
SETTLE = 600.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=39)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--growing", type=int, default=5)
    parser.add_argument("--trials", type=int, default=3, help="trial folders per scope")
    parser.add_argument("--ticks", type=int, default=9, help="steady ticks, 60 s apart (under the settle period)")
    parser.add_argument("--json")
    parser.add_argument("--fingerprint-only", action="store_true", help="only the fingerprint's cost")
    args = parser.parse_args()
    if args.fingerprint_only:
        print(json.dumps(_fingerprint_cost(), indent=2))
        return

    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    creds = {"aws_access_key_id": "testing", "aws_secret_access_key": "testing", "region_name": "us-east-1"}
    s3 = boto3.client("s3", endpoint_url=endpoint, **creds)
    bucket = f"sweep-{uuid.uuid4().hex[:8]}"
    s3.create_bucket(Bucket=bucket)
    scopes = [f"run-{r:03d}/step-{s}" for r in range(args.runs) for s in range(1, args.steps + 1)]
    for key in scopes:
        scope = RunScope.from_key(key)
        for t in range(args.trials):
            for name in ("result.json", "agent/trajectory.json"):
                s3.put_object(Bucket=bucket, Key=f"traces/{scope.source_prefix}/task-{t}__x/{name}", Body=b"{}")
    growing = [f"run-{i * args.runs // args.growing:03d}/step-{args.steps + 1}" for i in range(args.growing)]

    results: dict[str, object] = {"scopes": len(scopes) + len(growing), "growing": len(growing)}
    with FaultProxy(endpoint) as proxy:
        options = {"endpoint_url": proxy.url, "key": "testing", "secret": "testing", "skip_instance_cache": True}
        store = TraceStore(f"s3://{bucket}/traces", options)
        reads: list[str] = []
        published: dict[str, float] = {}
        sources = scope_sources(store, reads, published)

        def tick(cursor: str | None, now: float, settle: float = SETTLE) -> tuple[object, int, float]:
            proxy.reset_stats()
            reads.clear()
            started = time.perf_counter()
            plan = plan_tick(
                cursor,
                store.run_folders(),
                sources,
                [],
                now,
                settle=settle,
            )
            published.update({key: now + 1 for key, _ in plan.requests})  # its run succeeds
            return plan, proxy.stats["requests"], time.perf_counter() - started

        start = time.time()
        plan, first_requests, first_time = tick(None, start, settle=0)
        results["first_tick"] = {
            "requests": first_requests,
            "seconds": round(first_time, 3),
            "requested": len(plan.requests),
            "instance_reads": len(reads),
        }  # type: ignore[attr-defined]
        cursor = plan.cursor  # type: ignore[attr-defined]
        steady_requests, steady_times, steady_reads = [], [], []
        for n in range(args.ticks):
            for key in growing:
                s3.put_object(
                    Bucket=bucket, Key=f"traces/{RunScope.from_key(key).source_prefix}/late-{n}__x/trial.log", Body=b"x"
                )
            plan, requests, seconds = tick(cursor, start + (n + 1) * INTERVAL)  # the clock a tick apart
            cursor = plan.cursor  # type: ignore[attr-defined]
            steady_requests.append(requests)
            steady_times.append(seconds)
            steady_reads.append(len(reads))
        results["steady_ticks"] = {
            "requests_per_tick": statistics.mean(steady_requests),
            "max_requests": max(steady_requests),
            "mean_seconds": round(statistics.mean(steady_times), 3),
            "instance_reads_per_tick": statistics.mean(steady_reads),
        }
        plan, recheck_requests, recheck_time = tick(cursor, start + BACKOFF_START + 1)
        results["recheck_tick"] = {
            "requests": recheck_requests,
            "seconds": round(recheck_time, 3),
            "instance_reads": len(reads),
        }
        amortised = recheck_requests / (BACKOFF_START / INTERVAL)
        target = math.ceil((len(scopes) + len(growing)) / 1000) + 2 * len(growing) + amortised
        results["amortised_recheck_per_tick"] = round(amortised, 2)
        results["target_per_tick"] = round(target, 2)
        results["within_target"] = results["steady_ticks"]["requests_per_tick"] + amortised <= target  # type: ignore[index]
        results["queue_ticks"] = _queue_ticks(args, endpoint, creds, s3, bucket, growing, store, proxy, cursor, start)
    server.stop()
    results["fingerprint"] = _fingerprint_cost()
    print(json.dumps(results, indent=2))
    if args.json:
        with open(args.json, "w") as out:
            json.dump(results, out, indent=2)


def _fingerprint_cost(objects: int = 154_311, repeats: int = 5) -> dict[str, object]:
    """Seconds to fingerprint one listing with change tokens and without, and their ratio."""

    def pages(tokens: bool) -> list[ObjectBatch]:
        keys = [f"task-{i // 7:06d}__x/agent/episode-{i % 7}/response.txt" for i in range(objects)]
        etags = [f"{1_000_000 + i}:{1_700_000_000_000_000_000 + i}" if tokens else None for i in range(objects)]
        return [
            ObjectBatch(
                keys[at : at + 1000],
                [1234] * len(keys[at : at + 1000]),
                etags[at : at + 1000],
                [1] * len(keys[at : at + 1000]),
            )
            for at in range(0, objects, 1000)
        ]

    listings = {"with_tokens": pages(True), "without_tokens": pages(False)}
    best = {name: float("inf") for name in listings}
    for _ in range(repeats):
        for name, listing in listings.items():
            started = time.perf_counter()
            listing_fingerprint(listing)
            best[name] = min(best[name], time.perf_counter() - started)
    return {
        "objects": objects,
        **{f"{name}_seconds": round(seconds, 4) for name, seconds in best.items()},
        "ratio": round(best["with_tokens"] / best["without_tokens"], 2),
    }


def scope_sources(store: TraceStore, reads: list[str], published: dict[str, float]) -> TickSources:
    """The sensor's reads over the bucket; a scope is published when `published` says so (each tick
    adds the scopes it requested), no export fails. `reads` collects the scopes whose facts the tick
    read (the sensor's instance reads)."""

    def facts(key: str) -> ScopeFacts:
        reads.append(key)
        at = published.get(key)
        return ScopeFacts(None if at is None else ScopeState.PUBLISHED, "", at)

    return TickSources(
        lambda run: [s.key for s in store.scopes(run)], lambda key: store.iter_run(RunScope.from_key(key)), facts
    )


def _queue_ticks(args, endpoint, creds, s3, bucket, growing, store, proxy, cursor, start) -> dict[str, object]:
    """Queue mode's steady ticks from the full mode's last cursor, then one past the first back-off
    with no event: S3 requests, SQS requests and instance reads per tick."""
    sqs = boto3.client("sqs", endpoint_url=endpoint, **creds)
    queue_url = sqs.create_queue(QueueName=f"events-{uuid.uuid4().hex[:8]}")["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    s3.put_bucket_notification_configuration(
        Bucket=bucket,
        NotificationConfiguration={"QueueConfigurations": [{"QueueArn": arn, "Events": ["s3:ObjectCreated:*"]}]},
    )
    queue = EventQueue(queue_url, creds, {})  # the sensor's own client, its SQS calls counted
    calls: list[str] = []
    queue.client.meta.events.register("before-call.sqs", lambda event_name, **_: calls.append(event_name))
    reads: list[str] = []
    published: dict[str, float] = {}
    sources = scope_sources(store, reads, published)

    def tick(cursor: str, now: float) -> tuple[str, dict[str, float]]:
        proxy.reset_stats()
        calls.clear()
        reads.clear()
        started = time.perf_counter()
        bodies, handles = queue.receive(visibility_seconds=300)
        plan = plan_queue_tick(
            cursor, read_messages(bodies, bucket, "traces/").touches, sources, [], now, settle=SETTLE
        )
        assert queue.delete(handles) == []  # the sensor deletes them at the next tick's start
        published.update({key: now + 1 for key, _ in plan.requests})  # its run succeeds
        seconds = time.perf_counter() - started
        return plan.cursor, {
            "s3": proxy.stats["requests"],
            "sqs": len(calls),
            "reads": len(reads),
            "seconds": seconds,
        }

    ticks = []
    for n in range(args.ticks):
        for key in growing:
            s3.put_object(
                Bucket=bucket, Key=f"traces/{RunScope.from_key(key).source_prefix}/queued-{n}__x/trial.log", Body=b"x"
            )
        cursor, counts = tick(cursor, start + (args.ticks + n + 1) * INTERVAL)
        ticks.append(counts)
    cursor, due = tick(cursor, start + BACKOFF_START + 1)
    return {
        "s3_requests_per_tick": statistics.mean(t["s3"] for t in ticks),
        "max_s3_requests": max(t["s3"] for t in ticks),
        "sqs_requests_per_tick": statistics.mean(t["sqs"] for t in ticks),
        "instance_reads_per_tick": statistics.mean(t["reads"] for t in ticks),
        "mean_seconds": round(statistics.mean(t["seconds"] for t in ticks), 3),
        "recheck_tick": {
            "s3_requests": due["s3"],
            "sqs_requests": due["sqs"],
            "instance_reads": due["reads"],
            "seconds": round(due["seconds"], 3),
        },
    }


if __name__ == "__main__":
    main()
