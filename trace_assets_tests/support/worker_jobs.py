"""Jobs for the worker-pool tests: a module workers can import by name."""

import os
import time


def slow_square(delay: float, n: int) -> tuple[int, int]:
    """n squared, after `delay` seconds, with the pid that computed it."""
    time.sleep(delay)
    return n * n, os.getpid()


def square_unless_negative(n: int) -> int:
    if n < 0:
        raise ValueError(f"negative input {n}")
    return n * n
