"""A traces root on a Hub Storage Bucket (`hf://buckets/...`), read by the real huggingface_hub client
from the project's Hub stand-in: the same published bytes as a folder and `s3://`, the requests
it takes, faults, and the messages for a bucket that cannot be read."""

from __future__ import annotations

import math
import os
import subprocess
import sys
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from huggingface_hub import HfApi
from huggingface_hub import constants as hf_constants

from trace_assets.core.scope import RunScope
from trace_assets.defs.resources import ObjectStorage
from trace_assets.harbor.options import ExportOptions
from trace_assets.harbor.result import TrialSummary, parse_trial_result
from trace_assets.harbor.trial_files import needed_files
from trace_assets.publishing.card import CardContext
from trace_assets.publishing.card_facts import gather_facts
from trace_assets.publishing.dataset_folder import build_run_folder
from trace_assets.secret_scan.scanner import ScanOptions
from trace_assets.steps.listing import build_listing
from trace_assets.steps.rows import export_rows
from trace_assets.steps.scan import scan_run
from trace_assets.steps.scoring import score_trials
from trace_assets.steps.sessions import staged_sessions
from trace_assets.steps.staged_rows import iter_rows
from trace_assets.steps.staging import RunStaging
from trace_assets.store.hub_bucket import BucketNotReadable
from trace_assets.store.s3_options import storage_options
from trace_assets.store.trace_store import FetchError, TraceStore
from trace_assets_tests.support.generate_traces import generate_run
from trace_assets_tests.support.helpers import SAMPLE_RUN, SAMPLE_TRACES, run_steps, stage_rows
from trace_assets_tests.support.hub_server import BucketFault, HubStandIn
from trace_assets_tests.support.s3_fixtures import make_s3fs, upload_tree

pytest_plugins = ["trace_assets_tests.support.hub_server"]

BUCKET = "org/traces"
ROOT = f"hf://buckets/{BUCKET}/sweeps"  # runs under a prefix, as a cluster's sync writes them
LONG_AGO = datetime.now(UTC) - timedelta(days=3)
# The per-trial fingerprints hash each object's change token and time, which differ by store.
STORE_DEPENDENT_COLUMNS = ["source_fingerprint"]


def put_tree(hub: HubStandIn, local: Path, prefix: str, bucket_id: str = BUCKET) -> dict[str, bytes]:
    """Every file under `local` into the bucket under `prefix`, as a sync of the folder would."""
    files = {f"{prefix}/{p.relative_to(local).as_posix()}": p.read_bytes() for p in local.rglob("*") if p.is_file()}
    hub.put_bucket_files(bucket_id, files, uploaded_at=LONG_AGO)
    return files


@pytest.fixture
def sample_bucket(hub_server: HubStandIn) -> HubStandIn:
    hub_server.create_bucket(BUCKET)
    put_tree(hub_server, SAMPLE_TRACES / SAMPLE_RUN, f"sweeps/{SAMPLE_RUN}")
    return hub_server


def publish(store: TraceStore, folder: Path) -> dict[str, bytes]:
    """Listing, scoring, rows with session files, scan, and the dataset folder (as `published_shards`
    builds it, less date and location): the published files' bytes by path."""
    staging = RunStaging(folder / "staging", RunScope(SAMPLE_RUN))
    options = ExportOptions(subagents="merged")
    coverage, _ = stage_rows(store, staging, options, 100, sessions=True)["last_episode_rows"]
    sessions = staged_sessions(staging)
    rows = staging.require_rows()
    report = scan_run(rows, SAMPLE_RUN, ScanOptions(), sessions)
    out = folder / "published"
    card = CardContext(facts=gather_facts(staging, rows), plots=True)
    build_run_folder(
        out, rows, staging.statuses, coverage, report, 10, None, options, sessions, card, staging.scope.source_prefix
    )
    return {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*") if p.is_file()}


def same_publish(first: dict[str, bytes], second: dict[str, bytes], folder: Path) -> None:
    """Equal file for file and byte for byte, but `trials.parquet`'s store-dependent fingerprints."""
    assert sorted(first) == sorted(second)
    for name in first:
        if name == "trials.parquet":
            tables = []
            for side, data in (("a", first[name]), ("b", second[name])):
                (folder / f"{side}.parquet").write_bytes(data)
                tables.append(pq.read_table(folder / f"{side}.parquet").drop(STORE_DEPENDENT_COLUMNS))
            assert tables[0] == tables[1]
        else:
            assert first[name] == second[name], name


def test_a_bucket_folder_and_s3_publish_the_same_dataset(tmp_path, sample_bucket, s3_endpoint, s3_admin_client):
    s3_bucket = f"traces-{uuid.uuid4().hex[:12]}"
    s3_admin_client.create_bucket(Bucket=s3_bucket)
    s3_root = f"s3://{s3_bucket}/sweeps"
    upload_tree(SAMPLE_TRACES / SAMPLE_RUN, make_s3fs(s3_endpoint), f"{s3_root}/{SAMPLE_RUN}")
    storage = ObjectStorage(endpoint_url=s3_endpoint, region_name="us-east-1")

    folder = publish(TraceStore(str(SAMPLE_TRACES)), tmp_path / "folder")
    bucket = publish(TraceStore(ROOT), tmp_path / "bucket")
    s3 = publish(TraceStore(s3_root, storage_options(storage, s3_root)), tmp_path / "s3")
    assert any(name.startswith("sessions/") for name in bucket) and "README.md" in bucket
    same_publish(bucket, folder, tmp_path)
    same_publish(bucket, s3, tmp_path)
    listing = pq.read_table(tmp_path / "bucket" / "staging" / SAMPLE_RUN / "raw_trial_listing.parquet").to_pylist()
    assert all(obj["etag"] and obj["modified"] for trial in listing for obj in trial["files"])  # xet hash, time


def _needed_bytes(trace_jobs: Path) -> int:
    """result.json of every trial, and what export needs of those that parse (as test_s3 counts it)."""
    needed = 0
    for trial in (p for p in trace_jobs.iterdir() if p.is_dir()):
        keys = [p.relative_to(trial).as_posix() for p in trial.rglob("*") if p.is_file()]
        if "result.json" not in keys:
            continue
        needed += (trial / "result.json").stat().st_size
        if isinstance(parse_trial_result((trial / "result.json").read_bytes(), trial.name), TrialSummary):
            needed += sum((trial / key).stat().st_size for key in needed_files(keys, include_subagents=True))
    return needed


def test_a_300_trial_run_reads_rows_equal_to_a_folder_with_one_listing_and_the_needed_bytes(tmp_path, hub_server):
    local = tmp_path / "local"
    generate_run(local, "big-run", trials=300, seed=11, prompt_scale=0.05)
    hub_server.create_bucket(BUCKET)
    hub_server.tree_page_size = 1000  # 15 pages, as the Hub pages its tree
    files = put_tree(hub_server, local / "big-run", "sweeps/big-run")
    store = TraceStore(ROOT)
    staging = RunStaging(tmp_path / "bucket", RunScope("big-run"))

    listing = build_listing(store, staging)
    listed = hub_server.bucket_requests()
    objects = [path for path in files if "/trace_jobs/" in path]
    assert listing.trial_dirs == 300 and listing.objects == len(objects)
    assert all("/tree/" in r.path for r in listed)
    assert len(listed) <= math.ceil(len(objects) / hub_server.tree_page_size) + 2

    before = len(hub_server.requests)
    score_trials(TraceStore(ROOT), staging, 100, lambda _: None)
    coverage, _ = export_rows(TraceStore(ROOT), staging, ExportOptions(subagents="merged"), 100, lambda _: None)
    reads = hub_server.requests[before:]
    assert not [r for r in reads if "/tree/" in r.path]  # no listing after the listing step
    fetched = sum(r.body_bytes for r in reads if r.status in (200, 206))
    assert fetched <= 1.05 * _needed_bytes(local / "big-run" / "trace_jobs")

    rows = [row for table in iter_rows(staging.require_rows()) for row in table.to_pylist()]
    folder_rows, folder_coverage, _ = run_steps(
        TraceStore(str(local)), "big-run", tmp_path / "folder", options=ExportOptions(subagents="merged")
    )
    assert coverage.exported == folder_coverage.exported and rows == folder_rows


def test_429s_and_dropped_connections_leave_the_published_bytes_unchanged(tmp_path, sample_bucket, caplog):
    clean = publish(TraceStore(ROOT), tmp_path / "clean")
    sample_bucket.bucket_faults = {BucketFault.RATE_LIMITED: 0.10, BucketFault.RESET: 0.02}
    faulty = publish(TraceStore(ROOT), tmp_path / "faulty")
    injected = sample_bucket.bucket_faults_injected
    assert injected[BucketFault.RATE_LIMITED] >= 5 and injected[BucketFault.RESET] >= 1, injected
    assert faulty == clean  # byte for byte, fingerprints included


def test_a_file_that_stays_unreadable_fails_the_scope_naming_it(tmp_path, sample_bucket):
    broken = f"sweeps/{SAMPLE_RUN}/trace_jobs/stack-bash-30__oaZPnEw/agent/trajectory.json"
    sample_bucket.unreadable_bucket_paths.add(broken)
    with pytest.raises(FetchError) as raised:
        run_steps(TraceStore(ROOT), SAMPLE_RUN, tmp_path)
    assert "stack-bash-30__oaZPnEw/agent/trajectory.json" in str(raised.value)
    staging = RunStaging(tmp_path, RunScope(SAMPLE_RUN))
    assert not staging.rows.exists() and not staging.statuses.exists()  # nothing half-written


def test_an_edit_changes_the_listing_fingerprint_through_the_xet_hash(tmp_path, sample_bucket):
    key = f"sweeps/{SAMPLE_RUN}/trace_jobs/stack-bash-30__oaZPnEw/result.json"
    first = list(TraceStore(ROOT).iter_run(RunScope(SAMPLE_RUN)))
    content = sample_bucket.bucket_file(BUCKET, key)
    sample_bucket.put_bucket_files(BUCKET, {key: content.replace(b"{", b"{ ", 1)}, uploaded_at=LONG_AGO)
    second = list(TraceStore(ROOT).iter_run(RunScope(SAMPLE_RUN)))
    tokens = [dict(zip(page.keys, page.etags)) for page in (first[0], second[0])]
    changed = [k for k in tokens[0] if tokens[0][k] != tokens[1][k]]
    assert changed == ["stack-bash-30__oaZPnEw/result.json"]


def _cli(tmp_path: Path, hub: HubStandIn, *args: str, token: str | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TRACE_ASSETS_", "HF_"))}
    env.update(
        DAGSTER_HOME=str(tmp_path / "dagster_home"),
        HF_HOME=str(tmp_path / "hf_home"),  # no `hf auth login` token file
        HF_ENDPOINT=hub.url,
        HF_HUB_DISABLE_XET="1",
        HF_HUB_DISABLE_TELEMETRY="1",
        **({"HF_TOKEN": token} if token else {}),
    )
    cli = str(Path(sys.executable).with_name("trace-assets"))
    return subprocess.run([cli, *args], capture_output=True, text=True, env=env, timeout=300)


def test_the_cli_lists_a_private_bucket_with_a_token_and_names_hf_token_without_one(tmp_path, hub_server):
    hub_server.create_bucket("org/private", private=True)
    put_tree(hub_server, SAMPLE_TRACES / SAMPLE_RUN, f"sweeps/{SAMPLE_RUN}", "org/private")
    root = "hf://buckets/org/private/sweeps"

    listed = _cli(tmp_path, hub_server, "runs", "--traces-root", root, token=hub_server.token)
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.split() == [SAMPLE_RUN]
    assert hub_server.token not in listed.stdout + listed.stderr

    published = tmp_path / "published"
    refused = _cli(
        tmp_path, hub_server, "materialize", SAMPLE_RUN, "--traces-root", root, "--publish-root", str(published)
    )
    assert refused.returncode != 0
    assert "HF_TOKEN" in refused.stderr and "org/private" in refused.stderr
    assert not published.exists()  # refused before any work
    assert not [r for r in hub_server.bucket_requests() if "/resolve/" in r.path]


def test_a_missing_bucket_and_a_prefix_without_runs_have_their_own_messages(tmp_path, sample_bucket):
    missing = _cli(
        tmp_path, sample_bucket, "runs", "--traces-root", "hf://buckets/org/nothing-here", token=sample_bucket.token
    )
    assert missing.returncode != 0
    assert "the bucket 'org/nothing-here' does not exist" in missing.stderr

    empty = _cli(tmp_path, sample_bucket, "runs", "--traces-root", f"{ROOT}-typo", token=sample_bucket.token)
    assert empty.returncode != 0
    assert f"the bucket {BUCKET!r} holds no folders under the prefix 'sweeps-typo'" in empty.stderr

    no_runs = _cli(
        tmp_path,
        sample_bucket,
        "backfill",
        "--all",
        "--traces-root",
        f"{ROOT}/{SAMPLE_RUN}/trace_jobs",
        "--publish-root",
        str(tmp_path / "out"),
    )
    assert no_runs.returncode != 0
    assert "no runs under" in no_runs.stderr


def test_a_dataset_repo_is_refused_as_a_traces_root(tmp_path, hub_server):
    refused = _cli(tmp_path, hub_server, "runs", "--traces-root", "hf://datasets/org/traces")
    assert refused.returncode != 0
    assert "hf://buckets/<namespace>/<bucket>[/<prefix>]" in refused.stderr


def test_hostile_names_are_read_as_themselves_never_as_another_file(hub_server):
    """A `..` or `.` part, `?`, `#`, `%`, glob characters: each key's GET reads that key, so a name
    cannot lead to another file of the bucket (nor outside the traces root's prefix)."""
    hub_server.create_bucket(BUCKET)
    keys = ["t/../../../secret.json", "t/./y.json", "t/a b?c#d%20e.json", "t/[*]{?}.json", "t/é☃.json", "t//z.json"]
    decoys = {"secret.json": b"outside the root", "sweeps/r/trace_jobs/t/y.json": b"another file"}
    hub_server.put_bucket_files(BUCKET, {f"sweeps/r/trace_jobs/{key}": key.encode() for key in keys} | decoys)
    store = TraceStore(ROOT)
    listed = sorted(key for page in store.iter_run(RunScope("r")) for key in page.keys)
    assert listed == sorted([*keys, "t/y.json"])
    assert store.fetch(RunScope("r"), keys) == {key: key.encode() for key in keys}
    assert store.fetch_range(RunScope("r"), keys[0], 2, 4) == keys[0].encode()[2:6]


def test_the_sensor_s_listing_of_a_private_bucket_without_a_token_names_hf_token(monkeypatch, tmp_path, hub_server):
    monkeypatch.setattr(hf_constants, "HF_TOKEN_PATH", str(tmp_path / "no-token-file"))
    hub_server.create_bucket("org/private", private=True)
    with pytest.raises(BucketNotReadable, match="no Hub token is set \\(set HF_TOKEN, or run `hf auth login`\\)"):
        TraceStore("hf://buckets/org/private/sweeps").run_folders()
    monkeypatch.setenv("HF_TOKEN", hub_server.token)
    assert TraceStore("hf://buckets/org/private/sweeps").run_folders() == []


def test_the_stand_in_answers_the_client_s_bucket_calls(sample_bucket):
    """What huggingface_hub itself asks of a bucket, answered as the client parses it."""
    api = HfApi()
    key = f"sweeps/{SAMPLE_RUN}/trace_jobs/stack-bash-30__oaZPnEw/result.json"
    info = api.bucket_info(BUCKET)
    assert info.id == BUCKET and not info.private and info.total_files > 1000
    [found] = api.get_bucket_paths_info(BUCKET, [key, "sweeps/not-there.json"])
    assert (found.path, found.size) == (key, len(sample_bucket.bucket_file(BUCKET, key))) and found.xet_hash
    top = list(api.list_bucket_tree(BUCKET, "sweeps"))
    assert [(entry.type, entry.path) for entry in top] == [("directory", f"sweeps/{SAMPLE_RUN}")]
