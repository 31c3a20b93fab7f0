"""A running webserver's GraphQL API, as the UI uses it: the loaded repository, a launched run's end
and its event log."""

from __future__ import annotations

import time

import dagster as dg
from dagster_graphql import DagsterGraphQLClient

from trace_assets.cli.backfill_api import query
from trace_assets_tests.support.service_processes import ServiceProcess

RUN_TIMEOUT_SECONDS = 180
WORKSPACE_QUERY = """
{ workspaceOrError { ... on Workspace { locationEntries {
    name loadStatus
    locationOrLoadError { ... on RepositoryLocation { repositories { name } } ... on PythonError { message } }
} } } }
"""
RUN_EVENTS_QUERY = """
query($runId: ID!) { runOrError(runId: $runId) { ... on Run { eventConnection { events {
    ... on MessageEvent { message }
    ... on EngineEvent { metadataEntries { label ... on TextMetadataEntry { text } } }
} } } } }
"""
FINISHED = (dg.DagsterRunStatus.SUCCESS, dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.CANCELED)


def loaded_repository(url: str, timeout: float = 90) -> dict[str, str]:
    """The repository selector of the code location, once the webserver at `url` has loaded it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        entries = query(url, WORKSPACE_QUERY)["workspaceOrError"]["locationEntries"]
        if entries and entries[0]["loadStatus"] == "LOADED":
            location = entries[0]["locationOrLoadError"]
            assert "repositories" in location, f"code location failed to load: {location.get('message')}"
            return {"repositoryLocationName": entries[0]["name"], "repositoryName": location["repositories"][0]["name"]}
        time.sleep(0.5)
    raise AssertionError(f"code location not loaded within {timeout:.0f}s")


def wait_for_run(
    client: DagsterGraphQLClient,
    run_id: str,
    daemon: ServiceProcess,
    until: tuple[dg.DagsterRunStatus, ...] = FINISHED,
) -> dg.DagsterRunStatus:
    """The run's status once it is one of `until` (by default: finished), the daemon alive meanwhile."""
    deadline = time.monotonic() + RUN_TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        status = client.get_run_status(run_id)
        if status in until:
            return status
        daemon.require_alive()
        time.sleep(1)
    raise AssertionError(f"run {run_id} still {status} after {RUN_TIMEOUT_SECONDS}s\n{daemon.log_tail()}")


def run_events(url: str, run_id: str) -> list[dict]:
    """The run's event log as the UI's run page reads it: each event's message (and an engine
    event's metadata entries)."""
    return query(url, RUN_EVENTS_QUERY, {"runId": run_id})["runOrError"]["eventConnection"]["events"]


def run_worker_pid(url: str, run_id: str) -> int:
    """The pid of the run's process, from the "Started process for run" event its process logs."""
    [pid] = [
        int(entry["text"])
        for event in run_events(url, run_id)
        if event.get("message", "").startswith("Started process for run")
        for entry in event["metadataEntries"]
        if entry["label"] == "pid"
    ]
    return pid
