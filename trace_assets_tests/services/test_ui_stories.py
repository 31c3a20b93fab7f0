"""The stories test_ui_end_to_end leaves out, read in a real Chromium as a user reads them: the
sensor exporting a new scope and naming a blocked and a vanished one on its page, a block over a
published version saying on the run's page that the version before is kept, a recheck after a
policy change publishing the blocked scope, and a block withdrawing a version that holds the keys
(its run's page, published_shards' events, `status`).

One webserver and one daemon on the project's workspace, the sensor ticking every 5 s with no
settling wait; the code location's policy redacts, and the block is a run launched with the
default policy (`on_secret: block`) in its run config, as the Launchpad launches it: to the sensor
and `recheck`, the location's policy is the one changed since.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from pathlib import Path

import dagster as dg
import pytest
from dagster_graphql import DagsterGraphQLClient

from trace_assets.cli.backfill_api import query
from trace_assets_tests.services.test_ui_end_to_end import (
    ADD_PARTITION,
    ARTIFACTS,
    JOB,
    SENSOR,
    TICKS_QUERY,
    failure_tag,
    look_at,
    write_instance_config,
)
from trace_assets_tests.support.browser import Browser, headless_chromium
from trace_assets_tests.support.cli_processes import CLI
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

SCOPE = "story-run"  # a copy of the sample, exported by the sensor
VANISHED = "story-gone"  # a partition whose run is no longer under the traces root
PARTITION_RUNS_QUERY = """
query PartitionRuns($filter: RunsFilter!) {
  runsOrError(filter: $filter) { ... on Runs { results { runId jobName status } } }
}
"""
pytestmark = pytest.mark.filterwarnings("ignore:Using variable_values:DeprecationWarning")


def export_runs(url: str, partition: str) -> dict[str, str]:
    """The export runs of a partition, whoever launched them: {run id: status}."""
    runs_filter = {"tags": [{"key": "dagster/partition", "value": partition}]}
    results = query(url, PARTITION_RUNS_QUERY, {"filter": runs_filter})["runsOrError"]["results"]
    return {run["runId"]: run["status"] for run in results if run["jobName"] == JOB}


def next_sensor_run(url: str, partition: str, known: set[str], daemon: ServiceProcess, timeout: float = 180) -> str:
    """The id of the first export run of `partition` not in `known` (the sensor requested it)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        new = set(export_runs(url, partition)) - known
        if new:
            return new.pop()
        daemon.require_alive()
        time.sleep(2)
    raise AssertionError(f"{SENSOR} requested no run of {partition} within {timeout:.0f}s\n{daemon.log_tail()}")


def tick_reason(url: str, sensor: dict[str, str], *parts: str, daemon: ServiceProcess, timeout: float = 120) -> str:
    """The newest tick's skip reason holding every one of `parts`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ticks = query(url, TICKS_QUERY, {"sensor": sensor})["sensorOrError"]["sensorState"]["ticks"]
        for tick in ticks:
            if tick["skipReason"] and all(part in tick["skipReason"] for part in parts):
                return tick["skipReason"]
        daemon.require_alive()
        time.sleep(2)
    raise AssertionError(f"no tick of {SENSOR} said {parts} within {timeout:.0f}s: {ticks[:3]}")


WITHDRAWN_PAGE = "assets/published_shards?view=events&partition="  # its events, for one partition


def tick_details(browser: Browser, showing: str, shots: Path, name: str, tries: int = 8) -> str:
    """The sensor page's details of a skipped tick (its "0 runs requested" opens them) that show
    `showing`, as text; a screenshot kept."""
    for index in range(tries):
        if browser.click("0 runs requested", index, "Skip reason:") and showing in browser.text():
            browser.screenshot(shots / f"{name}.png")
            return browser.text()
        browser.evaluate("document.dispatchEvent(new KeyboardEvent('keydown', {key: 'Escape', bubbles: true}))")
    raise AssertionError(f"no skipped tick's details show {showing!r}: {browser.text()[:2000]}")


def test_sensor_block_and_recheck_read_in_the_ui(tmp_path):
    chromium = require_binary(CHROMIUM, "chromium")
    dagster_home = tmp_path / "dagster_home"
    write_instance_config(dagster_home)
    traces = tmp_path / "traces"
    shutil.copytree(SAMPLE_TRACES / SAMPLE_RUN, traces / SCOPE)
    env = service_env(
        dagster_home,
        TRACE_ASSETS_TRACES_ROOT=str(traces),
        TRACE_ASSETS_PUBLISH_ROOT=str(tmp_path / "published"),
        TRACE_ASSETS_STAGING_ROOT=str(tmp_path / "staging"),
        TRACE_ASSETS_ON_SECRET="redact",  # the policy changed since the block below
        TRACE_ASSETS_SETTLE_SECONDS="0",
        TRACE_ASSETS_SENSOR_INTERVAL_SECONDS="5",
    )
    shots = tmp_path / "shots"
    shots.mkdir()
    with (
        running_webserver(dagster_home, env) as webserver,
        headless_chromium(chromium, tmp_path / "chromium-profile") as browser,
    ):
        url = webserver.url
        client = DagsterGraphQLClient("127.0.0.1", port_number=webserver.port)
        repository = loaded_repository(url)
        where = {
            "repository_location_name": repository["repositoryLocationName"],
            "repository_name": repository["repositoryName"],
        }
        sensor = {**repository, "sensorName": SENSOR}
        added = query(url, ADD_PARTITION, {"repository": repository, "partitionKey": VANISHED})
        assert added["addDynamicPartition"]["__typename"] == "AddDynamicPartitionSuccess", added
        with running_daemon(dagster_home, env) as daemon:
            # (c) A new scope: the sensor exports it, and it publishes (the location redacts).
            first = next_sensor_run(url, SCOPE, set(), daemon)
            assert wait_for_run(client, first, daemon) == dg.DagsterRunStatus.SUCCESS, daemon.log_tail()
            # (f) A block over that published version: the default policy, in the run's config.
            blocking = {
                key: env[f"TRACE_ASSETS_{key.upper()}"] for key in ("traces_root", "publish_root", "staging_root")
            }
            blocked = client.submit_job_execution(
                JOB,
                **where,
                tags={"dagster/partition": SCOPE},
                run_config={"resources": {"trace_config": {"config": {**blocking, "on_secret": "block"}}}},
            )
            assert wait_for_run(client, blocked, daemon) == dg.DagsterRunStatus.FAILURE, daemon.log_tail()
            reason = failure_tag(url, blocked, daemon)
            _, run_text, _ = look_at(browser, f"{url}/runs/{blocked}", "blocked by check", shots, "story-blocked-run")
            # (c) The sensor's next ticks: the blocked scope as blocked, the vanished one with its remedy.
            blocked_tick = tick_reason(url, sensor, f"'{SCOPE}': blocked by check", VANISHED, daemon=daemon)
            location = f"{url}/locations/{repository['repositoryLocationName']}"
            _, sensor_text, _ = look_at(browser, f"{location}/sensors/{SENSOR}", SENSOR, shots, "story-sensor-page")
            blocked_details = tick_details(browser, f"'{SCOPE}': blocked by check", shots, "story-tick-blocked")
            # (d) Recheck after the policy change: the sensor exports the blocked scope again, and it publishes.
            rechecked = subprocess.run([CLI, "recheck", SCOPE], env=env, cwd=tmp_path, capture_output=True, text=True)
            assert rechecked.returncode == 0, rechecked.stderr
            again = next_sensor_run(url, SCOPE, {first, blocked}, daemon)
            assert wait_for_run(client, again, daemon) == dg.DagsterRunStatus.SUCCESS, daemon.log_tail()
            published_tick = tick_reason(url, sensor, f"'{SCOPE}': published and unchanged", daemon=daemon)
            look_at(browser, f"{location}/sensors/{SENSOR}", SENSOR, shots, "story-sensor-page-published")
            published_details = tick_details(browser, f"'{SCOPE}': published", shots, "story-tick-published")
            _, runs_text, _ = look_at(browser, f"{url}/runs", again[:8], shots, "story-runs")
            # (e) A backfill of the scope from the CLI, through this webserver: its page in the UI.
            backfill = subprocess.run(
                [CLI, "backfill", SCOPE, "--webserver", url, "--wait"],
                env=env,
                cwd=tmp_path,
                capture_output=True,
                text=True,
            )
            assert backfill.returncode == 0, backfill.stderr + daemon.log_tail()
            backfill_done = json.loads(backfill.stdout.splitlines()[-1])
            # The page shows the backfill's end once the daemon's next iteration has counted it.
            _, backfill_text, _ = look_at(
                browser, f"{url}/runs/b/{backfill_done['backfill_id']}", "100% completed", shots, "story-backfill-page"
            )
            status = subprocess.run([CLI, "status"], env=env, cwd=tmp_path, capture_output=True, text=True)
            # (g) A block over a version published with the keys as they are withdraws it.
            runs = {}
            for on_secret in ("allow", "block"):
                runs[on_secret] = client.submit_job_execution(
                    JOB,
                    **where,
                    tags={"dagster/partition": SCOPE},
                    run_config={"resources": {"trace_config": {"config": {**blocking, "on_secret": on_secret}}}},
                )
                wait_for_run(client, runs[on_secret], daemon)
            withdrawn_reason = failure_tag(url, runs["block"], daemon)
            _, withdrawn_run_text, _ = look_at(
                browser, f"{url}/runs/{runs['block']}", "blocked by check", shots, "story-withdrawn-run"
            )
            _, shards_text, _ = look_at(
                browser, f"{url}/{WITHDRAWN_PAGE}{SCOPE}", "withdrawn", shots, "story-withdrawn-published-shards"
            )
        withdrawn_status = subprocess.run([CLI, "status"], env=env, cwd=tmp_path, capture_output=True, text=True)
    ARTIFACTS.mkdir(exist_ok=True)
    for shot in shots.iterdir():
        shutil.copyfile(shot, ARTIFACTS / shot.name)

    # (f) The run's page opens with the one failure line, which ends saying what became of the
    # version published before: kept, since it holds the live keys redacted.
    assert reason.startswith("blocked by check no_live_secrets on secret_scan_report: credentials found"), reason
    assert "the version published before is kept" in reason, reason
    shown = run_text.index("blocked by check no_live_secrets")
    assert "the version published before is kept" in run_text[shown:], run_text[:3000]
    assert "Stack Trace" not in run_text[:shown], run_text[:3000]
    assert [p.name for p in (tmp_path / "published" / SCOPE).iterdir()] != ["secret_scan.json"]
    # (c) The new scope: the sensor's page lists the tick that requested its run, and the run.
    assert "1 run requested" in sensor_text and first[:8] in sensor_text, sensor_text[:3000]
    # (c) The tick names the blocked scope blocked (never "published and unchanged") with how to
    # lift it, and the vanished partition with the command that removes it; the page says the same.
    assert f"'{SCOPE}': published and unchanged" not in blocked_tick, blocked_tick
    assert f"`trace-assets recheck {SCOPE}`" in blocked_tick, blocked_tick
    assert f"`trace-assets forget {VANISHED}` removes it" in blocked_tick, blocked_tick
    shown = blocked_details[blocked_details.index("Skip reason:") :]
    assert f"'{SCOPE}': blocked by check no_live_secrets" in shown and f"'{VANISHED}'" in shown, shown[:2000]
    # (d) After the recheck, the scope reads published: on the tick, its page, the runs list and `status`.
    assert published_tick.count(SCOPE) == 1, published_tick
    assert f"'{SCOPE}': published" in published_details, published_details[:2000]
    assert again[:8] in runs_text and "Success" in runs_text, runs_text[:2000]
    # (e) The backfill's page: the partition it targeted, every asset of it done.
    assert backfill_done["status"] == "COMPLETED_SUCCESS", backfill_done
    assert SCOPE in backfill_text and "100% completed" in backfill_text, backfill_text[:2000]
    assert "0% completed" not in backfill_text.replace("100% completed", ""), backfill_text[:2000]
    assert status.returncode == 0, status.stderr
    [row] = [line.split() for line in status.stdout.splitlines() if line.startswith(SCOPE)]
    assert row[1] == "published", status.stdout
    # (g) The withdrawal: the run's line says it, published_shards' events say it after the last
    # materialization (which Dagster cannot retract), `status` shows nothing published, and the
    # folder keeps the scan report and the history that records the block.
    assert "; the version published before is withdrawn: it holds " in withdrawn_reason, withdrawn_reason
    assert "the version published before is withdrawn" in withdrawn_run_text, withdrawn_run_text[:3000]
    assert f"withdrawn by run {runs['block']}" in shards_text, shards_text[:3000]
    [row] = [line.split() for line in withdrawn_status.stdout.splitlines() if line.startswith(SCOPE)]
    assert row[1] == "blocked" and row[2] == "-", withdrawn_status.stdout
    folder = tmp_path / "published" / SCOPE
    assert sorted(p.name for p in folder.iterdir()) == ["secret_scan.json", "versions.json"]
    assert json.loads((folder / "versions.json").read_text())["versions"][-1]["blocked"]["previous_version"] == (
        "withdrawn"
    )
