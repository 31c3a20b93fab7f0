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


def export_slice_failing_for(trial_dir: str, job, trials):  # type: ignore[no-untyped-def]
    """`trial_rows.export_slice`, in whatever process runs it, with the export of `trial_dir` raising."""
    from trace_assets.steps import trial_rows

    real = trial_rows.export_trial

    def export_trial(summary, files, *args):  # type: ignore[no-untyped-def]
        if summary.trial_name == trial_dir:
            raise ValueError("planted")
        return real(summary, files, *args)

    trial_rows.export_trial = export_trial  # type: ignore[assignment]
    try:
        return trial_rows.export_slice(job, trials)
    finally:
        trial_rows.export_trial = real


def exit_at_once(*_: object) -> None:
    """A worker that dies in the middle of a job."""
    os._exit(3)
