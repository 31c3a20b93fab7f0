"""`trace-assets status` as a user meets it on their first day: after `make demo`'s publish, and
after `forget`; the sweep view agrees with it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import dagster as dg

from trace_assets.definitions import build_definitions
from trace_assets.defs.assets import published_shards
from trace_assets.defs.partitions import register_scopes
from trace_assets.defs.resources import config_from_env
from trace_assets.defs.sweep import refresh_sweep_coverage, sweep_coverage
from trace_assets_tests.support.cli_processes import cli_env, run_cli
from trace_assets_tests.support.helpers import SAMPLE_RUN, SAMPLE_TRACES


def _status_scopes(tmp_path: Path) -> dict[str, list[str]]:
    """Each scope `status` lists, with the cells of its line."""
    done = run_cli(["status"], tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split()[0] == "scope"
    return {line.split()[0]: line.split() for line in lines[1::2]}


def test_the_demo_publish_reads_redacted(tmp_path):
    """`make demo`'s command: the sample's live credentials are redacted, so what went out, and what
    `status` says, is `redacted` (the scan's own verdict, `live`, stays on secret_scan_report)."""
    out = tmp_path / "out"
    done = run_cli(
        ["materialize", SAMPLE_RUN, "--traces-root", str(SAMPLE_TRACES), "--publish-root", str(out)]
        + ["--on-secret", "redact"],
        tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads((out / SAMPLE_RUN / "secret_scan.json").read_text())["verdict"] == "redacted"

    status = _status_scopes(tmp_path)
    assert list(status) == [SAMPLE_RUN] and status[SAMPLE_RUN][7] == "redacted"
    with dg.DagsterInstance.from_config(str(tmp_path / "dagster_home")) as instance:
        event = instance.get_latest_materialization_event(published_shards.key)
        assert event is not None and event.asset_materialization is not None
        assert event.asset_materialization.metadata["secret_verdict"].value == "redacted"


def test_status_reads_publishes_recorded_before_and_odd_figures(tmp_path):
    """A redacted publish recorded while `secret_verdict` held the scan's verdict reads `redacted` by
    its counts; a NaN or infinite mean reward reads as unknown, and nothing crashes."""
    odd = {"older-demo": ("live", {"github_token": 2}, 0.5), "nan-run": ("clean", {}, float("nan"))}
    odd["inf-run"] = ("clean", {}, float("inf"))
    cli_env(tmp_path)  # the CLI's Dagster home, with its dagster.yaml
    with dg.DagsterInstance.from_config(str(tmp_path / "dagster_home")) as instance:
        register_scopes(instance, list(odd))
        for scope, (verdict, redacted, reward) in odd.items():
            metadata = {"secret_verdict": verdict, "redacted": dg.MetadataValue.json(redacted), "mean_reward": reward}
            instance.report_runless_asset_event(
                dg.AssetMaterialization(published_shards.key, partition=scope, metadata=metadata)
            )
    status = _status_scopes(tmp_path)
    assert status["older-demo"][7] == "redacted" and status["older-demo"][5] == "0.500"
    assert status["nan-run"][5] == "-" and status["inf-run"][5] == "-"


def test_a_forgotten_run_leaves_status_and_the_sweep_view(tmp_path):
    traces, out = tmp_path / "traces", tmp_path / "out"
    for run in ("gone-run", "kept-run"):
        shutil.copytree(SAMPLE_TRACES / SAMPLE_RUN, traces / run)
    flags = ["--traces-root", str(traces), "--publish-root", str(out), "--on-secret", "redact"]
    done = run_cli(["materialize", "gone-run", "kept-run", *flags], tmp_path)
    assert done.returncode == 0, done.stderr
    assert list(_status_scopes(tmp_path)) == ["gone-run", "kept-run"]

    shutil.rmtree(traces / "gone-run")  # forget takes only runs gone from the traces root
    forgot = run_cli(["forget", "gone-run", "--traces-root", str(traces)], tmp_path)
    assert forgot.returncode == 0, forgot.stderr
    assert list(_status_scopes(tmp_path)) == ["kept-run"]

    config = config_from_env({}, traces_root=str(traces), publish_root=str(out), staging_root=str(tmp_path / "staging"))
    refresh = build_definitions(config).resolve_job_def(refresh_sweep_coverage.name)
    with dg.DagsterInstance.from_config(str(tmp_path / "dagster_home")) as instance:
        assert refresh.execute_in_process(instance=instance).success
        event = instance.get_latest_materialization_event(sweep_coverage.key)
        assert event is not None and event.asset_materialization is not None
        table = event.asset_materialization.metadata["scopes"].value
    assert [r.data["scope"] for r in table.records] == ["kept-run"]
