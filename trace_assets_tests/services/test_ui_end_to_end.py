"""The way a person uses it: webserver and daemon running, a run launched over GraphQL, the UI looked at.

Real `dagster-webserver` and `dagster-daemon` processes on the project's workspace.yaml, a
queued run dequeued by the daemon, the coverage metadata read back over GraphQL, and the asset's
partition page and the sweep view's page rendered by headless Chromium into screenshots (and
their DOM checked: formatted figures, the scopes' states).
"""

from __future__ import annotations

import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import dagster as dg
import pytest
import yaml
from dagster_graphql import DagsterGraphQLClient

from trace_assets.backfill_api import query
from trace_assets_tests.support.helpers import SAMPLE_RUN
from trace_assets_tests.support.service_processes import (
    CHROMIUM,
    require_binary,
    running_daemon,
    running_webserver,
    service_env,
    stop_process_group,
)
from trace_assets_tests.support.webserver_graphql import loaded_repository, wait_for_run

JOB = "export_trace_run"
ARTIFACTS = Path(__file__).resolve().parent.parent / ".artifacts"
# The asset's Partitions tab with one partition selected: its latest materialization and metadata.
PARTITION_PAGE = f"/assets/last_episode_rows?view=partitions&partition={SAMPLE_RUN}"
SWEEP_PAGE = "/assets/sweep_coverage?view=events"  # its latest materialization, metadata shown
CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-proxy-server",
    "--window-size=1600,1200",
    "--virtual-time-budget=15000",  # the UI is a JS app: let it fetch and render before the capture
]  # fmt: skip
# The whole run in its worker process: a subprocess per step re-imports the code, doubling the test's time.
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


def render_page(chromium: Path, url: str, out_dir: Path, name: str = "asset-page") -> tuple[Path, str]:
    """A screenshot of the page and its rendered DOM, from one headless Chromium in its own process group."""
    screenshot = out_dir / f"{name}.png"
    command = [
        str(chromium), *CHROMIUM_FLAGS, f"--user-data-dir={out_dir / 'chromium-profile'}",
        f"--screenshot={screenshot}", "--dump-dom", url,
    ]  # fmt: skip
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        dom, errors = process.communicate(timeout=120)
    finally:
        stop_process_group(process, grace_seconds=5)
    assert process.returncode == 0 and screenshot.exists(), f"chromium failed ({process.returncode}):\n{errors[-3000:]}"
    return screenshot, dom


def test_run_launched_from_graphql_shows_coverage_in_the_ui(tmp_path):
    chromium = require_binary(CHROMIUM, "chromium")  # before the run, not after it
    dagster_home = tmp_path / "dagster_home"
    write_instance_config(dagster_home)
    publish_root = tmp_path / "published"
    env = service_env(
        dagster_home,
        TRACE_ASSETS_PUBLISH_ROOT=str(publish_root),
        TRACE_ASSETS_STAGING_ROOT=str(tmp_path / "staging"),
        TRACE_ASSETS_ON_SECRET="allow",
    )
    with running_webserver(dagster_home, env) as webserver:
        client = DagsterGraphQLClient("127.0.0.1", port_number=webserver.port)
        repository = loaded_repository(webserver.url)
        added = query(webserver.url, ADD_PARTITION, {"repository": repository, "partitionKey": SAMPLE_RUN})
        assert added["addDynamicPartition"]["__typename"] == "AddDynamicPartitionSuccess", added

        run_id = client.submit_job_execution(
            JOB,
            repository_location_name=repository["repositoryLocationName"],
            repository_name=repository["repositoryName"],
            tags={"dagster/partition": SAMPLE_RUN},
        )
        assert client.get_run_status(run_id) == dg.DagsterRunStatus.QUEUED  # nothing dequeues it yet
        with running_daemon(dagster_home, env) as daemon:
            status = wait_for_run(client, run_id, daemon)
            assert status == dg.DagsterRunStatus.SUCCESS, f"run {run_id} {status}\n{daemon.log_tail()}"
            refresh_id = client.submit_job_execution(
                "refresh_sweep_coverage",
                repository_location_name=repository["repositoryLocationName"],
                repository_name=repository["repositoryName"],
            )
            status = wait_for_run(client, refresh_id, daemon)
            assert status == dg.DagsterRunStatus.SUCCESS, f"run {refresh_id} {status}\n{daemon.log_tail()}"
        assert (publish_root / SAMPLE_RUN / "coverage.json").exists()

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
        assert {"dagster/row_count", "dagster/column_schema"} <= published_labels

        screenshot, dom = render_page(chromium, webserver.url + PARTITION_PAGE, tmp_path)
        sweep_screenshot, sweep_dom = render_page(chromium, webserver.url + SWEEP_PAGE, tmp_path, "sweep-page")
    ARTIFACTS.mkdir(exist_ok=True)
    for shot in (screenshot, sweep_screenshot):
        shutil.copyfile(shot, ARTIFACTS / shot.name)

    table = MetadataTable()
    table.feed(dom)
    assert SAMPLE_RUN in dom and "Materialized" in dom
    assert (table.rows.get("trial_dirs"), table.rows.get("exported"), table.rows.get("export_ratio")) == (
        "36",
        "28",
        "82.4% of scored",
    ), f"partition page metadata: {table.rows}"
    assert table.rows.get("sessions_skipped") == "none" and "{}" not in table.rows.values()
    # The exclusion table with each reason's meaning, and the excluded trials with their reasons.
    assert "were scored but have no agent/trajectory.json" in dom, "no reason meanings on the partition page"
    assert "excluded_trials" in dom

    # The sweep view: its Markdown table rendered as a table, the scope's state beside it, the bars' figures.
    sweep = MetadataTable()
    sweep.feed(sweep_dom)
    status = [row for row in sweep.all_rows if row[:2] == [SAMPLE_RUN, "published"]]
    assert status, f"no state on the sweep page: {sweep.all_rows}"
    assert status[0][2:4] == ["28 / 34", "████████░░ 82.4%"] and status[0][-1].startswith("excluded: 3 no_trajectory")
