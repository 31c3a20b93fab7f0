"""Exclusive locks on files across processes (flock: the kernel drops one when its process dies,
even by kill -9), re-entrant within a process, waited for with a log line naming the holder. Apart
from the staging they guard: the CLI takes the instance's lock before loading the pipeline.
"""

from __future__ import annotations

import fcntl
import os
import socket
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

LOCK_WAIT_LOG_SECONDS = 60
_held_locks: dict[Path, int] = {}  # lock files this process holds, with their nesting depth


def held_here(lock_file: Path) -> bool:
    """Whether this process holds the lock already (a hold now would be a nested one)."""
    return lock_file.absolute() in _held_locks


@contextmanager
def hold_lock(lock_file: Path, name: str, log: Callable[[str], None], holder: str = "") -> Iterator[None]:
    """An exclusive flock on `lock_file`, waited for with a log line naming who holds it."""
    lock_file = lock_file.absolute()
    if lock_file in _held_locks:
        _held_locks[lock_file] += 1
        try:
            yield
        finally:
            _held_locks[lock_file] -= 1
        return
    lock_file.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock_file, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        _wait_for_lock(fd, lock_file, name, log)
        os.ftruncate(fd, 0)
        os.pwrite(fd, holder_line(holder).encode(), 0)
        _held_locks[lock_file] = 1
        try:
            yield
        finally:
            del _held_locks[lock_file]
            os.ftruncate(fd, 0)
    finally:
        os.close(fd)  # releases the flock


def _wait_for_lock(fd: int, lock_file: Path, name: str, log: Callable[[str], None]) -> None:
    logged_at = 0.0
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() - logged_at >= LOCK_WAIT_LOG_SECONDS:
                holder = lock_file.read_text().strip() or "another process"
                log(f"waiting for {name}: another materialization holds it ({holder})")
                logged_at = time.monotonic()
            time.sleep(0.5)


def holder_line(holder: str) -> str:
    """Who holds a lock, as a waiter's log line names it: process, host, what for, since when."""
    command = " ".join(os.path.basename(arg) if i == 0 else arg for i, arg in enumerate(sys.argv))[:200]
    started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime())
    return f"pid {os.getpid()} on {socket.gethostname()}, {holder or command}, since {started}\n"
