"""The way a person uses it: webserver and daemon running, runs launched over GraphQL, the UI looked at.

Real `dagster-webserver` and `dagster-daemon` processes on the project's workspace.yaml, queued
runs dequeued by the daemon (one published, one blocked by the secret scan), the metadata read
back over GraphQL, and the pages a publisher opens rendered by one headless Chromium into
screenshots, their text and layout checked: formatted figures, the raw-tree check saying it skipped, the
sensor's readable status, the blocked run's one-line reason (its tag, and first on its page), the sweep view's states within the
page's width.
"""

from __future__ import annotations

import json
import shutil
import time
from html.parser import HTMLParser
from pathlib import Path

import dagster as dg
import pytest
import yaml
from dagster_graphql import DagsterGraphQLClient

from trace_assets.cli.backfill_api import query
from trace_assets.core.run_tags import FAILURE_TAG
from trace_assets_tests.support.browser import Browser, headless_chromium
from trace_assets_tests.support.helpers import SAMPLE_RUN, SAMPLE_TRACES
from trace_assets_tests.support.service_processes import (
    CHROMIUM,
    ServiceProcess,
    require_binary,
    running_daemon,
    running_webserver,
    service_env,
)
from trace_assets_tests.support.webserver_graphql import loaded_repository, wait_for_run

JOB = "export_trace_run"
ARTIFACTS = Path(__file__).resolve().parent.parent / ".artifacts"
# The asset's Partitions tab with one partition selected: its latest materialization and metadata.
PARTITION_PAGE = f"/assets/last_episode_rows?view=partitions&partition={SAMPLE_RUN}"
SWEEP_PAGE = "/assets/sweep_coverage?view=events"  # its latest materialization, metadata shown
CHECKS_PAGE = "/assets/raw_trial_listing?view=checks"
SENSOR = "new_trace_runs_sensor"
# dagster_graphql's client calls gql the old way, once per request.
pytestmark = pytest.mark.filterwarnings("ignore:Using variable_values:DeprecationWarning")

ADD_PARTITION = """
mutation AddPartition($repository: RepositorySelector!, $partitionKey: String!) {
  addDynamicPartition(repositorySelector: $repository, partitionsDefName: "trace_runs", partitionKey: $partitionKey) {
    __typename
    ... on PythonError { message }
  }
}
"""
COVERAGE_QUERY = """
query Coverage($partition: String!) {
  assetOrError(assetKey: {path: ["last_episode_rows"]}) {
    ... on Asset {
      assetMaterializations(partitions: [$partition]) {
        runId
        metadataEntries {
          label
          ... on IntMetadataEntry { intValue }
          ... on FloatMetadataEntry { floatValue }
          ... on TextMetadataEntry { text }
        }
      }
    }
  }
}
"""


PUBLISHED_QUERY = """
query Published($partition: String!) {
  assetOrError(assetKey: {path: ["published_shards"]}) {
    ... on Asset { assetMaterializations(partitions: [$partition]) { metadataEntries { label } } }
  }
}
"""


def write_instance_config(dagster_home: Path) -> None:
    """SQLite under DAGSTER_HOME as locally, runs queued for the daemon, no first-visit modal over the page."""
    dagster_home.mkdir()
    config = {
        "run_coordinator": {
            "module": "dagster",
            "class": "QueuedRunCoordinator",
            "config": {"dequeue_interval_seconds": 1},
        },
        "telemetry": {"enabled": False},
        "nux": {"enabled": False},
    }
    (dagster_home / "dagster.yaml").write_text(yaml.safe_dump(config))


class MetadataTable(HTMLParser):
    """The first two cells of every table row in the page, as {label: value} text (the first row
    of a label), and every row's cells."""

    def __init__(self):
        super().__init__()
        self.rows: dict[str, str] = {}
        self.all_rows: list[list[str]] = []
        self._cells: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        if tag == "tr":
            self._cells = []
        elif tag == "td" and self._cells is not None:
            self._cells.append("")

    def handle_endtag(self, tag):
        if tag == "tr" and self._cells and len(self._cells) >= 2:
            self.rows.setdefault(self._cells[0].strip(), self._cells[1].strip())
            self.all_rows.append([cell.strip() for cell in self._cells])

    def handle_data(self, data):
        if self._cells:
            self._cells[-1] += data


CHECK_QUERY = """
query Checks {
  assetCheckExecutions(assetKey: {path: ["raw_trial_listing"]}, checkName: "raw_tree_secrets", limit: 10) {
    runId status evaluation { description }
  }
}
"""
TICKS_QUERY = """
query Ticks($sensor: SensorSelector!) {
  sensorOrError(sensorSelector: $sensor) {
    ... on Sensor { sensorState { id ticks(limit: 20) { status skipReason } } }
  }
}
"""
STOP_SENSOR = """
mutation Stop($id: String!) { stopSensor(id: $id) { __typename ... on PythonError { message } } }
"""
RUN_FAILURES_QUERY = """
query Failures($runId: ID!) {
  runOrError(runId: $runId) {
    ... on Run {
      eventConnection {
        events {
          __typename
          ... on ExecutionStepFailureEvent { stepKey error { message } failureMetadata { metadataEntries { label } } }
          ... on RunFailureEvent { error { message } }
        }
      }
    }
  }
}
"""
RUN_TAGS_QUERY = """
query Tags($runId: ID!) { runOrError(runId: $runId) { ... on Run { tags { key value } } } }
"""


def readable_skip_reason(url: str, sensor: dict[str, str], daemon: ServiceProcess, timeout: float = 120) -> str:
    """The first tick's skip reason naming the scope (the sensor has seen it published or in flight)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        state = query(url, TICKS_QUERY, {"sensor": sensor})["sensorOrError"]["sensorState"]
        reasons = [t["skipReason"] for t in state["ticks"] if t["skipReason"] and SAMPLE_RUN in t["skipReason"]]
        if reasons:
            stopped = query(url, STOP_SENSOR, {"id": state["id"]})["stopSensor"]
            assert stopped["__typename"] != "PythonError", stopped  # no retry of the blocked run below
            return reasons[0]
        daemon.require_alive()
        time.sleep(2)
    raise AssertionError(f"no tick of {SENSOR} skipped {SAMPLE_RUN} within {timeout:.0f}s: {state['ticks']}")


def failure_tag(url: str, run_id: str, daemon: ServiceProcess, timeout: float = 120) -> str:
    """The one-line reason `sweep_coverage_after_export` tags a failed export run with."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        tags = {t["key"]: t["value"] for t in query(url, RUN_TAGS_QUERY, {"runId": run_id})["runOrError"]["tags"]}
        if FAILURE_TAG in tags:
            return tags[FAILURE_TAG]
        daemon.require_alive()
        time.sleep(2)
    raise AssertionError(f"run {run_id} not tagged {FAILURE_TAG} within {timeout:.0f}s: {tags}")


def look_at(browser: Browser, url: str, showing: str, out_dir: Path, name: str) -> tuple[str, str, list]:
    """A page once it shows `showing`: its DOM, its text, what of it scrolls sideways; a screenshot kept."""
    browser.open(url, showing)
    browser.screenshot(out_dir / f"{name}.png")
    return browser.dom(), browser.text(), browser.too_wide()


def skipped_tick_details(browser: Browser, out_dir: Path, tries: int = 5) -> str:
    """The sensor page's details of the newest tick that skipped naming the scope (a tick's "0 runs
    requested" opens them), as text; a screenshot kept."""
    for index in range(tries):
        if browser.click("0 runs requested", index, "Skip reason:") and f"'{SAMPLE_RUN}'" in browser.text():
            browser.screenshot(out_dir / "sensor-tick.png")
            return browser.text()
        browser.evaluate("document.dispatchEvent(new KeyboardEvent('keydown', {key: 'Escape', bubbles: true}))")
    raise AssertionError(f"no skipped tick's details name {SAMPLE_RUN}: {browser.text()[:2000]}")


def test_runs_launched_from_graphql_show_in_the_ui(tmp_path):
    chromium = require_binary(CHROMIUM, "chromium")  # before the runs, not after them
    dagster_home = tmp_path / "dagster_home"
    write_instance_config(dagster_home)
    publish_root = tmp_path / "published"
    env = service_env(
        dagster_home,
        TRACE_ASSETS_TRACES_ROOT=str(SAMPLE_TRACES),
        TRACE_ASSETS_PUBLISH_ROOT=str(publish_root),
        TRACE_ASSETS_STAGING_ROOT=str(tmp_path / "staging"),
        TRACE_ASSETS_ON_SECRET="allow",
        TRACE_ASSETS_SENSOR_INTERVAL_SECONDS="5",  # a tick that finds the scope published comes soon
    )
    shots = tmp_path / "shots"
    shots.mkdir()
    with running_webserver(dagster_home, env) as webserver:
        client = DagsterGraphQLClient("127.0.0.1", port_number=webserver.port)
        repository = loaded_repository(webserver.url)
        where = {
            "repository_location_name": repository["repositoryLocationName"],
            "repository_name": repository["repositoryName"],
        }
        added = query(webserver.url, ADD_PARTITION, {"repository": repository, "partitionKey": SAMPLE_RUN})
        assert added["addDynamicPartition"]["__typename"] == "AddDynamicPartitionSuccess", added

        run_id = client.submit_job_execution(JOB, **where, tags={"dagster/partition": SAMPLE_RUN})
        assert client.get_run_status(run_id) == dg.DagsterRunStatus.QUEUED  # nothing dequeues it yet
        with running_daemon(dagster_home, env) as daemon:
            status = wait_for_run(client, run_id, daemon)
            assert status == dg.DagsterRunStatus.SUCCESS, f"run {run_id} {status}\n{daemon.log_tail()}"
            assert (publish_root / SAMPLE_RUN / "coverage.json").exists()
            sensor = {**repository, "sensorName": SENSOR}
            skip_reason = readable_skip_reason(webserver.url, sensor, daemon)
            # The same scope again, under the default policy: the sample's live keys block it this time.
            blocking = {
                "traces_root": str(SAMPLE_TRACES),
                "publish_root": env["TRACE_ASSETS_PUBLISH_ROOT"],
                "staging_root": env["TRACE_ASSETS_STAGING_ROOT"],
                "on_secret": "block",
            }
            blocked_id = client.submit_job_execution(
                JOB,
                **where,
                tags={"dagster/partition": SAMPLE_RUN},
                run_config={"resources": {"trace_config": {"config": blocking}}},
            )
            status = wait_for_run(client, blocked_id, daemon)
            assert status == dg.DagsterRunStatus.FAILURE, f"run {blocked_id} {status}\n{daemon.log_tail()}"
            reason = failure_tag(webserver.url, blocked_id, daemon)
            refresh_id = client.submit_job_execution("refresh_sweep_coverage", **where)
            status = wait_for_run(client, refresh_id, daemon)
            assert status == dg.DagsterRunStatus.SUCCESS, f"run {refresh_id} {status}\n{daemon.log_tail()}"
        # A blocked scope's published folder keeps its scan report and nothing else.
        assert [p.name for p in (publish_root / SAMPLE_RUN).iterdir()] == ["secret_scan.json"]

        materializations = query(webserver.url, COVERAGE_QUERY, {"partition": SAMPLE_RUN})["assetOrError"][
            "assetMaterializations"
        ]
        # The daemon's sensor may export the same run beside ours (its files are old: settled at once).
        [ours] = [m for m in materializations if m["runId"] == run_id]
        metadata = {entry["label"]: entry.get("intValue", entry.get("text")) for entry in ours["metadataEntries"]}
        assert (metadata["trial_dirs"], metadata["scored"], metadata["exported"]) == (36, 34, 28)
        assert metadata["export_ratio"] == "82.4% of scored"
        published = query(webserver.url, PUBLISHED_QUERY, {"partition": SAMPLE_RUN})["assetOrError"]
        published_labels = {e["label"] for e in published["assetMaterializations"][0]["metadataEntries"]}
        assert {"dagster/row_count", "dagster/column_schema"} <= published_labels and "rows" not in published_labels
        run_events = query(webserver.url, RUN_FAILURES_QUERY, {"runId": blocked_id})["runOrError"]["eventConnection"]
        failures = [
            e for e in run_events["events"] if e["__typename"] in ("ExecutionStepFailureEvent", "RunFailureEvent")
        ]
        checks = query(webserver.url, CHECK_QUERY)["assetCheckExecutions"]
        # The raw-tree scan is off: the check says it skipped, in the published run and in the blocked
        # one alike (never "Execution failed" for a run another check blocked).
        ours_and_blocked = [c for c in checks if c["runId"] in (run_id, blocked_id)]
        assert len(ours_and_blocked) == 2 and {c["status"] for c in ours_and_blocked} == {"SUCCEEDED"}, checks
        assert all(
            c["evaluation"]["description"].startswith("skipped: the raw-tree scan is off") for c in ours_and_blocked
        )

        with headless_chromium(chromium, tmp_path / "chromium-profile") as browser:
            dom, partition_text, _ = look_at(
                browser, webserver.url + PARTITION_PAGE, "export_ratio", shots, "asset-page"
            )
            sweep_dom, _, sweep_wide = look_at(browser, webserver.url + SWEEP_PAGE, "why", shots, "sweep-page")
            _, checks_text, _ = look_at(browser, webserver.url + CHECKS_PAGE, "raw_tree_secrets", shots, "checks-page")
            _, runs_text, _ = look_at(browser, f"{webserver.url}/runs", "blocked by check", shots, "runs-list")
            _, run_text, _ = look_at(
                browser, f"{webserver.url}/runs/{blocked_id}", "blocked by check no_live_secrets", shots, "blocked-run"
            )
            sensor_page = f"{webserver.url}/locations/{repository['repositoryLocationName']}/sensors/{SENSOR}"
            _, sensor_text, _ = look_at(browser, sensor_page, SENSOR, shots, "sensor-page")
            tick_text = skipped_tick_details(browser, shots)
    ARTIFACTS.mkdir(exist_ok=True)
    for shot in shots.iterdir():
        shutil.copyfile(shot, ARTIFACTS / shot.name)

    table = MetadataTable()
    table.feed(dom)
    assert SAMPLE_RUN in dom and "Materialized" in dom
    # export_ratio_above_threshold warns (82.4% < 90%): a warning, the partition not counted failed.
    assert "Failed (0)" in partition_text and "Materialized (1)" in partition_text, partition_text[:1500]
    assert (table.rows.get("trial_dirs"), table.rows.get("exported"), table.rows.get("export_ratio")) == (
        "36",
        "28",
        "82.4% of scored",
    ), f"partition page metadata: {table.rows}"
    assert table.rows.get("sessions_skipped") == "none" and "{}" not in table.rows.values()
    # The exclusion table with each reason's meaning, and the excluded trials with their reasons.
    assert "were scored but have no agent/trajectory.json" in dom, "no reason meanings on the partition page"
    assert "excluded_trials" in dom

    # The sensor's tick says, in words, what it found of each scope; never its cursor's JSON.
    assert skip_reason.startswith("1 scope(s)") and f"'{SAMPLE_RUN}'" in skip_reason, skip_reason
    assert not skip_reason.lstrip().startswith("{"), skip_reason
    # Its page lists the ticks (the page also shows the raw cursor); a tick's details show its skip
    # reason, the same words.
    assert "Latest tick" in sensor_text and "runs requested" in sensor_text, sensor_text[:2000]
    shown = tick_text[tick_text.index("Skip reason:") :]
    assert "1 scope(s)" in shown and f"'{SAMPLE_RUN}'" in shown, shown[:2000]
    # The raw-tree scan is off: its check's latest result, in the blocked run, says so, not "Execution failed".
    assert "raw_tree_secrets" in checks_text and "Execution failed" not in checks_text, checks_text[:2000]
    assert "skipped: the raw-tree scan is off" in checks_text, checks_text[:2000]
    # The blocked run: one line, which check blocked it and why, in the runs list (the run's page
    # keeps tags behind "View tags and config").
    assert reason.startswith("blocked by check no_live_secrets on secret_scan_report: credentials found"), reason
    assert "\n" not in reason and FAILURE_TAG in runs_text, runs_text[:2000]
    # Its own page: the step's failure and the run's open with that line (a Failure's description,
    # after its class name), no "1 blocking asset check failed", the stack trace below it.
    assert [e["__typename"] for e in failures] == ["ExecutionStepFailureEvent", "RunFailureEvent"], failures
    for failure in failures:
        first_line = failure["error"]["message"].splitlines()[0]
        assert first_line == f"dagster._core.definitions.events.Failure: {reason}", failure
    assert {m["label"] for m in failures[0]["failureMetadata"]["metadataEntries"]} >= {"verdict", "scan_report"}
    assert "blocking asset check failed" not in run_text, run_text[:3000]
    shown = run_text.index("blocked by check no_live_secrets on secret_scan_report: credentials found")
    assert "Stack Trace" not in run_text[:shown], run_text[:3000]

    # The sweep view: its Markdown table rendered as a table, the scope blocked with its reason and
    # nothing shown as published (its folder holds the scan report alone), all within the page.
    sweep = MetadataTable()
    sweep.feed(sweep_dom)
    status = [row for row in sweep.all_rows if row[:2] == [SAMPLE_RUN, "blocked"]]
    assert status, f"no state on the sweep page: {sweep.all_rows}"
    assert set(status[0][2:-1]) == {"-"}, status[0]
    assert status[0][-1].startswith("blocked by check no_live_secrets"), status[0]
    assert "published to" not in status[0][-1], status[0]
    assert not [row for row in sweep.all_rows if row[:2] == [SAMPLE_RUN, "36"]], f"published row: {sweep.all_rows}"
    assert not sweep_wide, f"the sweep page scrolls sideways: {json.dumps(sweep_wide, indent=1)}"
