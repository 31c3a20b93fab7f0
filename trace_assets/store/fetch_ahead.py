"""Fetching the next batch while the current one is parsed, so request latency hides behind work.

The steps read a run in batches: fetch a batch's objects, parse them, write. Done in turn, every
batch waits a round trip (or several) with the CPU idle; with `ahead` batches fetched in a worker
thread, the requests for batch N+1 are in flight while batch N is parsed. At most `ahead` + 1
batches of fetched bytes are held at once, which is why the store shrinks each batch's byte
budget by that factor (`TraceStore.fetch_batch_bytes`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from itertools import islice
from typing import TypeVar

Batch = TypeVar("Batch")
Fetched = TypeVar("Fetched")


def fetched_ahead(
    batches: Iterable[Batch], fetch: Callable[[Batch], Fetched], ahead: int
) -> Iterator[tuple[Batch, Fetched]]:
    """Each batch with what `fetch` returned for it, in order, up to `ahead` fetches running early.

    `batches` is consumed in the caller's thread (only `fetch` runs in the worker); a fetch's
    exception is raised where its batch would have been yielded.
    """
    if ahead < 1:
        for batch in batches:
            yield batch, fetch(batch)
        return
    source = iter(batches)
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="fetch-ahead") as worker:
        pending: deque[tuple[Batch, Future[Fetched]]] = deque(
            (batch, worker.submit(fetch, batch)) for batch in islice(source, ahead)
        )
        try:
            while pending:
                batch, future = pending.popleft()
                fetched = future.result()  # before the next fetch starts: held batches stay <= ahead + 1
                for following in islice(source, 1):
                    pending.append((following, worker.submit(fetch, following)))
                yield batch, fetched
                del batch, future, fetched
        finally:
            for _, future in pending:
                future.cancel()
