"""`WritesBehind`: the rows step's Parquet writes and the publish's session files go through it."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest

from trace_assets.runtime.writes_behind import WritesBehind


def _appending(done: list[int], item: int, pause: float = 0.0) -> Callable[[], None]:
    def write() -> None:
        time.sleep(pause)
        done.append(item)

    return write


def _waiting(gate: threading.Event) -> Callable[[], None]:
    def write() -> None:
        gate.wait(5)

    return write


def _failing(message: str, gate: threading.Event | None = None) -> Callable[[], None]:
    """A write that fails, once `gate` (if any) is set."""

    def write() -> None:
        if gate is not None:
            gate.wait(5)
        raise OSError(message)

    return write


def test_writes_run_in_order_in_one_thread_and_are_done_on_leaving():
    done: list[int] = []
    threads: set[str] = set()
    with WritesBehind(depth=3, name="ordered") as writes:
        for item in range(12):
            writes.submit(lambda: threads.add(threading.current_thread().name))
            writes.submit(_appending(done, item, pause=0.003 * (item % 3)))
    assert done == list(range(12))
    assert len(threads) == 1 and threads.pop().startswith("ordered")


def test_submit_waits_while_depth_writes_are_not_done():
    gate = threading.Event()
    done: list[int] = []
    with WritesBehind(depth=2) as writes:
        writes.submit(_waiting(gate))
        writes.submit(_appending(done, 1))  # two held: the depth
        third = threading.Thread(target=writes.submit, args=(_appending(done, 2),))
        third.start()
        third.join(0.2)
        assert third.is_alive() and done == []  # waiting for the first to finish
        gate.set()
        third.join(5)
        assert not third.is_alive()
    assert done == [1, 2]


def test_a_failed_write_is_raised_by_the_next_submit_and_the_writes_after_it_never_run():
    done: list[int] = []
    with pytest.raises(OSError, match=r"disk full \(writing a\.jsonl\)"):
        with WritesBehind(depth=1) as writes:
            writes.submit(_failing("disk full (writing a.jsonl)"))
            writes.submit(_appending(done, 1))  # waits for the failed write, then raises its error
            done.append(-1)  # not reached
    assert done == []


def test_a_failed_write_is_raised_on_leaving_and_the_queued_ones_are_dropped():
    """Only the first failure is told; what was queued behind it is not written, and the caller,
    having submitted all it had, hears of it on leaving the block."""
    gate = threading.Event()
    done: list[int] = []
    with pytest.raises(OSError, match="first failure") as raised:
        with WritesBehind(depth=4) as writes:
            writes.submit(_failing("first failure", gate))
            writes.submit(_appending(done, 1))
            writes.submit(_failing("second failure"))
            writes.submit(_appending(done, 2))
            gate.set()
    assert str(raised.value) == "first failure" and done == []


def test_leaving_on_the_callers_error_waits_for_the_running_write_and_drops_the_queued():
    started = threading.Event()
    done: list[int] = []
    with pytest.raises(RuntimeError, match="caller failed"):
        with WritesBehind(depth=3, name="left") as writes:

            def slow() -> None:
                started.set()
                time.sleep(0.05)
                done.append(0)

            writes.submit(slow)
            writes.submit(_appending(done, 1))
            started.wait(5)
            raise RuntimeError("caller failed")
    assert done == [0]  # finished before the block was left; the queued write never ran
    time.sleep(0.05)
    assert done == [0]
    assert not any(thread.name.startswith("left") for thread in threading.enumerate())


def test_a_write_error_is_not_raised_over_the_callers_own():
    with pytest.raises(RuntimeError, match="caller failed"):
        with WritesBehind(depth=2) as writes:
            writes.submit(_failing("write failed"))
            time.sleep(0.05)
            raise RuntimeError("caller failed")


def test_unthreaded_writes_run_at_once_in_the_callers_thread():
    done: list[int] = []
    threads: list[threading.Thread] = []
    with WritesBehind(depth=1, threaded=False) as writes:
        writes.submit(lambda: threads.append(threading.current_thread()))
        writes.submit(_appending(done, 1))
        assert done == [1]
        with pytest.raises(OSError, match="disk full"):
            writes.submit(_failing("disk full"))
    assert threads == [threading.current_thread()]
