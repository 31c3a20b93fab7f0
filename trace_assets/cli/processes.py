"""Whether a process named in a run's tags is still there (the CLI's in-process runs)."""

from __future__ import annotations

import os


def process_exists(pid: int) -> bool:
    """Whether some process has this pid (possibly another user's, or one that reused it)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
