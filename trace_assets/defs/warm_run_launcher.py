"""A run launcher for one machine whose run workers are forked from a warm process.

Dagster's default launcher starts every run in a fresh interpreter that imports Dagster, its
storage and the pipeline's libraries before its first step: 2-3 s a run, a large share of a
small scope's run, paid again by every scope of a sweep's backfill. Here the daemon keeps one
forkserver that imported those libraries once; each run is still a process of its own (its own
failure, memory and interrupts), forked from it: 0.3 s from dequeued to its first event. The
pipeline's own package is not preloaded: each run imports it afresh, so an edited code location
runs its new code.

Runs whose code location is not this interpreter's (another venv or image) go to the default
launcher unchanged.
"""

from __future__ import annotations

import multiprocessing
import sys
import threading
from typing import TYPE_CHECKING

import dagster as dg
from dagster._core.launcher import CheckRunHealthResult, DefaultRunLauncher, LaunchRunContext, WorkerStatus

from trace_assets.cli.processes import process_exists, process_identity

if TYPE_CHECKING:
    from multiprocessing.context import ForkServerProcess

    from dagster._core.instance.ref import InstanceRef
    from dagster._serdes.config_class import ConfigurableClassData

# What every run worker imports before its first step, and nothing of this package.
PRELOADED_MODULES = (
    "dagster._cli.api",
    "dagster._core.execution.run_cancellation_thread",
    "dagster._core.storage.event_log.sqlite.sqlite_event_log",
    "dagster._core.storage.runs.sqlite.sqlite_run_storage",
    "dagster._core.storage.schedules.sqlite.sqlite_schedule_storage",
    "polars",
    "pyarrow",
    "pyarrow.parquet",
    "fsspec",
)

# The run tag naming a run's worker, so a restarted daemon can still tell whether it is alive:
# `run_id:boot:pid:start` (`-` for what /proc cannot say). A re-execution copies its parent's tags,
# so a value naming another run is not this run's worker.
WORKER_TAG = "trace_assets/run_worker"


def worker_identity(run: dg.DagsterRun) -> tuple[int, str] | None:
    """The pid and process identity of the run's forked worker, or None where the launcher did not
    fork it (launched through the code server, a tag copied from a parent run, a malformed value)."""
    parts = run.tags.get(WORKER_TAG, "").split(":")
    if len(parts) != 4 or parts[0] != run.run_id or not parts[2].isdigit():
        return None
    return int(parts[2]), ":".join(parts[1:])


def _run_worker(run_id: str, instance_ref: InstanceRef) -> None:
    """`dagster api execute_run`'s body in the forked worker, with Dagster's cancellation thread:
    the launcher's `terminate` marks the run canceling (from the webserver too) and this thread
    interrupts the run, as the default launcher's code server does by its termination event."""
    from dagster._cli.api import _execute_run_command_body
    from dagster._core.execution.run_cancellation_thread import start_run_cancellation_thread
    from dagster._utils.interrupts import capture_interrupts

    with capture_interrupts(), dg.DagsterInstance.from_ref(instance_ref) as instance:
        thread, stop = start_run_cancellation_thread(instance, run_id)
        try:
            _execute_run_command_body(run_id, instance, lambda _event: None, set_exit_code_on_failure=False)
        finally:
            stop.set()
            thread.join()


class WarmRunLauncher(DefaultRunLauncher):
    """Launches runs as processes forked from a warm forkserver the daemon keeps (Linux and macOS);
    runs of code locations in another interpreter go through the default launcher's code server."""

    def __init__(self, inst_data: ConfigurableClassData | None = None):
        super().__init__(inst_data=inst_data)
        self._context = multiprocessing.get_context("forkserver")
        self._context.set_forkserver_preload(list(PRELOADED_MODULES))
        self._workers: dict[str, ForkServerProcess] = {}
        self._lock = threading.Lock()

    def launch_run(self, context: LaunchRunContext) -> None:
        run = context.dagster_run
        origin = run.job_code_origin
        if origin is None or origin.repository_origin.executable_path != sys.executable:
            super().launch_run(context)
            return
        worker = self._context.Process(
            target=_run_worker, args=(run.run_id, self._instance.get_ref()), name=f"dagster-run-{run.run_id}"
        )
        with self._lock:
            # Handles of workers that ended well are let go; a failed one's exit code waits for
            # the run monitoring to read it (`check_run_worker_health`).
            self._workers = {
                run_id: process
                for run_id, process in self._workers.items()
                if process.is_alive() or process.exitcode != 0
            }
            worker.start()
            self._workers[run.run_id] = worker
        pid = worker.pid
        assert pid is not None, "a started process has a pid"
        identity = process_identity(pid) or f"-:{pid}:-"
        self._instance.add_run_tags(run.run_id, {WORKER_TAG: f"{run.run_id}:{identity}"})

    def terminate(self, run_id: str) -> bool:
        """Marks the run canceling; its worker's cancellation thread interrupts it within
        `run_monitoring.cancellation_thread_poll_interval_seconds`."""
        run = self._instance.get_run_by_id(run_id)
        if not run or run.is_finished:
            return False
        if worker_identity(run) is None:
            return super().terminate(run_id)
        self._instance.report_run_canceling(run)
        return True

    @property
    def supports_check_run_worker_health(self) -> bool:
        return True

    def check_run_worker_health(self, run: dg.DagsterRun) -> CheckRunHealthResult:
        with self._lock:
            worker = self._workers.get(run.run_id)
            alive = worker is not None and worker.is_alive()
            if worker is not None and not alive:
                del self._workers[run.run_id]  # its exit code is read once, below
        if worker is not None:
            if alive:
                return CheckRunHealthResult(WorkerStatus.RUNNING)
            if worker.exitcode == 0:
                return CheckRunHealthResult(WorkerStatus.SUCCESS)
            return CheckRunHealthResult(WorkerStatus.FAILED, f"run worker exited with code {worker.exitcode}")
        worker_tag = worker_identity(run)
        if worker_tag is None:  # launched through the code server, which reports its own workers' deaths
            return CheckRunHealthResult(WorkerStatus.RUNNING)
        pid, identity = worker_tag
        if process_identity(pid) == identity or (identity.startswith("-:") and process_exists(pid)):
            return CheckRunHealthResult(WorkerStatus.RUNNING)
        return CheckRunHealthResult(WorkerStatus.FAILED, f"run worker (pid {pid}) is gone")
