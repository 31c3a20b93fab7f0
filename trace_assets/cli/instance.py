"""The Dagster instance the CLI runs on (`DAGSTER_HOME`, the UI's), and the cleanup after CLI
processes that died mid-run (kill -9, OOM): their runs failed, their pool slots freed."""

from __future__ import annotations

import os
import socket
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from trace_assets.cli.console import say
from trace_assets.cli.processes import process_exists
from trace_assets.settings import DEFAULT_STAGING, dagster_home

if TYPE_CHECKING:
    import dagster as dg

# Tags on the CLI's runs, so a later CLI can tell a run whose process is gone (kill -9, OOM).
PID_TAG, HOST_TAG = "trace_assets/cli_pid", "trace_assets/cli_host"
INSTANCE_INIT_LOCK = ".trace-assets-instance.lock"
LOCAL_INSTANCE = "local_instance.yaml"  # a link to the project's dagster.yaml, copied into wheels


def get_instance() -> dg.DagsterInstance:
    """The instance, initialised under a file lock: two first commands on a fresh DAGSTER_HOME
    would otherwise both create the SQLite schemas (two alembic heads, every later command fails)."""
    import dagster as dg

    from trace_assets.runtime.file_lock import hold_lock

    home = dagster_home(os.environ)
    chosen = bool(os.environ.get("DAGSTER_HOME"))
    if not chosen:
        home.mkdir(exist_ok=True)
        os.environ["DAGSTER_HOME"] = str(home)
    if not (home / "dagster.yaml").exists() and (not chosen or (home.is_dir() and _holds_no_instance(home))):
        # The CLI's own home, or one the operator named that holds no instance yet, gets the
        # project's dagster.yaml (queue, limits, run monitoring, telemetry off), shipped in the
        # package: without one Dagster prints its set-up warning and telemetry banner before the
        # CLI's first line. A home already in use without one is the operator's choice, left as it is.
        (home / "dagster.yaml").write_bytes(resources.files(__package__).joinpath(LOCAL_INSTANCE).read_bytes())
    with hold_lock(Path(os.environ["DAGSTER_HOME"], INSTANCE_INIT_LOCK), "the Dagster instance", say, "instance init"):
        return dg.DagsterInstance.get()  # builds each storage, which creates its schema


def _holds_no_instance(home: Path) -> bool:
    """Nothing in `home` but what the CLI may put there before an instance: the default staging
    root (`materialize --dry-run` writes it, and opens no instance) and the init lock."""
    return {path.name for path in home.iterdir()} <= {DEFAULT_STAGING, INSTANCE_INIT_LOCK}


def finished_statuses() -> set[dg.DagsterRunStatus]:
    import dagster as dg

    return {dg.DagsterRunStatus.SUCCESS, dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.CANCELED}


def free_slots_of_dead_runs(instance: dg.DagsterInstance) -> list[str]:
    """Fail the CLI's runs on this host whose process is gone, and free every pool slot held by a
    run that is no longer running, so no later run waits for a slot forever."""
    import dagster as dg

    unfinished = [status for status in dg.DagsterRunStatus if status not in finished_statuses()]
    freed = []
    host = socket.gethostname()
    for record in instance.get_run_records(dg.RunsFilter(statuses=unfinished, tags={HOST_TAG: host})):
        run = record.dagster_run
        pid = int(run.tags.get(PID_TAG, "0") or 0)
        if pid and not process_exists(pid):
            instance.report_run_failed(run, f"its trace-assets process (pid {pid}) is gone")
            freed.append(run.run_id)
    storage = instance.event_log_storage
    for key in storage.get_concurrency_keys():
        for slot in storage.get_concurrency_info(key).claimed_slots:
            holder = instance.get_run_by_id(slot.run_id)
            if holder is None or holder.is_finished or slot.run_id in freed:
                storage.free_concurrency_slots_for_run(slot.run_id)
                freed.append(slot.run_id)
    return list(dict.fromkeys(freed))
