"""A batched publish interrupted before its merge, after which `main` moved, must not block the
scope: its pull request, opened on the old `main`, would conflict on every merge (HTTP 409). The
next publish closes it and starts one on `main`'s head, re-uploading no LFS content."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from huggingface_hub import HfApi

from trace_assets.publishing.hub import HubPublishError, PublishedCommit, RetryPolicy, SharedFiles, publish_run_folder
from trace_assets.publishing.hub import batched as hub_batched

if TYPE_CHECKING:  # imported at runtime by pytest_plugins, so pytest can rewrite its asserts
    from trace_assets_tests.support.hub_server import HubStandIn

pytestmark = [
    pytest.mark.services,
    pytest.mark.filterwarnings("ignore:Use 'content=<...>' to upload raw bytes:DeprecationWarning"),
]

REPO_ID = "acme/harbor-traces"
NO_WAIT = RetryPolicy(attempts=2, wait_seconds=0)
FILES_PER_COMMIT = 10  # a version of 30 shards goes up in batches on a pull request, one of 3 in one commit


class Killed(BaseException):
    """The publishing process dying at a chosen point (a BaseException, like KeyboardInterrupt)."""


def write_version(root: Path, name: str, shards: int) -> Path:
    folder = root / name
    (folder / "data").mkdir(parents=True)
    for index in range(shards):
        table = pa.table({"version": [name], "shard": [index]})
        pq.write_table(table, folder / "data" / f"train-{index:05d}-of-{shards:05d}.parquet")
    (folder / "README.md").write_text(f"---\nconfigs: []\n---\n# {name}\n")
    (folder / "coverage.json").write_text(json.dumps({"version": name}))
    return folder


def root_card(scope: str) -> SharedFiles:
    """A shared card listing one line per scope, merged like the root card's configs."""
    return SharedFiles(
        ("README.md",),
        lambda existing, _head: {
            "README.md": "".join(sorted({*(existing["README.md"] or "").splitlines(True), f"{scope}\n"}))
        },
    )


def publish(hub: HubStandIn, folder: Path, scope: str = "") -> PublishedCommit:
    return publish_run_folder(
        folder,
        REPO_ID,
        token=hub.token,
        endpoint=hub.url,
        commit_message=f"Publish traces of run {scope or 'r1'}",
        path_in_repo=scope,
        retry=NO_WAIT,
        max_files_per_commit=FILES_PER_COMMIT,
        shared_files=root_card(scope) if scope else None,
    )


def killed_at(monkeypatch: pytest.MonkeyPatch, step: str) -> None:
    """Make the batched publish die when it reaches `step` (a method of the batched publish)."""

    def die(*_: object) -> None:
        raise Killed(step)

    monkeypatch.setattr(hub_batched.BatchedPublish, step, die)


def on_main(hub: HubStandIn, prefix: str = "") -> dict[str, bytes]:
    """main's files under `prefix`, the repo's own .gitattributes left out."""
    files = hub.files(REPO_ID).items()
    return {path: data for path, data in files if path.startswith(prefix) and path != ".gitattributes"}


def local_files(folder: Path, prefix: str = "") -> dict[str, bytes]:
    files = (path for path in folder.rglob("*") if path.is_file())
    return {prefix + path.relative_to(folder).as_posix(): path.read_bytes() for path in files}


def test_a_direct_publish_after_a_killed_batched_one_does_not_block_the_next_batched_one(
    hub_server: HubStandIn, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hub = hub_server
    publish(hub, write_version(tmp_path, "v1", shards=2))
    with monkeypatch.context() as patch:
        killed_at(patch, "_merge")
        with pytest.raises(Killed):
            publish(hub, write_version(tmp_path, "v2", shards=30))  # every batch on pull request #1, not merged
    v3 = write_version(tmp_path, "v3", shards=3)
    publish(hub, v3)  # few files: straight onto main, which the pull request's base no longer is
    assert on_main(hub) == local_files(v3)
    v4 = write_version(tmp_path, "v4", shards=30)

    result = publish(hub, v4)

    assert on_main(hub) == local_files(v4)
    assert hub.pull_request_status(REPO_ID, 1) == "closed"
    assert hub.pull_request_status(REPO_ID, 2) == "merged"
    assert result.commit_oid == hub.commits(REPO_ID)[-1].oid
    assert hub.commits(REPO_ID)[-1].title.startswith("Merge pull request #2")


def test_a_killed_scope_publishes_after_another_scope_changed_the_shared_root_card(
    hub_server: HubStandIn, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hub = hub_server
    publish(hub, write_version(tmp_path, "b1", shards=2), scope="b")
    with monkeypatch.context() as patch:
        killed_at(patch, "_commit_batches")
        with pytest.raises(Killed):
            publish(hub, write_version(tmp_path, "a1", shards=30), scope="a")  # contents up, no commit yet
    publish(hub, write_version(tmp_path, "c1", shards=2), scope="c")  # changes the root card on main
    a2 = write_version(tmp_path, "a2", shards=30)

    publish(hub, a2, scope="a")

    assert on_main(hub, "a/") == local_files(a2, "a/")
    assert hub.files(REPO_ID)["README.md"] == b"a\nb\nc\n", "every scope's line in the root card"
    assert hub.pull_request_status(REPO_ID, 1) == "closed"
    assert hub.pull_request_status(REPO_ID, 2) == "merged"


def _v2_killed_before_its_merge(hub: HubStandIn, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """v1 on main, then v2's batched publish killed with its pull request complete, not merged."""
    publish(hub, write_version(tmp_path, "v1", shards=2))
    v2 = write_version(tmp_path, "v2", shards=30)
    with monkeypatch.context() as patch:
        killed_at(patch, "_merge")
        with pytest.raises(Killed):
            publish(hub, v2)
    return v2


def test_the_replacing_pull_request_uploads_no_lfs_content_again(
    hub_server: HubStandIn, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hub = hub_server
    v2 = _v2_killed_before_its_merge(hub, tmp_path, monkeypatch)
    uploaded = hub.lfs_oids(REPO_ID)
    publish(hub, write_version(tmp_path, "v3", shards=3))
    requests_before = len(hub.requests)

    publish(hub, v2)

    assert on_main(hub) == local_files(v2)
    rerun = hub.requests[requests_before:]
    assert [r for r in rerun if r.method == "PUT" and r.path.rsplit("/", 1)[-1] in uploaded] == []
    assert not [r for r in rerun if r.method == "PUT" and r.path.startswith("/lfs-storage/")]
    assert hub.pull_request_status(REPO_ID, 2) == "merged"


def test_an_interrupted_pull_request_on_main_s_head_is_resumed_not_replaced(
    hub_server: HubStandIn, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hub = hub_server
    v2 = _v2_killed_before_its_merge(hub, tmp_path, monkeypatch)
    batches = len(hub.commits(REPO_ID, "refs/pr/1"))

    publish(hub, v2)

    assert on_main(hub) == local_files(v2)
    assert hub.pull_request_status(REPO_ID, 1) == "merged"
    assert len(hub.commits(REPO_ID, "refs/pr/1")) == batches, "nothing committed twice"
    assert len(hub.requests_to("POST", r"/discussions$")) == 1, "no second pull request"


def test_main_moving_while_a_version_is_planned_stops_the_publish_before_any_batch(
    hub_server: HubStandIn, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hub = hub_server
    v1 = write_version(tmp_path, "v1", shards=2)
    publish(hub, v1)
    other_writer = HfApi(endpoint=hub.url, token=hub.token)
    open_pull_request = HfApi.create_pull_request

    def another_commit_lands_first(api: HfApi, *args: Any, **kwargs: Any) -> Any:
        other_writer.upload_file(
            path_or_fileobj=b"notes", path_in_repo="notes.txt", repo_id=REPO_ID, repo_type="dataset"
        )
        return open_pull_request(api, *args, **kwargs)

    v2 = write_version(tmp_path, "v2", shards=30)
    with monkeypatch.context() as patch:
        patch.setattr(HfApi, "create_pull_request", another_commit_lands_first)
        with pytest.raises(HubPublishError, match="main moved from .* while the version was being planned"):
            publish(hub, v2)
    assert on_main(hub) == {**local_files(v1), "notes.txt": b"notes"}
    assert hub.pull_request_status(REPO_ID, 1) == "closed"
    assert len(hub.commits(REPO_ID, "refs/pr/1")) == len(hub.commits(REPO_ID)), "no batch committed"

    publish(hub, v2)

    assert on_main(hub) == {**local_files(v2), "notes.txt": b"notes"}
    assert hub.pull_request_status(REPO_ID, 2) == "merged"


def test_the_stand_in_pages_a_long_history_as_the_hub_does(hub_server: HubStandIn) -> None:
    hub = hub_server
    api = HfApi(endpoint=hub.url, token=hub.token)
    api.create_repo(REPO_ID, repo_type="dataset", private=True)
    for index in range(60):
        api.upload_file(path_or_fileobj=b"%d" % index, path_in_repo="n.txt", repo_id=REPO_ID, repo_type="dataset")

    history = api.list_repo_commits(REPO_ID, repo_type="dataset")

    assert [entry.commit_id for entry in history] == [commit.oid for commit in hub.commits(REPO_ID)][::-1]
    pages = hub.requests_to("GET", rf"^/api/datasets/{REPO_ID}/commits/main$")
    assert [page.query for page in pages] == ["", "p=1&limit=50"]
