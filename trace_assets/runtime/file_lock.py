"""The one file lock: an exclusive flock, across processes and across threads (each hold opens the
file anew), so the kernel drops it when its process dies, even by kill -9.

While it is held the file names its holder (`holder_line`), which a waiter logs; a lock held only
for moments (the root card's) is waited for silently. It is polled, from a hundredth of a second up
to half a second, so a short hold is seen soon and a long one costs no CPU.
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
FIRST_POLL_SECONDS = 0.01
LAST_POLL_SECONDS = 0.5


@contextmanager
def hold_lock(lock_file: Path, name: str, log: Callable[[str], None] | None, holder: str = "") -> Iterator[None]:
    """An exclusive flock on `lock_file`, waited for with a line to `log` naming `name` and who holds it."""
    lock_file.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock_file, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        _wait_for_lock(fd, lock_file, name, log)
        os.ftruncate(fd, 0)
        os.pwrite(fd, holder_line(holder).encode(), 0)
        try:
            yield
        finally:
            os.ftruncate(fd, 0)
    finally:
        os.close(fd)  # releases the flock


def _wait_for_lock(fd: int, lock_file: Path, name: str, log: Callable[[str], None] | None) -> None:
    logged_at = 0.0
    poll = FIRST_POLL_SECONDS
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if log is not None and time.monotonic() - logged_at >= LOCK_WAIT_LOG_SECONDS:
                holder = lock_file.read_text().strip() or "another process"
                log(f"waiting for {name}: another materialization holds it ({holder})")
                logged_at = time.monotonic()
            time.sleep(poll)
            poll = min(poll * 2, LAST_POLL_SECONDS)


def holder_line(holder: str) -> str:
    """Who holds a lock: this process, its host, `holder` (else its command line) and since when."""
    command = " ".join(os.path.basename(arg) if i == 0 else arg for i, arg in enumerate(sys.argv))[:200]
    started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime())
    return f"pid {os.getpid()} on {socket.gethostname()}, {holder or command}, since {started}\n"
