"""Writing batches in a thread, in order, while the caller makes the next ones.

Writing Parquet or files spends its time with the GIL released (encoding, compressing, kernel
time), so the caller's thread can meanwhile parse, encode or redact the batches after. At most
`depth` writes are submitted and not yet done, which bounds the batches held for writing.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor


class WritesBehind:
    """Runs each `submit`ted write, in order: in one thread when `threaded` (`submit` waits while
    `depth` are submitted and not done), else at once in the caller's thread.

    A write's error is raised in the caller by the next `submit`, or on leaving the `with` block
    (unless the caller's own error is leaving it); the writes queued after it are dropped, so the
    caller never waits on them. Leaving the block waits for the thread: nothing writes after it,
    so the caller may then close or discard what the writes went to.
    """

    def __init__(self, depth: int, threaded: bool = True, name: str = "writes-behind") -> None:
        self._depth = depth
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix=name) if threaded else None
        self._pending: deque[Future[None]] = deque()  # submitted, oldest first
        self._failure: BaseException | None = None

    def __enter__(self) -> WritesBehind:
        return self

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> None:
        if self._thread is not None:
            self._thread.shutdown(wait=True, cancel_futures=kind is not None)  # a failed caller's output is dropped
            self._pending.clear()
        if kind is None:  # else the caller's error goes on: it came first, or it is this one already raised
            self._raise_failure()

    def submit(self, write: Callable[[], None]) -> None:
        self._raise_failure()
        if self._thread is None:
            write()
            return
        while len(self._pending) >= self._depth:
            self._pending.popleft().result()
            self._raise_failure()
        self._pending.append(self._thread.submit(self._run, write))

    def _run(self, write: Callable[[], None]) -> None:
        if self._failure is None:  # else dropped: the caller is told of the first failure only
            try:
                write()
            except BaseException as err:  # raised in the caller's thread, by its next submit or at exit
                self._failure = err

    def _raise_failure(self) -> None:
        if self._failure is not None:
            raise self._failure
