"""Staging on the S3 server: each of the five steps in a process of its own, with an empty temp dir,
publishes the same bytes as a run on local staging; a killed step and a rerun keep the cache."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import dagster as dg
import pytest

from trace_assets.core.scope import RunScope
from trace_assets.defs.jobs import ASSETS
from trace_assets.defs.partitions import register_scopes
from trace_assets.steps.staging import RunStaging
from trace_assets.steps.staging_mirror import StagingMirror
from trace_assets_tests.support.cli_processes import cli_env, run_cli
from trace_assets_tests.support.helpers import SAMPLE_RUN, SAMPLE_TRACES

pytestmark = pytest.mark.services
DAGSTER = str(Path(sys.executable).with_name("dagster"))
STEPS = [asset.key.to_user_string() for asset in ASSETS]


# What differs between two publishes of the same rows: when they happened (the card's version
# history) and the folder the card's usage snippet names.
_PUBLISHED_AT = re.compile(rb"\d{4}-\d\d-\d\d[ T]\d\d:\d\d[^|\"]*")


def _tree(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): _PUBLISHED_AT.sub(
            b"<when>", p.read_bytes().replace(bytes(folder), b"<folder>")
        )
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def _step(step: str, environment: dict[str, str], scratch: Path) -> subprocess.Popen:
    """One asset (and its checks) of the sample run, in a new process whose temp dir is `scratch`."""
    scratch.mkdir(parents=True)
    command = [DAGSTER, "asset", "materialize", "-m", "trace_assets.definitions", "--select", step]
    return subprocess.Popen(
        [*command, "--partition", SAMPLE_RUN],
        env={**environment, "TMPDIR": str(scratch)},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )


def _run_steps(environment: dict[str, str], scratch: Path, steps: list[str] = STEPS) -> None:
    for step in steps:
        process = _step(step, environment, scratch / f"{step}-{uuid.uuid4().hex[:6]}")
        output, _ = process.communicate(timeout=300)
        assert process.returncode == 0, output[-3000:]


def _cache_figures(home: Path) -> dict[str, int]:
    """How many trials the scoring and rows steps read, and how many they took from staging."""
    figures = {}
    with dg.DagsterInstance.from_config(str(home)) as instance:
        for asset in ("scored_trials", "last_episode_rows"):
            event = instance.get_latest_materialization_event(dg.AssetKey(asset))
            assert event is not None and event.asset_materialization is not None
            metadata = event.asset_materialization.metadata
            figures.update({k: int(v.value) for k, v in metadata.items() if k.endswith(("_read", "_unchanged"))})
    return figures


def test_five_processes_on_s3_staging_publish_the_local_bytes_and_keep_the_cache(
    tmp_path, s3_endpoint, s3_admin_client, s3_bucket
):
    common = {"TRACE_ASSETS_TRACES_ROOT": str(SAMPLE_TRACES), "TRACE_ASSETS_ON_SECRET": "redact"}
    for name in ("local", "s3"):
        (tmp_path / name).mkdir()
    local = run_cli(
        ["materialize", SAMPLE_RUN], tmp_path / "local", TRACE_ASSETS_PUBLISH_ROOT=str(tmp_path / "pub-local"), **common
    )
    assert local.returncode == 0, local.stderr

    staging_url = f"s3://{s3_bucket}/staging"
    environment = {
        **cli_env(tmp_path / "s3", TRACE_ASSETS_PUBLISH_ROOT=str(tmp_path / "pub-s3"), **common),
        "TRACE_ASSETS_STAGING_ROOT": staging_url,
        "TRACE_ASSETS_STAGING_LEASE_SECONDS": "4",
        "AWS_ENDPOINT_URL": s3_endpoint,
    }
    home = Path(environment["DAGSTER_HOME"])
    with dg.DagsterInstance.from_config(str(home)) as instance:
        register_scopes(instance, [SAMPLE_RUN])

    _run_steps(environment, tmp_path / "round1")
    assert _tree(tmp_path / "pub-s3" / SAMPLE_RUN) == _tree(tmp_path / "pub-local" / SAMPLE_RUN)
    first = _cache_figures(home)
    assert first["result_json_read"] > 0 and first["trials_read"] > 0

    # Interrupt: the rows step killed mid-run (its lease left behind), then rerun on empty disks.
    killed = _step("last_episode_rows", environment, tmp_path / "killed")
    time.sleep(6)
    os.killpg(killed.pid, signal.SIGKILL)
    killed.wait()
    _run_steps(environment, tmp_path / "round2", STEPS[:3])
    assert _cache_figures(home) == {
        "result_json_read": 0,
        "result_json_unchanged": first["result_json_read"],
        "trials_read": 0,
        "trials_unchanged": first["trials_read"],
    }


def test_mirror_round_trip_is_incremental_and_removes_what_went(tmp_path, s3_endpoint, s3_bucket, monkeypatch):
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3_endpoint)
    mirror = StagingMirror(f"s3://{s3_bucket}/staging", {"skip_instance_cache": True})
    writer = RunStaging(tmp_path / "a", RunScope.from_key("run/step-25"), mirror)
    with writer.locked(print):
        writer.folder.mkdir(parents=True)
        (writer.folder / "coverage.json").write_text("{}\n")
        (writer.folder / "last_episode_rows").mkdir()
        (writer.folder / "last_episode_rows" / "part-00000.parquet").write_bytes(b"rows")
    reader = RunStaging(tmp_path / "b", RunScope.from_key("run/step-25"), mirror)
    with reader.locked(print):
        assert _tree(reader.folder) == _tree(writer.folder)
        (reader.folder / "coverage.json").unlink()
    with writer.locked(print):
        assert _tree(writer.folder) == {"last_episode_rows/part-00000.parquet": b"rows"}
    assert mirror.push("run/step-25", writer.folder, writer.mirror_records) == 0  # nothing changed
    writer.remove()
    assert mirror.remote_manifest("run/step-25") == {}
