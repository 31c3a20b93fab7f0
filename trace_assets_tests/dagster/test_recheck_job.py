"""The `recheck_scopes` job launched as the UI's Launchpad launches it: over GraphQL on a real
webserver, queued, and dequeued by the real daemon under the project's dagster.yaml. The sensor
(stopped in the daemon, ticked here on the same instance) lists the scope at its next tick whatever
its back-off; the request runs beside a running export of the same scope; a bad scope fails the run
naming it, recording nothing. The runs are started by Dagster's default run launcher: the UI's
Terminate cancels one, and one whose process is killed fails."""

from __future__ import annotations

import dataclasses
import os
import shutil
import signal
from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import pytest
from dagster_graphql import DagsterGraphQLClient

from trace_assets.cli.backfill_api import failure_reason, query
from trace_assets.core.scope import RunScope
from trace_assets.definitions import build_definitions
from trace_assets.defs.recheck import recheck_requests
from trace_assets.defs.resources import config_from_env
from trace_assets.steps.staging import RunStaging
from trace_assets_tests.support.helpers import PROJECT_DIR, SAMPLE_RUN, SAMPLE_TRACES
from trace_assets_tests.support.sensor_ticks import sensor_tick
from trace_assets_tests.support.service_processes import (
    ServiceProcess,
    Webserver,
    running_daemon,
    running_webserver,
    service_env,
)
from trace_assets_tests.support.webserver_graphql import loaded_repository, run_events, run_worker_pid, wait_for_run

# dagster_graphql's client calls gql the old way, once per request.
pytestmark = pytest.mark.filterwarnings("ignore:Using variable_values:DeprecationWarning")
SCOPE = "run-a"
SENSOR_STATE = """
query($selector: SensorSelector!) {
  sensorOrError(sensorSelector: $selector) { ... on Sensor { sensorState { id status } } }
}
"""
STOP = """
mutation($id: String!) {
  stopSensor(id: $id) { __typename ... on StopSensorMutationResult { instigationState { status } } }
}
"""


@dataclasses.dataclass(frozen=True)
class Services:
    home: Path
    defs: dg.Definitions
    webserver: Webserver
    daemon: ServiceProcess
    client: DagsterGraphQLClient
    repository: dict[str, str]

    def launch(self, job: str, **options) -> str:
        return self.client.submit_job_execution(
            job,
            repository_location_name=self.repository["repositoryLocationName"],
            repository_name=self.repository["repositoryName"],
            **options,
        )

    def recheck(self, scopes: list[str]) -> str:
        """A recheck_scopes run with the Launchpad's run config; its id."""
        return self.launch("recheck_scopes", run_config={"ops": {"request_recheck": {"config": {"scopes": scopes}}}})


@pytest.fixture(scope="module")
def services(tmp_path_factory) -> Iterator[Services]:
    tmp = tmp_path_factory.mktemp("recheck")
    home = tmp / "dagster_home"
    home.mkdir()
    shutil.copyfile(PROJECT_DIR / "dagster.yaml", home / "dagster.yaml")  # the queue and its limits
    shutil.copytree(SAMPLE_TRACES / SAMPLE_RUN, tmp / "traces" / SCOPE)
    env = service_env(
        home,
        TRACE_ASSETS_TRACES_ROOT=str(tmp / "traces"),
        TRACE_ASSETS_PUBLISH_ROOT=str(tmp / "published"),
        TRACE_ASSETS_STAGING_ROOT=str(tmp / "staging"),
        TRACE_ASSETS_SETTLE_SECONDS="0",  # the copy is as new as the checkout: settled at once all the same
    )
    defs = build_definitions(config_from_env(env))
    with running_webserver(home, env) as webserver:
        client = DagsterGraphQLClient("127.0.0.1", port_number=webserver.port)
        repository = loaded_repository(webserver.url)
        selector = {**repository, "sensorName": "new_trace_runs_sensor"}
        state = query(webserver.url, SENSOR_STATE, {"selector": selector})["sensorOrError"]["sensorState"]
        stopped = query(webserver.url, STOP, {"id": state["id"]})["stopSensor"]
        assert stopped["instigationState"]["status"] == "STOPPED", stopped  # the test ticks it, not the daemon
        with running_daemon(home, env) as daemon:
            yield Services(home, defs, webserver, daemon, client, repository)


def test_a_recheck_from_the_launchpad_lists_the_scope_at_the_next_tick(services):
    with dg.DagsterInstance.from_config(str(services.home)) as instance:
        first = sensor_tick(services.defs, instance, None)
        assert [request.partition_key for request in first.run_requests] == [SCOPE]
        waiting = sensor_tick(services.defs, instance, first.cursor)
        assert f"'{SCOPE}': export requested, not published yet" in waiting.skip_reason.skip_message

        staging = _staging(services)
        with staging.locked(print, holder="the test"):  # an export of the scope runs, waiting for this lock
            export = services.launch("export_trace_run", tags={"dagster/partition": SCOPE})
            assert wait_for_run(services.client, export, services.daemon, until=(dg.DagsterRunStatus.STARTED,))
            recheck = services.recheck([SCOPE])
            status = wait_for_run(services.client, recheck, services.daemon)
            assert status == dg.DagsterRunStatus.SUCCESS, services.daemon.log_tail()
            # Dequeued beside it: not held by the one-run-per-partition limit, the store's or a pool.
            assert services.client.get_run_status(export) == dg.DagsterRunStatus.STARTED
            services.client.terminate_run(export)
            assert wait_for_run(services.client, export, services.daemon) == dg.DagsterRunStatus.CANCELED

        listed = sensor_tick(services.defs, instance, waiting.cursor)  # listed now, not in an hour
        # the export was canceled, not failed: not launched again by the sensor
        assert (
            listed.skip_reason.skip_message
            == f"1 scope(s): 1 exporting.\n'{SCOPE}': export requested, not published yet."
        )
        again = sensor_tick(services.defs, instance, listed.cursor)  # the request is read once
        assert f"'{SCOPE}': export requested, not published yet" in again.skip_reason.skip_message


def test_a_bad_scope_fails_the_run_naming_it(services):
    with dg.DagsterInstance.from_config(str(services.home)) as instance:
        _, before = recheck_requests(instance, None)
        for scopes, named in (
            ([SCOPE, "bad key"], "run id 'bad key': segment 'bad key' must be letters, digits"),
            (["run-z/step-1"], "'run-z/step-1' is not a partition the sensor knows"),
        ):
            run_id = services.recheck(scopes)
            assert wait_for_run(services.client, run_id, services.daemon) == dg.DagsterRunStatus.FAILURE
            reason = failure_reason(services.webserver.url, run_id)
            assert reason.startswith("step request_recheck failed: ") and named in reason, reason
        assert recheck_requests(instance, before) == (set(), before)  # nothing recorded, not even run-a


def test_a_killed_run_worker_fails_its_run_naming_it(services):
    """The run's process, killed (as the OOM killer kills one): the code server that started it fails
    the run, naming the signal in its event log."""
    staging = _staging(services)
    with staging.locked(print, holder="the test"):  # the export waits for this lock, in its run worker
        export = services.launch("export_trace_run", tags={"dagster/partition": SCOPE})
        assert wait_for_run(services.client, export, services.daemon, until=(dg.DagsterRunStatus.STARTED,))
        os.kill(run_worker_pid(services.webserver.url, export), signal.SIGKILL)
        assert wait_for_run(services.client, export, services.daemon) == dg.DagsterRunStatus.FAILURE
    messages = [event.get("message", "") for event in run_events(services.webserver.url, export)]
    killed = f"Run execution process for {export} was terminated by signal 9 (SIGKILL)."
    assert any(killed in message for message in messages), messages[-3:]  # "[DagsterApiServer] Run ..."


def _staging(services: Services) -> RunStaging:
    """The scope's staging as the code location's runs have it."""
    trace_config = services.defs.resources["trace_config"]  # type: ignore[index]
    return RunStaging(Path(trace_config.staging_root), RunScope.from_key(SCOPE))
