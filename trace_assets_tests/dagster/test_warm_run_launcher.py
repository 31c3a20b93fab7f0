"""The warm run launcher's pieces that need no daemon: what its forkserver preloads (none of this
package, so each run imports the code as it is now) and how it tells a live run worker from a gone
one, from another process that was given its pid, or from a tag it did not write. Runs launched through it by the real daemon
are in test_backfill.py (a sweep), test_recheck_job.py (the UI's Terminate, a killed worker)."""

from __future__ import annotations

import subprocess
import sys

import dagster as dg
import pytest

from trace_assets.cli.processes import process_identity
from trace_assets.defs.warm_run_launcher import PRELOADED_MODULES, WORKER_TAG, WarmRunLauncher, worker_identity

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process identities come from /proc")


def test_the_forkserver_preloads_none_of_the_pipelines_code():
    code = (
        "import importlib, sys\n"
        f"for name in {list(PRELOADED_MODULES)!r}: importlib.import_module(name)\n"
        "print(sorted(name for name in sys.modules if name.split('.')[0] == 'trace_assets'))"
    )
    loaded = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    assert loaded.strip() == "[]"


def _run_with_worker(identity: str) -> dg.DagsterRun:
    """A run whose tag the launcher wrote for a worker of this identity."""
    return dg.DagsterRun(job_name="export_trace_run", run_id="run-1", tags={WORKER_TAG: f"run-1:{identity}"})


def _health(run: dg.DagsterRun) -> tuple[str, str | None]:
    result = WarmRunLauncher().check_run_worker_health(run)
    return result.status.value, result.msg


def test_a_worker_known_only_by_its_tag_is_running_until_its_process_is_gone():
    """A daemon restarted since the launch has no handle on the worker: the tag decides."""
    worker = subprocess.Popen(["sleep", "60"])
    try:
        identity = process_identity(worker.pid)
        assert identity is not None
        assert _health(_run_with_worker(identity)) == ("RUNNING", None)
        boot, pid, start = identity.split(":")
        reused = f"{boot}:{pid}:{int(start) - 1}"  # the same pid, given to another process since
        assert _health(_run_with_worker(reused)) == ("FAILED", f"run worker (pid {pid}) is gone")
        assert _health(_run_with_worker(f"-:{pid}:-")) == ("RUNNING", None)  # no /proc: the pid exists
    finally:
        worker.kill()
        worker.wait()
    assert process_identity(worker.pid) is None
    assert _health(_run_with_worker(identity)) == ("FAILED", f"run worker (pid {worker.pid}) is gone")
    assert _health(_run_with_worker(f"-:{worker.pid}:-"))[0] == "FAILED"


@pytest.mark.parametrize(
    "tag",
    [
        None,  # launched through the code server
        "parent-run:boot:1:2",  # copied from the run this one re-executes
        "run-1:boot:not-a-pid:2",
        "run-1:boot:1",
        "anything",
    ],
)
def test_a_run_whose_worker_was_not_forked_here_is_left_to_the_code_server(tag):
    run = dg.DagsterRun(job_name="export_trace_run", run_id="run-1", tags={WORKER_TAG: tag} if tag else {})
    assert worker_identity(run) is None
    assert _health(run) == ("RUNNING", None)
