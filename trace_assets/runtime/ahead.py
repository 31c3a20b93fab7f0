"""Working on the next batches in threads while the current one is used, answers in order.

The steps read a run in batches. Fetching a batch's objects leaves the CPU idle for a round trip;
the secret scan's finders spend their time in polars, which releases the GIL. Either is worth
running ahead in a worker thread while the caller's thread parses, tallies or writes the batch
before. At most `ahead` + 1 batches' results are held at once, which is why the store shrinks each
fetch's byte budget by that factor (`TraceStore.fetch_batch_bytes`).
"""

from __future__ import annotations

import os
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from itertools import islice
from queue import Full, Queue
from typing import Any, TypeVar

Batch = TypeVar("Batch")
Result = TypeVar("Result")


def available_cores() -> int:
    """The cores this process may run on (a container's or `taskset`'s share, not the machine's)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def threads_for(items: int, batch_items: int, workers: int) -> int:
    """`workers`, or 1 when the `items` fit one batch of `batch_items`: one batch has nothing to
    overlap with (handing a one-trial scope's one batch to a thread cost its scan about 35 ms of
    CPU, docs/benchmarks.md)."""
    return workers if items > batch_items else 1


def mapped_ahead(
    batches: Iterable[Batch], work: Callable[[Batch], Result], ahead: int, workers: int = 1
) -> Iterator[tuple[Batch, Result]]:
    """Each batch with what `work` returned for it, in order, up to `ahead` of them worked on early
    by `workers` threads.

    `batches` is consumed in the caller's thread (only `work` runs in the workers); an exception
    of `work` is raised where its batch would have been yielded.
    """
    if ahead < 1:
        for batch in batches:
            yield batch, work(batch)
        return
    source = iter(batches)
    with ThreadPoolExecutor(max_workers=max(1, min(workers, ahead)), thread_name_prefix="ahead") as pool:
        pending: deque[tuple[Batch, Future[Result]]] = deque(
            (batch, pool.submit(work, batch)) for batch in islice(source, ahead)
        )
        try:
            while pending:
                batch, future = pending.popleft()
                result = future.result()  # before the next batch starts: held results stay <= ahead + 1
                for following in islice(source, 1):
                    pending.append((following, pool.submit(work, following)))
                yield batch, result
                del batch, future, result
        finally:
            for _, future in pending:
                future.cancel()


_END = object()
_POLL_SECONDS = 0.1  # how soon the worker notices a consumer that stopped early


def produced_ahead(items: Iterable[Batch], ahead: int) -> Iterator[Batch]:
    """The items of `items`, in order, produced by a worker thread up to `ahead` items early: for a
    paged listing, whose next page is requested only once the last one is used. An exception of
    `items` is raised where its item would have been; a consumer that stops early stops the worker
    at its next item."""
    queue: Queue[tuple[Any, BaseException | None]] = Queue(maxsize=max(1, ahead))
    stopped = threading.Event()

    def offer(entry: tuple[Any, BaseException | None]) -> bool:
        while not stopped.is_set():
            try:
                queue.put(entry, timeout=_POLL_SECONDS)
                return True
            except Full:
                continue
        return False

    def produce() -> None:
        try:
            for item in items:
                if not offer((item, None)):
                    return
            offer((_END, None))
        except BaseException as error:  # handed to the consumer, raised there
            offer((_END, error))

    worker = threading.Thread(target=produce, name="ahead-producer", daemon=True)
    worker.start()
    try:
        while True:
            item, error = queue.get()  # the worker always ends with _END unless this side stopped it
            if item is _END:
                if error is not None:
                    raise error
                return
            yield item
    finally:
        stopped.set()
        worker.join()
