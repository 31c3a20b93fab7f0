"""The worker-process pool: answers in order, errors with the worker's traceback, early stops."""

from __future__ import annotations

import os
import time

import pytest

from trace_assets.runtime.process_pool import WorkerError, ordered_map
from trace_assets_tests.support.worker_jobs import slow_square, square_unless_negative


def test_answers_come_in_job_order_from_several_processes():
    # Later jobs are quicker, so a pool that answered as jobs finish would answer out of order.
    jobs = ((f"job-{n}", (0.05 * (10 - n) / 10, n)) for n in range(10))
    answers = list(ordered_map(slow_square, jobs, workers=3))
    assert [context for context, _ in answers] == [f"job-{n}" for n in range(10)]
    assert [value for _, (value, _) in answers] == [n * n for n in range(10)]
    pids = {pid for _, (_, pid) in answers}
    assert len(pids) == 3 and os.getpid() not in pids


def test_one_worker_runs_in_this_process():
    assert [value for _, value in ordered_map(slow_square, [(None, (0, 3))], workers=1)] == [(9, os.getpid())]


def test_a_failing_job_raises_with_the_workers_traceback():
    answered = []
    with pytest.raises(WorkerError, match=r"(?s)Traceback.*ValueError: negative input -1"):
        for _, value in ordered_map(square_unless_negative, [(None, (2,)), (None, (-1,)), (None, (3,))], workers=2):
            answered.append(value)
    assert answered == [4]


def test_only_module_level_functions_can_run_in_workers():
    with pytest.raises(ValueError, match="module-level"):
        next(ordered_map(lambda n: n, [(None, (1,))], workers=2))


def test_stopping_early_ends_the_workers_at_once():
    answers = ordered_map(slow_square, ((n, (1.0 if n else 0, n)) for n in range(50)), workers=2)
    assert next(answers)[0] == 0
    started = time.monotonic()
    answers.close()  # workers busy with one-second jobs are killed, not waited for
    assert time.monotonic() - started < 0.9
