"""The way a person uses it: webserver and daemon running, runs launched over GraphQL, the UI looked at.

Real `dagster-webserver` and `dagster-daemon` processes on the project's workspace.yaml, queued
runs dequeued by the daemon (one published, one blocked by the secret scan), the metadata read
back over GraphQL, and the pages a publisher opens rendered by one headless Chromium into
screenshots, their text and layout checked: formatted figures, the raw-tree check absent while its scan
is off (no "Execution failed" after the failed runs), every check's description, the sensor's
readable status in `status`'s words, the blocked run's one-line reason (its tag, and first on its
page), the sweep view's states within the page's width (on the asset's Overview tab, every scope
with its state), the CLI's run on the job's page beside the UI's, under the code location's tag and
left off the Overview timeline as the docs say, a UI Materialize held by dagster.yaml's limits, a misspelled
partition's failure naming the closest run and the sensor naming the partition, and the recheck
job's Launchpad opening on a valid config.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path

import dagster as dg
import pytest
import yaml
from dagster_graphql import DagsterGraphQLClient

from trace_assets.cli.backfill_api import query
from trace_assets.core.run_tags import CODE_LOCATION_TAG, FAILURE_TAG
from trace_assets_tests.support.browser import Browser, headless_chromium
from trace_assets_tests.support.cli_processes import CLI
from trace_assets_tests.support.helpers import PROJECT_DIR, SAMPLE_RUN, SAMPLE_TRACES
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
SWEEP_OVERVIEW = "/assets/sweep_coverage"  # where the asset opens: its metadata beside its definition
CHECKS_PAGE = "/assets/raw_trial_listing?view=checks"
ROWS_CHECKS_PAGE = "/assets/last_episode_rows?view=checks"
NO_CHECKS = "No checks defined for this asset"  # the checks tab of an asset without any
SENSOR = "new_trace_runs_sensor"
MISSPELLED = "rl-sampel-run"  # a partition added in the UI that names no run under the traces root
EXPORT_ASSET_PATHS = [
    ["raw_trial_listing"], ["scored_trials"], ["last_episode_rows"], ["secret_scan_report"], ["published_shards"]
]  # fmt: skip
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
    """SQLite under DAGSTER_HOME as locally, runs queued for the daemon under the project's limits,
    no first-visit modal over the page."""
    dagster_home.mkdir()
    project = yaml.safe_load((PROJECT_DIR / "dagster.yaml").read_text())
    config = {
        "run_coordinator": {
            "module": "dagster",
            "class": "QueuedRunCoordinator",
            "config": {"dequeue_interval_seconds": 1},
        },
        "concurrency": project["concurrency"],
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
SECRETS_CHECK_QUERY = """
query Checks {
  assetCheckExecutions(assetKey: {path: ["secret_scan_report"]}, checkName: "no_live_secrets", limit: 10) {
    runId status evaluation { metadataEntries { label ... on TextMetadataEntry { text } } }
  }
}
"""
SECRETS_CHECKS_PAGE = "/assets/secret_scan_report?view=checks"
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
# The runs a job's page lists: the UI filters by the job's name and its code location's tag.
JOB_RUNS_QUERY = """
query JobRuns($filter: RunsFilter!) { runsOrError(filter: $filter) { ... on Runs { results { runId } } } }
"""
RUN_QUEUE_QUERY = "{ instance { runQueueConfig { tagConcurrencyLimitsYaml } } }"
# The Overview timeline's query (dagster-webserver's useRunsForTimeline): the runs that ended in a
# window, each drawn in its job's row by its repositoryOrigin, a run without one left out.
TIMELINE_QUERY = """
query Timeline($filter: RunsFilter!) {
  completed: runsOrError(filter: $filter, limit: 500) {
    ... on Runs { results { id pipelineName repositoryOrigin { repositoryName repositoryLocationName } } }
  }
}
"""
# The UI's Materialize of assets for one partition: a run of the implicit asset job, the assets selected.
LAUNCH_ASSETS = """
mutation Launch($params: ExecutionParams!) {
  launchRun(executionParams: $params) {
    __typename
    ... on LaunchRunSuccess { run { runId } }
    ... on PythonError { message }
    ... on Error { message }
  }
}
"""
CHECK_DESCRIPTIONS_QUERY = """
query Descriptions {
  assetNodes {
    assetKey { path }
    assetChecksOrError { ... on AssetChecks { checks { name description } } }
  }
}
"""
RECHECK_DEFAULT_QUERY = """
query Recheck($selector: PipelineSelector!) {
  runConfigSchemaOrError(selector: $selector) {
    ... on RunConfigSchema {
      rootDefaultYaml
      isRunConfigValid(runConfigData: {}) { __typename }
    }
  }
}
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


def materialize_from_ui(url: str, repository: dict[str, str], partition: str) -> str:
    """The UI's Materialize of the export assets for one partition, as its button launches it: a run
    of Dagster's implicit asset job, tagged with the partition only."""
    selector = {
        **repository,
        "pipelineName": "__ASSET_JOB",
        "assetSelection": [{"path": p} for p in EXPORT_ASSET_PATHS],
    }
    params = {
        "selector": selector,
        "mode": "default",
        "executionMetadata": {"tags": [{"key": "dagster/partition", "value": partition}]},
    }
    launched = query(url, LAUNCH_ASSETS, {"params": params})["launchRun"]
    assert launched["__typename"] == "LaunchRunSuccess", launched
    return launched["run"]["runId"]


def run_tags(url: str, run_id: str) -> dict[str, str]:
    return {t["key"]: t["value"] for t in query(url, RUN_TAGS_QUERY, {"runId": run_id})["runOrError"]["tags"]}


def job_page_runs(url: str, repository: dict[str, str], job: str) -> set[str]:
    """The run ids the job's page lists: its name, and its code location's tag, as the UI filters."""
    label = f"{repository['repositoryName']}@{repository['repositoryLocationName']}"
    runs_filter = {"pipelineName": job, "tags": [{"key": ".dagster/repository", "value": label}]}
    results = query(url, JOB_RUNS_QUERY, {"filter": runs_filter})["runsOrError"]["results"]
    return {run["runId"] for run in results}


def key_limits_holding(url: str, tags: dict[str, str]) -> list[dict]:
    """The instance's tag limits on a key alone (any value) that count a run with `tags`."""
    config = query(url, RUN_QUEUE_QUERY)["instance"]["runQueueConfig"]
    limits = yaml.safe_load(config["tagConcurrencyLimitsYaml"] or "[]")
    return [limit for limit in limits if limit.get("value") is None and limit["key"] in tags]


def timeline_runs(url: str, since: float) -> dict[str, dict]:
    """The finished runs the timeline's query returns for the window from `since` to now, by id."""
    statuses = ["SUCCESS", "FAILURE", "CANCELED"]
    window = {"statuses": statuses, "updatedAfter": since, "updatedBefore": time.time() + 1}
    return {run["id"]: run for run in query(url, TIMELINE_QUERY, {"filter": window})["completed"]["results"]}


@pytest.fixture
def short_publish_root() -> Iterator[Path]:
    """A publish root as short as a user's (`~/datasets`): the sweep view's file paths, shown whole
    on the asset's Overview tab, would widen its value column past the page as tmp_path's do."""
    with tempfile.TemporaryDirectory(prefix="ta-published-") as folder:
        yield Path(folder)


def test_runs_launched_from_graphql_show_in_the_ui(tmp_path, short_publish_root):
    chromium = require_binary(CHROMIUM, "chromium")  # before the runs, not after them
    started = time.time()
    dagster_home = tmp_path / "dagster_home"
    write_instance_config(dagster_home)
    publish_root = short_publish_root
    env = service_env(
        dagster_home,
        TRACE_ASSETS_TRACES_ROOT=str(SAMPLE_TRACES),
        TRACE_ASSETS_PUBLISH_ROOT=str(publish_root),
        TRACE_ASSETS_STAGING_ROOT=str(tmp_path / "staging"),
        TRACE_ASSETS_ON_SECRET="allow",
        TRACE_ASSETS_SENSOR_INTERVAL_SECONDS="5",  # a tick that finds the scope published comes soon
    )
    # The README's way first: `trace-assets materialize` on the UI's instance, in its own process.
    cli = subprocess.run([CLI, "materialize", SAMPLE_RUN], env=env, cwd=tmp_path, capture_output=True, text=True)
    assert cli.returncode == 0, cli.stderr
    cli_run_id = json.loads(cli.stdout.splitlines()[-1])["dagster_run_id"]
    assert f"the UI lists these runs under Runs and on job {JOB}'s page, not on the Overview timeline" in cli.stderr
    shots = tmp_path / "shots"
    shots.mkdir()
    with (
        running_webserver(dagster_home, env) as webserver,
        headless_chromium(chromium, tmp_path / "chromium-profile") as browser,
    ):
        client = DagsterGraphQLClient("127.0.0.1", port_number=webserver.port)
        repository = loaded_repository(webserver.url)
        where = {
            "repository_location_name": repository["repositoryLocationName"],
            "repository_name": repository["repositoryName"],
        }
        # The CLI registered the sample's partition; this one as a user mistypes it in "Add partition".
        added = query(webserver.url, ADD_PARTITION, {"repository": repository, "partitionKey": MISSPELLED})
        assert added["addDynamicPartition"]["__typename"] == "AddDynamicPartitionSuccess", added

        run_id = client.submit_job_execution(JOB, **where, tags={"dagster/partition": SAMPLE_RUN})
        assert client.get_run_status(run_id) == dg.DagsterRunStatus.QUEUED  # nothing dequeues it yet
        with running_daemon(dagster_home, env) as daemon:
            status = wait_for_run(client, run_id, daemon)
            assert status == dg.DagsterRunStatus.SUCCESS, f"run {run_id} {status}\n{daemon.log_tail()}"
            assert (publish_root / SAMPLE_RUN / "coverage.json").exists()
            ui_id = materialize_from_ui(webserver.url, repository, SAMPLE_RUN)
            status = wait_for_run(client, ui_id, daemon)
            assert status == dg.DagsterRunStatus.SUCCESS, f"run {ui_id} {status}\n{daemon.log_tail()}"
            # The checks of a published run, before a failed run becomes the latest.
            _, secrets_text, _ = look_at(
                browser, webserver.url + SECRETS_CHECKS_PAGE, "no_live_secrets", shots, "secrets-check-page"
            )
            refresh_id = client.submit_job_execution("refresh_sweep_coverage", **where)
            status = wait_for_run(client, refresh_id, daemon)
            assert status == dg.DagsterRunStatus.SUCCESS, f"run {refresh_id} {status}\n{daemon.log_tail()}"
            published_sweep_dom, _, published_sweep_wide = look_at(
                browser, webserver.url + SWEEP_OVERVIEW, "published_at", shots, "sweep-overview-published"
            )
            published_sweep_wide += browser.clipped()
            misspelled_id = client.submit_job_execution(JOB, **where, tags={"dagster/partition": MISSPELLED})
            status = wait_for_run(client, misspelled_id, daemon)
            assert status == dg.DagsterRunStatus.FAILURE, f"run {misspelled_id} {status}\n{daemon.log_tail()}"
            misspelled_reason = failure_tag(webserver.url, misspelled_id, daemon)
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
        # A blocked scope's published folder keeps its scan report and the withdrawn version's history.
        assert sorted(p.name for p in (publish_root / SAMPLE_RUN).iterdir()) == ["secret_scan.json", "versions.json"]

        # One job whoever launched it: the CLI's run is listed on the job's page beside the UI's.
        listed = job_page_runs(webserver.url, repository, JOB)
        assert {cli_run_id, run_id, blocked_id} <= listed, (cli_run_id, listed)
        # With the code location's tag the UI's runs carry, so filtering Runs by it finds the CLI's.
        location = repository["repositoryLocationName"]
        assert run_tags(webserver.url, ui_id)[CODE_LOCATION_TAG] == location
        assert run_tags(webserver.url, cli_run_id)[CODE_LOCATION_TAG] == location
        by_location = {"tags": [{"key": CODE_LOCATION_TAG, "value": location}]}
        in_location = query(webserver.url, JOB_RUNS_QUERY, {"filter": by_location})["runsOrError"]["results"]
        assert cli_run_id in {run["runId"] for run in in_location}
        # The Overview timeline draws a run by its launch's origin in the code location, which a run
        # executed in the CLI's process has none of (Dagster's API sets it on no such run): the query
        # returns the CLI's run, the timeline leaves it out; the CLI and docs/operations.md say so.
        timeline = timeline_runs(webserver.url, started)
        drawn = {run_id for run_id, run in timeline.items() if run["repositoryOrigin"]}
        assert {run_id, ui_id, blocked_id} <= drawn, timeline
        assert cli_run_id in timeline and cli_run_id not in drawn, timeline[cli_run_id]
        # The UI's Materialize runs the implicit asset job, with none of the project's tags; the
        # limit on the partition tag every export run carries holds it all the same (at most 3).
        ui_tags = run_tags(webserver.url, ui_id)
        assert [limit["limit"] for limit in key_limits_holding(webserver.url, ui_tags)] == [3], ui_tags
        assert key_limits_holding(webserver.url, run_tags(webserver.url, cli_run_id))  # and the CLI's kind

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
        # no_live_secrets passed because the policy allows live keys and redacts unverified ones (the
        # sample's near misses with generated bodies): its verdict says both.
        secrets = {c["runId"]: c for c in query(webserver.url, SECRETS_CHECK_QUERY)["assetCheckExecutions"]}
        verdict = {e["label"]: e.get("text") for e in secrets[ui_id]["evaluation"]["metadataEntries"]}["verdict"]
        expected = "live, redacted by policy: published without them, allowed by policy: published with them"
        assert verdict == expected, secrets[ui_id]
        nodes = query(webserver.url, CHECK_DESCRIPTIONS_QUERY)["assetNodes"]
        descriptions = {
            check["name"]: check["description"]
            for node in nodes
            for check in (node["assetChecksOrError"].get("checks") or [])
        }
        # The raw-tree scan is off: its check is not defined, so no run plans it.
        assert len(descriptions) == 3 and all(descriptions.values()) and "raw_tree_secrets" not in descriptions
        recheck = query(
            webserver.url, RECHECK_DEFAULT_QUERY, {"selector": {**repository, "pipelineName": "recheck_scopes"}}
        )["runConfigSchemaOrError"]
        assert recheck["isRunConfigValid"]["__typename"] == "PipelineConfigValidationValid", recheck
        assert "scopes" in recheck["rootDefaultYaml"] and SAMPLE_RUN in recheck["rootDefaultYaml"], recheck

        location = f"{webserver.url}/locations/{repository['repositoryLocationName']}"
        # After the misspelled and the blocked runs: no check of the listing, none "Execution failed".
        _, checks_text, _ = look_at(browser, webserver.url + CHECKS_PAGE, NO_CHECKS, shots, "checks-page")
        _, rows_checks_text, _ = look_at(
            browser, webserver.url + ROWS_CHECKS_PAGE, "coverage_accounts_for_every_folder", shots, "rows-checks-page"
        )
        dom, partition_text, _ = look_at(browser, webserver.url + PARTITION_PAGE, "export_ratio", shots, "asset-page")
        sweep_dom, _, sweep_wide = look_at(browser, webserver.url + SWEEP_PAGE, "why", shots, "sweep-page")
        overview_dom, _, overview_wide = look_at(
            browser, webserver.url + SWEEP_OVERVIEW, "published_at", shots, "sweep-overview"
        )
        overview_wide += browser.clipped()
        _, runs_text, _ = look_at(browser, f"{webserver.url}/runs", "blocked by check", shots, "runs-list")
        _, run_text, _ = look_at(
            browser, f"{webserver.url}/runs/{blocked_id}", "blocked by check no_live_secrets", shots, "blocked-run"
        )
        _, job_text, _ = look_at(browser, f"{location}/jobs/{JOB}/runs", cli_run_id[:8], shots, "job-runs")
        _, launchpad_text, _ = look_at(
            browser, f"{location}/jobs/recheck_scopes/playground", "scopes", shots, "recheck-launchpad"
        )
        _, sensor_text, _ = look_at(browser, f"{location}/sensors/{SENSOR}", SENSOR, shots, "sensor-page")
        tick_text = skipped_tick_details(browser, shots)
    ARTIFACTS.mkdir(exist_ok=True)
    for shot in shots.iterdir():
        shutil.copyfile(shot, ARTIFACTS / shot.name)

    table = MetadataTable()
    table.feed(dom)
    assert SAMPLE_RUN in dom and "Materialized" in dom
    # export_ratio_above_threshold warns (82.4% < 90%): a warning, the partition not counted failed
    # (the one failed partition is the misspelled one).
    assert "Failed (1)" in partition_text and "Materialized (1)" in partition_text, partition_text[:1500]
    assert (table.rows.get("trial_dirs"), table.rows.get("exported"), table.rows.get("export_ratio")) == (
        "36",
        "28",
        "82.4% of scored",
    ), f"partition page metadata: {table.rows}"
    assert table.rows.get("sessions_skipped") == "none" and "{}" not in table.rows.values()
    # The exclusion table with each reason's meaning, and the excluded trials with their reasons.
    assert "were scored but have no agent/trajectory.json" in dom, "no reason meanings on the partition page"
    assert "excluded_trials" in dom

    # The sensor's tick says, in words, what it found of each scope; never its cursor's JSON: in
    # `status`'s words, without guessing who published, and the mistyped partition with its remedy.
    assert skip_reason.startswith("2 scope(s): 1 published and unchanged, 1 with no run"), skip_reason
    assert f"'{SAMPLE_RUN}': published and unchanged" in skip_reason and "by the CLI" not in skip_reason
    assert f"`trace-assets forget {MISSPELLED}` removes it" in skip_reason, skip_reason
    # Its page lists the ticks (the page also shows the raw cursor); a tick's details show its skip
    # reason, the same words.
    assert "Latest tick" in sensor_text and "runs requested" in sensor_text, sensor_text[:2000]
    shown = tick_text[tick_text.index("Skip reason:") :]
    # (a tick still running as the sensor was stopped may have seen the blocked run launched then: it
    # follows a run anyone launched, so it says that run is on its way rather than "published")
    seen = ("published and unchanged", f"'{SAMPLE_RUN}': export requested, not published yet (run {blocked_id} is")
    assert any(words in shown for words in seen), shown[:2000]
    assert f"'{MISSPELLED}': a partition with no run" in shown, shown[:2000]
    # The misspelled partition's run fails naming the closest run, as the CLI's pre-flight does.
    assert f"no run '{MISSPELLED}' under" in misspelled_reason, misspelled_reason
    assert misspelled_reason.endswith(f"did you mean '{SAMPLE_RUN}'?"), misspelled_reason
    # The raw-tree scan is off: the listing's page shows no check of it, so nothing failed there.
    assert "raw_tree_secrets" not in checks_text and "Execution failed" not in checks_text, checks_text[:3000]
    assert "No description provided" not in secrets_text, secrets_text[:3000]
    # What is left (docs/operations.md, "Checks after a failed run"): the misspelled partition's run
    # left the rows' checks "Execution failed" there, so the check list marks the blocking check
    # Failed, while its panel shows its latest execution, the sample's, Passed.
    check_list = rows_checks_text[rows_checks_text.index("Checks (2)") : rows_checks_text.index("About")]
    assert "Failed" in check_list.split("export_ratio_above_threshold")[0], check_list
    panel = rows_checks_text[rows_checks_text.index("Latest execution") :]
    assert "Passed" in panel and SAMPLE_RUN in panel, panel[:1000]
    assert "Passes when the rows hold no credential the policy blocks on" in secrets_text, secrets_text[:3000]
    # The CLI's run on the job's page; the recheck job's Launchpad on a config it can launch.
    assert cli_run_id[:8] in job_text and "No runs found" not in job_text, job_text[:2000]
    assert SAMPLE_RUN in launchpad_text and "Missing required config entry" not in launchpad_text, launchpad_text[:2000]
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
    assert set(status[0][2:]) == {"-"}, status[0]
    # Why, on a row of its own in the second table.
    whys = [row[1] for row in sweep.all_rows if row[0] == SAMPLE_RUN and row[1].startswith("blocked by check")]
    assert whys, f"no reason on the sweep page: {sweep.all_rows}"
    why = whys[0]
    assert why.startswith("blocked by check no_live_secrets") and "published to" not in why, why
    assert [SAMPLE_RUN, "36"] not in [row[:2] for row in sweep.all_rows], f"published row: {sweep.all_rows}"
    # The misspelled partition: gone from the traces root (as `status` says it), with its remedy.
    [gone] = [row[:2] for row in sweep.all_rows if row[0] == MISSPELLED and row[1] != "gone from the traces root"]
    assert gone[1].endswith(f"trace-assets forget {MISSPELLED} removes it"), sweep.all_rows
    assert not sweep_wide, f"the sweep page scrolls sideways: {json.dumps(sweep_wide, indent=1)}"
    # Where the asset opens, its Overview tab: every scope with its state, published or not (the
    # blocked one and the misspelled partition, gone from the traces root as `status` says it),
    # whole within a 1,600 px window.
    overview = MetadataTable()
    overview.feed(overview_dom)
    assert [SAMPLE_RUN, "blocked", "-", "-", "-"] in overview.all_rows, overview.all_rows
    assert [MISSPELLED, "gone from the traces root", "-", "-", "-"] in overview.all_rows, overview.all_rows
    assert not overview_wide, f"the Overview tab cuts a table off: {json.dumps(overview_wide, indent=1)}"
    # Published, its figures and when, whole there too.
    published_sweep = MetadataTable()
    published_sweep.feed(published_sweep_dom)
    rows = [row for row in published_sweep.all_rows if row[:3] == [SAMPLE_RUN, "published", "28"] and len(row) == 5]
    assert rows, f"no published row on the Overview tab: {published_sweep.all_rows}"
    assert len(rows[0][4]) == len("2026-01-31 23:59") and "UTC" not in rows[0][4], rows[0]
    assert not published_sweep_wide, f"the Overview tab cuts a table off: {json.dumps(published_sweep_wide, indent=1)}"
