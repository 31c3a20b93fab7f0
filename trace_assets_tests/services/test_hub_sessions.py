"""Publishing at real sizes: 300 shards and 3,000 session files through a Hub stand-in that allows
100 files per commit and fails one write in ten, with the real huggingface_hub client."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from trace_assets.publishing.hub import PublishedCommit, RetryPolicy, publish_run_folder
from trace_assets.runtime.progress import Progress, quiet

if TYPE_CHECKING:  # imported at runtime by pytest_plugins, so pytest can rewrite its asserts
    from trace_assets_tests.support.hub_server import HubStandIn

pytestmark = [
    pytest.mark.services,
    pytest.mark.filterwarnings("ignore:Use 'content=<...>' to upload raw bytes:DeprecationWarning"),
]

REPO_ID = "acme/harbor-traces"
TITLE = "Publish traces of run big-run"
NO_WAIT = RetryPolicy(attempts=10, wait_seconds=0)
PR_REF = "refs/pr/1"


def write_version(root: Path, version: str, shards: int, sessions: int) -> Path:
    """A dataset folder shaped like a large run: shards, session files in buckets, the small files."""
    folder = root / version
    (folder / "data").mkdir(parents=True)
    for index in range(shards):
        table = pa.table({"trial_name": [f"{version}-trial-{index}"], "shard": [index]})
        pq.write_table(table, folder / "data" / f"train-{index:05d}-of-{shards:05d}.parquet")
    for index in range(sessions):
        path = folder / "sessions" / f"{index % 256:02x}" / f"trial-{index}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        header = {"type": "session", "harness": "terminus-2", "id": f"trial-{index}", "name": version}
        path.write_text(json.dumps(header) + "\n")
    (folder / "README.md").write_text(f"---\nconfigs: []\n---\n# {version}\n")
    (folder / "coverage.json").write_text(json.dumps({"version": version}))
    return folder


def local_files(folder: Path) -> dict[str, bytes]:
    return {path.relative_to(folder).as_posix(): path.read_bytes() for path in folder.rglob("*") if path.is_file()}


def publish(hub: HubStandIn, folder: Path, progress: Progress = quiet) -> PublishedCommit:
    return publish_run_folder(
        folder, REPO_ID, token=hub.token, endpoint=hub.url, commit_message=TITLE, retry=NO_WAIT, progress=progress
    )


def published(hub: HubStandIn, revision: str = "main") -> dict[str, bytes]:
    return {path: data for path, data in hub.files(REPO_ID, revision).items() if path != ".gitattributes"}


def test_a_large_version_goes_up_in_batches_and_main_moves_once(
    hub_server_at_scale: HubStandIn, tmp_path: Path
) -> None:
    hub = hub_server_at_scale
    folder = write_version(tmp_path, "v1", shards=300, sessions=3000)
    lines: list[str] = []

    result = publish(hub, folder, lines.append)

    assert published(hub) == local_files(folder)
    initial, merge = hub.commits(REPO_ID)  # main: created, then the whole version in one step
    assert merge.title.startswith("Merge pull request #1") and result.commit_oid == merge.oid
    batches = hub.commits(REPO_ID, PR_REF)[1:]
    assert len(batches) >= 3302 // 100 and all(len(c.added) + len(c.deleted) <= 100 for c in batches)
    assert hub.pull_request_status(REPO_ID, 1) == "merged"
    assert hub.failures_injected > 0, "the run met failures and went through them"
    # Every shard's content was uploaded once, before the commits that name it.
    assert len(hub.requests_to("PUT", r"^/lfs-storage/")) == 300
    assert "(100%)" in lines[-1] and lines[-1].endswith("; 3,302/3,302 files")  # the contents' upload, reported


def test_stale_sessions_and_shards_go_in_the_same_step(hub_server_at_scale: HubStandIn, tmp_path: Path) -> None:
    hub = hub_server_at_scale
    publish(hub, write_version(tmp_path, "v1", shards=150, sessions=200))
    smaller = write_version(tmp_path, "v2", shards=120, sessions=100)

    publish(hub, smaller)

    assert published(hub) == local_files(smaller)
    assert hub.commits(REPO_ID)[-1].title.startswith("Merge pull request #2")


def test_a_kill_midway_leaves_main_old_and_a_rerun_resumes_without_reuploading(
    hub_server_at_scale: HubStandIn, tmp_path: Path
) -> None:
    hub = hub_server_at_scale
    old = write_version(tmp_path, "v1", shards=2, sessions=3)
    publish(hub, old)
    new = write_version(tmp_path, "v2", shards=300, sessions=3000)

    script = (
        "import sys; from pathlib import Path; from trace_assets.publishing.hub import publish_run_folder, RetryPolicy; "
        "publish_run_folder(Path(sys.argv[1]), sys.argv[2], token=sys.argv[3], endpoint=sys.argv[4], "
        "commit_message=sys.argv[5], retry=RetryPolicy(attempts=10, wait_seconds=0))"
    )
    environment = {**os.environ, "HF_HUB_DISABLE_XET": "1", "HF_ENDPOINT": hub.url}
    environment.pop("HF_TOKEN", None)
    publisher = subprocess.Popen(
        [sys.executable, "-c", script, str(new), REPO_ID, hub.token, hub.url, TITLE],
        env=environment,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and publisher.poll() is None:
            if PR_REF in hub.branches(REPO_ID) and len(hub.commits(REPO_ID, PR_REF)) > 10:
                break
            time.sleep(0.02)
        assert publisher.poll() is None, publisher.stderr.read().decode() if publisher.stderr else ""
    finally:
        publisher.kill()
        publisher.wait()
        if publisher.stderr:
            publisher.stderr.close()

    assert published(hub) == local_files(old), "main is still the old version"
    half_done = hub.files(REPO_ID, PR_REF)
    commits_before = {commit.oid for commit in hub.commits(REPO_ID, PR_REF)}
    uploaded_before = hub.lfs_oids(REPO_ID)
    requests_before = len(hub.requests)
    assert 10 * 90 <= len(half_done) < len(local_files(new))

    publish(hub, new)

    assert published(hub) == local_files(new)
    rerun = hub.requests[requests_before:]
    reuploaded = [r for r in rerun if r.method == "PUT" and r.path.rsplit("/", 1)[-1] in uploaded_before]
    assert reuploaded == []
    resumed = [commit for commit in hub.commits(REPO_ID, PR_REF) if commit.oid not in commits_before]
    wanted = local_files(new)
    recommitted = {path for commit in resumed for path in commit.added if half_done.get(path) == wanted[path]}
    assert resumed and recommitted == set()
    assert hub.pull_request_status(REPO_ID, 1) == "merged"
