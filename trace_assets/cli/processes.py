"""Whether a process named in a run's tags is still there: from its pid alone, or from an identity
that a process given the same pid later cannot match."""

from __future__ import annotations

import os
from pathlib import Path


def process_exists(pid: int) -> bool:
    """Whether some process has this pid (possibly another user's, or one that reused it)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def process_identity(pid: int) -> str | None:
    """`boot:pid:start` for a live process, None when there is none or no /proc to read (macOS)."""
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    start = stat.rsplit(")", 1)[1].split()[19]  # field 22, after the command in parentheses
    return f"{boot}:{pid}:{start}"
