"""The pipeline against a real S3 API (moto's server on 127.0.0.1) through s3fs, faults included."""

from __future__ import annotations

import math
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from trace_assets.core.scope import RunScope
from trace_assets.defs.resources import ObjectStorage
from trace_assets.harbor.options import ExportOptions
from trace_assets.harbor.result import TrialSummary, parse_trial_result
from trace_assets.harbor.trial_files import needed_files
from trace_assets.steps.listing import build_listing
from trace_assets.steps.rows import export_rows
from trace_assets.steps.scoring import score_trials
from trace_assets.steps.staged_rows import iter_rows
from trace_assets.steps.staging import RunStaging
from trace_assets.store.s3_options import storage_options
from trace_assets.store.trace_store import FetchError, TraceStore
from trace_assets_tests.support.fault_proxy import Fault
from trace_assets_tests.support.golden_trials import make_job_trials
from trace_assets_tests.support.helpers import SAMPLE_RUN, SAMPLE_TRACES, run_steps
from trace_assets_tests.support.s3_fixtures import make_s3fs, upload_tree


@pytest.fixture(scope="module")
def s3_traces(s3_endpoint, s3_admin_client) -> str:
    """The sample run uploaded once for the module; the tests only read it."""
    bucket = f"traces-{uuid.uuid4().hex[:12]}"
    s3_admin_client.create_bucket(Bucket=bucket)
    root = f"s3://{bucket}/traces"
    upload_tree(SAMPLE_TRACES / SAMPLE_RUN, make_s3fs(s3_endpoint), f"{root}/{SAMPLE_RUN}")
    return root


def _s3_store(root: str, endpoint: str, max_attempts: int = 10) -> TraceStore:
    storage = ObjectStorage(endpoint_url=endpoint, region_name="us-east-1", max_attempts=max_attempts)
    return TraceStore(root, storage_options(storage, root), max_concurrency=16)


def _without_fingerprints(statuses: list[dict]) -> list[dict]:
    return [{k: v for k, v in s.items() if k != "source_fingerprint"} for s in statuses]


def test_s3_run_equals_local_run(tmp_path, s3_traces, s3_endpoint):
    s3 = run_steps(_s3_store(s3_traces, s3_endpoint), SAMPLE_RUN, tmp_path / "s3", include_subagents=True)
    local = run_steps(TraceStore(str(SAMPLE_TRACES)), SAMPLE_RUN, tmp_path / "local", include_subagents=True)
    assert s3[0] == local[0]  # rows
    assert s3[1] == local[1]  # coverage
    assert _without_fingerprints(s3[2]) == _without_fingerprints(local[2])
    listing = pq.read_table(tmp_path / "s3" / SAMPLE_RUN / "raw_trial_listing.parquet").to_pylist()
    assert all(obj["etag"] and obj["modified"] for trial in listing for obj in trial["files"])


def test_one_listing_and_only_needed_objects_are_read(tmp_path, s3_traces, fault_proxy):
    # Any read of an episode prompt would fail the run: the rows must never need one.
    fault_proxy.add_fault(Fault.INTERNAL_ERROR, path_contains="/episode-")
    store = _s3_store(s3_traces, fault_proxy.url)
    staging = RunStaging(tmp_path, RunScope(SAMPLE_RUN))
    listing = build_listing(store, staging)
    listed = fault_proxy.stats
    assert listed["list"] <= math.ceil(listing.objects / 1000) + 1
    assert listed["get"] == 0

    fault_proxy.reset_stats()
    # Each asset makes its own store, as here: no listing cache carries over from the listing step.
    score_trials(_s3_store(s3_traces, fault_proxy.url), staging, 100, lambda _: None)
    coverage, _ = export_rows(
        _s3_store(s3_traces, fault_proxy.url), staging, ExportOptions(subagents="merged"), 100, lambda _: None
    )
    fetched = fault_proxy.stats
    assert fetched["faults_injected"] == 0 and fetched["list"] == 0 and fetched["head"] == 0
    assert coverage.exported == 28 and coverage.rows == 34
    needed = _needed_local_files()
    assert fetched["get"] == len(needed) + 1  # and the run folder's result.json, by name (a 404 here: none)
    assert fetched["response_body_bytes"] <= 1.2 * sum(p.stat().st_size for p in needed)


def _needed_local_files() -> list[Path]:
    """result.json of every trial, and what export needs of those that parse."""
    trials = SAMPLE_TRACES / SAMPLE_RUN / "trace_jobs"
    files = []
    for trial in trials.iterdir():
        keys = [p.relative_to(trial).as_posix() for p in trial.rglob("*") if p.is_file()]
        if "result.json" not in keys:
            continue
        files.append(trial / "result.json")
        if isinstance(parse_trial_result((trial / "result.json").read_bytes(), trial.name), TrialSummary):
            files += [trial / key for key in needed_files(keys, include_subagents=True)]
    return files


def test_throttling_and_dropped_connections_are_retried_with_nothing_lost(
    tmp_path, s3_traces, s3_endpoint, fault_proxy
):
    fault_proxy.add_fault(Fault.SLOW_DOWN, method="GET", path_contains="trajectory", every=3)
    fault_proxy.add_fault(Fault.INTERNAL_ERROR, method="GET", path_contains="result.json", first=4)
    fault_proxy.add_fault(Fault.RESET_CONNECTION, method="GET", path_contains="test-stdout", first=3)
    fault_proxy.add_fault(Fault.SLOW_DOWN, query_contains="list-type=2", first=1)
    faulty = run_steps(_s3_store(s3_traces, fault_proxy.url), SAMPLE_RUN, tmp_path / "faulty", include_subagents=True)
    assert fault_proxy.stats["faults_injected"] >= 10
    clean = run_steps(_s3_store(s3_traces, s3_endpoint), SAMPLE_RUN, tmp_path / "clean", include_subagents=True)
    assert faulty[0] == clean[0] and faulty[1] == clean[1]


def test_a_permanently_unreadable_object_fails_naming_its_key(tmp_path, s3_traces, fault_proxy):
    broken = "stack-bash-30__oaZPnEw/agent/trajectory.json"
    fault_proxy.add_fault(Fault.INTERNAL_ERROR, method="GET", path_contains=broken)
    with pytest.raises(FetchError) as raised:
        run_steps(_s3_store(s3_traces, fault_proxy.url, max_attempts=2), SAMPLE_RUN, tmp_path)
    assert broken in str(raised.value)
    staging = RunStaging(tmp_path, RunScope(SAMPLE_RUN))
    assert not staging.rows.exists() and not staging.statuses.exists()  # nothing half-written
    assert [p.name for p in staging.folder.iterdir() if p.name.startswith(".")] == []


def test_cli_reads_s3_through_aws_environment_variables(tmp_path, s3_traces, s3_endpoint):
    """AWS_ENDPOINT_URL_S3 as botocore defines it: no endpoint in the project's config at all."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRACE_ASSETS_")}
    env.update(AWS_ENDPOINT_URL_S3=s3_endpoint, DAGSTER_HOME=str(tmp_path))
    cli = str(Path(sys.executable).with_name("trace-assets"))
    done = subprocess.run(
        [cli, "runs", "--traces-root", s3_traces], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [SAMPLE_RUN]
    assert "testing" not in done.stdout + done.stderr  # the credentials never show


def test_publishing_to_s3_replaces_the_runs_files(tmp_path, s3_traces, s3_endpoint, s3_bucket, s3fs_filesystem):
    import dagster as dg

    from trace_assets.definitions import build_definitions, export_trace_run, trace_runs
    from trace_assets.defs.resources import config_from_env

    publish_root = f"s3://{s3_bucket}/datasets"
    storage = ObjectStorage(endpoint_url=s3_endpoint, region_name="us-east-1")
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions(trace_runs.name, [SAMPLE_RUN])
        for rows_per_shard, shards in ((10, 3), (1000, 1)):
            trace_config = config_from_env(
                {},
                traces_root=s3_traces,
                publish_root=publish_root,
                staging_root=str(tmp_path / "staging"),
                on_secret="allow",
                max_rows_per_shard=rows_per_shard,
                object_storage=storage,
            )
            job = build_definitions(trace_config).resolve_job_def(export_trace_run.name)
            assert job.execute_in_process(instance=instance, partition_key=SAMPLE_RUN).success
            found = s3fs_filesystem.find(f"{publish_root}/{SAMPLE_RUN}")
            published = sorted(p.rsplit("/", 1)[-1] for p in found if "/sessions/" not in p)
            assert sum(p.endswith(".jsonl") for p in found) == 34  # the sample's session files, main and subagent
            assert f"{publish_root}/{SAMPLE_RUN}/sessions/README.md".removeprefix("s3://") in found  # their card
            assert published == sorted(
                ["README.md", "coverage.json", "rewards.svg", "secret_scan.json", "trials.parquet", "turns.svg"]
                + ["versions.json"]
                + [f"train-{i:05d}-of-{shards:05d}.parquet" for i in range(shards)]
            )


def test_a_job_level_result_json_is_read_once_and_no_parent_is_listed(
    tmp_path, s3_endpoint, s3_admin_client, fault_proxy
):
    """The job folder's result.json comes from the listing, the run folder's is asked for by name."""
    bucket = f"traces-{uuid.uuid4().hex[:12]}"
    s3_admin_client.create_bucket(Bucket=bucket)
    root = f"s3://{bucket}/traces"
    trials = make_job_trials(tmp_path / "local" / "job" / "trace_jobs")
    upload_tree(tmp_path / "local" / "job", make_s3fs(s3_endpoint), f"{root}/job")
    staging = RunStaging(tmp_path / "s3", RunScope("job"))
    build_listing(_s3_store(root, fault_proxy.url), staging)

    fault_proxy.reset_stats()
    score_trials(_s3_store(root, fault_proxy.url), staging, 100, lambda _: None)
    requests = fault_proxy.stats
    assert requests["list"] == 0 and requests["head"] == 0
    assert requests["get"] == len(trials) + 2  # each trial's result.json, the job's, the run folder's (a 404)
    export_rows(_s3_store(root, s3_endpoint), staging, ExportOptions(), 100, lambda _: None)
    s3_rows = [row for table in iter_rows(staging.require_rows()) for row in table.to_pylist()]
    local_rows, _, _ = run_steps(TraceStore(str(tmp_path / "local")), "job", tmp_path / "staging")
    assert s3_rows == local_rows
    assert {row["result"] for row in s3_rows} >= {"AgentTimeoutError", "ApiError"}
