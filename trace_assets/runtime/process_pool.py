"""Run a plain function over many jobs in worker processes, on every core, answers in order.

Each worker is this file run by the same interpreter (`python -I workers.py`), given the
parent's `sys.path`, and imports only the module of the function it is asked to run. Unlike
multiprocessing's spawn and forkserver it never re-imports the parent's main module (the CLI,
Dagster), so it starts in tens of milliseconds; unlike fork it inherits no threads. Requests
and answers are pickles over the worker's stdin and stdout.

Only the standard library here: it is what a worker starts with.
"""

from __future__ import annotations

import fcntl
import importlib
import pickle
import queue
import subprocess
import sys
import threading
import traceback
from collections import deque
from collections.abc import Callable, Generator, Iterable
from typing import Any, TypeVar

Context = TypeVar("Context")


class WorkerError(RuntimeError):
    """A job raised in a worker, or a worker died; carries the worker's traceback."""


class _Worker:
    """One worker process, with a thread feeding its requests and one draining its answers.

    Neither side ever blocks the other: the parent goes on while large requests are written,
    and the worker goes on while its answers wait to be read.
    """

    def __init__(self) -> None:
        self.process = subprocess.Popen([sys.executable, "-I", __file__], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        assert self.process.stdin is not None and self.process.stdout is not None, "both are pipes"
        self._stdin, self._stdout = self.process.stdin, self.process.stdout
        for pipe in (self._stdin, self._stdout):
            _widen(pipe.fileno())
        self._requests: queue.SimpleQueue = queue.SimpleQueue()
        self._answers: queue.SimpleQueue = queue.SimpleQueue()
        self._threads = [
            threading.Thread(target=self._write, daemon=True),
            threading.Thread(target=self._read, daemon=True),
        ]
        self.submit(sys.path)
        for thread in self._threads:
            thread.start()

    def submit(self, request: Any) -> None:
        self._requests.put(request)

    def answer(self) -> Any:
        answer = self._answers.get()
        if answer is None:
            raise WorkerError(f"worker process exited with status {self.process.wait()}")
        status, value = answer
        if status != "ok":
            raise WorkerError(value)
        return value

    def close(self, kill: bool) -> None:
        self._requests.put(None)
        if kill:
            self.process.kill()
        self.process.wait()
        for thread in self._threads:
            thread.join()
        self._stdout.close()

    def _write(self) -> None:
        try:
            while (request := self._requests.get()) is not None:
                pickle.dump(request, self._stdin, protocol=pickle.HIGHEST_PROTOCOL)
                self._stdin.flush()
        except OSError:  # the worker died or was killed; the reader reports it
            pass
        try:
            self._stdin.close()
        except OSError:  # what was still buffered for a dead worker
            pass

    def _read(self) -> None:
        while True:
            try:
                self._answers.put(pickle.load(self._stdout))
            except (EOFError, OSError, ValueError):  # the worker exited, or was killed
                self._answers.put(None)
                return


PIPE_BYTES = 2**20  # Linux's default 64 KiB pipes cost a context switch per 64 KiB of a large job


def _widen(fd: int) -> None:
    """A larger pipe buffer where the system allows one (Linux); the default elsewhere."""
    try:
        fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, PIPE_BYTES)
    except (AttributeError, OSError):  # not Linux, or above the system's pipe-max-size
        pass


def ordered_map(
    function: Callable[..., Any],
    jobs: Iterable[tuple[Context, tuple]],
    workers: int,
    ahead: int = 2,
) -> Generator[tuple[Context, Any]]:
    """`(context, function(*args))` for each `(context, args)` job, in the jobs' order.

    `function` must be a module-level function whose module imports cheaply. Jobs are drawn
    lazily, at most `ahead` per worker beyond the one being answered, so the caller's memory
    holds a few jobs whatever their number. With fewer than two workers, runs in this process.
    """
    if workers < 2:
        for context, args in jobs:
            yield context, function(*args)
        return
    if "<" in function.__qualname__:
        raise ValueError(f"{function.__qualname__} is not a module-level function: a worker cannot import it")
    target = (function.__module__, function.__qualname__)
    pool = [_Worker() for _ in range(workers)]
    pending: deque[Context] = deque()  # contexts of jobs sent and not yet answered, oldest first
    job_iter = iter(jobs)
    sent = answered = 0
    finished = False

    def send_next() -> None:
        nonlocal sent
        job = next(job_iter, None)
        if job is not None:
            context, args = job
            pool[sent % len(pool)].submit((target, args))
            pending.append(context)
            sent += 1

    try:
        for _ in range((ahead + 1) * len(pool)):
            send_next()
        while answered < sent:
            value = pool[answered % len(pool)].answer()
            answered += 1
            send_next()
            yield pending.popleft(), value
        finished = True
    finally:
        for worker in pool:
            worker.close(kill=not finished)  # stopped early: answers nobody will read


def _serve() -> None:
    """A worker's loop: the parent's sys.path, then one answer per request until stdin closes."""
    requests, answers = sys.stdin.buffer, sys.stdout.buffer
    sys.path[:] = pickle.load(requests)
    functions: dict[tuple[str, str], Callable[..., Any]] = {}
    while True:
        try:
            target, args = pickle.load(requests)
        except EOFError:
            return
        try:
            if target not in functions:
                functions[target] = getattr(importlib.import_module(target[0]), target[1])
            answer = ("ok", functions[target](*args))
        except Exception:  # reported to the parent, which raises it as a WorkerError
            answer = ("error", traceback.format_exc())
        pickle.dump(answer, answers, protocol=pickle.HIGHEST_PROTOCOL)
        answers.flush()


if __name__ == "__main__":
    _serve()
