"""Publishing a run folder with the real huggingface_hub client against the local Hub stand-in."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import TYPE_CHECKING

import datasets
import huggingface_hub.constants
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from huggingface_hub import HfApi, hf_hub_download
from huggingface_hub.errors import RepositoryNotFoundError

from trace_assets.publishing.hub import (
    HubPublishError,
    PublishedCommit,
    check_hub_access,
    publish_run_folder,
)
from trace_assets.runtime.progress import bytes_text

if TYPE_CHECKING:  # imported at runtime by pytest_plugins, so pytest can rewrite its asserts
    from trace_assets_tests.support.hub_server import HubStandIn


# huggingface_hub's own LFS upload (lfs._upload_single_part) passes `data=<file>` to httpx2.
pytestmark = pytest.mark.filterwarnings("ignore:Use 'content=<...>' to upload raw bytes:DeprecationWarning")

REPO_ID = "acme/harbor-traces"
DATASET_CARD = """---
configs:
- config_name: default
  data_files:
  - split: train
    path: data/train-*.parquet
---
# Harbor traces
"""


def write_run_folder(root: Path, run_id: str, shard_sizes: list[int]) -> Path:
    """A run folder as the pipeline writes it, with one parquet shard of `size` trials per entry."""
    folder = root / run_id
    (folder / "data").mkdir(parents=True)
    first_trial = 0
    for index, size in enumerate(shard_sizes):
        trial_ids = [f"{run_id}-trial-{n}" for n in range(first_trial, first_trial + size)]
        shard = pa.table({"trial_id": trial_ids, "reward": [float(n % 2) for n in range(size)]})
        pq.write_table(shard, folder / "data" / f"train-{index:05d}-of-{len(shard_sizes):05d}.parquet")
        first_trial += size
    pq.write_table(pa.table({"run_id": [run_id], "trials": [first_trial]}), folder / "trials.parquet")
    (folder / "README.md").write_text(DATASET_CARD)
    (folder / "coverage.json").write_text(json.dumps({"run_id": run_id, "trials": first_trial}))
    (folder / "secret_scan.json").write_text(json.dumps({"findings": []}))
    return folder


def publish(
    hub: HubStandIn, folder: Path, *, revision: str = "main", path_in_repo: str = "", private: bool = True
) -> PublishedCommit:
    return publish_run_folder(
        folder,
        REPO_ID,
        token=hub.token,
        endpoint=hub.url,
        revision=revision,
        path_in_repo=path_in_repo,
        private=private,
        commit_message=f"Publish {folder.name}",
    )


def local_files(folder: Path, prefix: str = "") -> dict[str, bytes]:
    return {
        prefix + path.relative_to(folder).as_posix(): path.read_bytes() for path in folder.rglob("*") if path.is_file()
    }


def test_first_publish_creates_a_private_repo_with_everything_in_one_commit(
    hub_server: HubStandIn, tmp_path: Path
) -> None:
    folder = write_run_folder(tmp_path, "run-1", [3, 3, 2])

    published = publish(hub_server, folder)

    assert hub_server.is_private(REPO_ID)
    initial, publish_commit = hub_server.commits(REPO_ID)
    assert initial.title == "initial commit"
    assert published.commit_oid == publish_commit.oid
    assert published.commit_url.endswith(f"/datasets/{REPO_ID}/commit/{publish_commit.oid}")
    assert set(publish_commit.added) == set(local_files(folder)) == set(published.files_added)
    assert published.files_deleted == ()
    gitattributes = initial.files[".gitattributes"].content
    assert hub_server.files(REPO_ID) == {".gitattributes": gitattributes, **local_files(folder)}

    parquet_paths = {path for path in local_files(folder) if path.endswith(".parquet")}
    assert hub_server.lfs_files(REPO_ID) == parquet_paths
    assert len(hub_server.requests_to("POST", r"/preupload/main$")) == 1
    assert len(hub_server.requests_to("POST", r"\.git/info/lfs/objects/batch$")) == 1
    assert len(hub_server.requests_to("PUT", r"^/lfs-storage/")) == len(parquet_paths)
    assert len(hub_server.requests_to("POST", r"/commit/main$")) == 1


def test_the_upload_reports_bytes_and_files_done(hub_server: HubStandIn, tmp_path: Path) -> None:
    folder = write_run_folder(tmp_path, "run-1", [3, 3, 2])
    files = local_files(folder)
    lines: list[str] = []

    publish_run_folder(
        folder,
        REPO_ID,
        token=hub_server.token,
        endpoint=hub_server.url,
        commit_message="Publish",
        progress=lines.append,
    )

    assert len(files) == 7 and lines[-1].endswith("; 7/7 files")
    assert lines[-1].startswith(f"{bytes_text(sum(map(len, files.values())))}/") and "(100%)" in lines[-1]
    assert len(hub_server.requests_to("POST", r"/commit/main$")) == 1


def test_private_repo_is_hidden_from_anonymous_readers(hub_server: HubStandIn, tmp_path: Path) -> None:
    publish(hub_server, write_run_folder(tmp_path, "run-1", [2]))

    with pytest.raises(RepositoryNotFoundError):
        HfApi(endpoint=hub_server.url, token=False).dataset_info(REPO_ID)
    assert HfApi(endpoint=hub_server.url, token=hub_server.token).dataset_info(REPO_ID).private is True


def test_republishing_with_fewer_shards_replaces_them_in_a_single_commit(
    hub_server: HubStandIn, tmp_path: Path
) -> None:
    publish(hub_server, write_run_folder(tmp_path / "first", "run-1", [3, 3, 2]))
    commits_before = len(hub_server.commits(REPO_ID))

    smaller = write_run_folder(tmp_path / "second", "run-1", [4, 4])
    published = publish(hub_server, smaller)

    assert len(hub_server.commits(REPO_ID)) == commits_before + 1
    assert len(hub_server.requests_to("POST", r"/commit/main$")) == 2
    old_shards = (
        "data/train-00000-of-00003.parquet",
        "data/train-00001-of-00003.parquet",
        "data/train-00002-of-00003.parquet",
    )
    assert published.files_deleted == old_shards
    replacing_commit = hub_server.commits(REPO_ID)[-1]
    assert replacing_commit.deleted == old_shards
    assert {"data/train-00000-of-00002.parquet", "data/train-00001-of-00002.parquet"} <= set(replacing_commit.added)
    # Unchanged files are left out of the commit by the client rather than uploaded again.
    assert "secret_scan.json" not in replacing_commit.added
    remote_shards = {path for path in hub_server.files(REPO_ID) if path.startswith("data/")}
    assert remote_shards == {path for path in local_files(smaller) if path.startswith("data/")}


def test_a_commit_landing_between_planning_and_committing_fails_the_publish(
    hub_server: HubStandIn, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Otherwise a shard another writer added after the listing would survive next to the new ones."""
    publish(hub_server, write_run_folder(tmp_path / "first", "run-1", [2, 2]))
    list_repo_tree = HfApi.list_repo_tree

    def list_then_let_another_writer_commit(api: HfApi, *args: object, **kwargs: object) -> list[object]:
        entries = list(list_repo_tree(api, *args, **kwargs))  # type: ignore[arg-type]
        HfApi(endpoint=hub_server.url, token=hub_server.token).upload_file(
            path_or_fileobj=b"{}", path_in_repo="data/late.json", repo_id=REPO_ID, repo_type="dataset"
        )
        return entries

    monkeypatch.setattr(HfApi, "list_repo_tree", list_then_let_another_writer_commit)

    with pytest.raises(HubPublishError, match="HTTP 412"):
        publish(hub_server, write_run_folder(tmp_path / "second", "run-1", [4]))
    assert hub_server.commits(REPO_ID)[-1].added == ("data/late.json",)


def test_publishing_to_a_branch_creates_it_and_leaves_main_alone(hub_server: HubStandIn, tmp_path: Path) -> None:
    folder = write_run_folder(tmp_path, "run-1", [2, 2])

    published = publish(hub_server, folder, revision="staging")

    assert published.revision == "staging"
    assert set(hub_server.branches(REPO_ID)) == {"main", "staging"}
    assert set(hub_server.files(REPO_ID, revision="main")) == {".gitattributes"}
    assert hub_server.files(REPO_ID, revision="staging").items() >= local_files(folder).items()
    assert len(hub_server.requests_to("POST", r"/commit/staging$")) == 1


def test_path_in_repo_keeps_runs_in_one_repo_independent(hub_server: HubStandIn, tmp_path: Path) -> None:
    publish(hub_server, write_run_folder(tmp_path / "a1", "run-a", [2, 2, 2]), path_in_repo="run-a")
    run_b = write_run_folder(tmp_path / "b1", "run-b", [1, 1])
    publish(hub_server, run_b, path_in_repo="run-b/")

    smaller_run_a = write_run_folder(tmp_path / "a2", "run-a", [6])
    published = publish(hub_server, smaller_run_a, path_in_repo="run-a")

    assert all(path.startswith("run-a/data/") for path in published.files_deleted)
    assert len(published.files_deleted) == 3
    remote = hub_server.files(REPO_ID)
    assert remote.items() >= local_files(run_b, prefix="run-b/").items()
    assert remote.items() >= local_files(smaller_run_a, prefix="run-a/").items()
    assert {path for path in remote if path.startswith("run-a/data/")} == {"run-a/data/train-00000-of-00001.parquet"}


def test_wrong_token_fails_clearly_without_revealing_the_token(
    hub_server: HubStandIn, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    wrong_token = "hf_wrong_token_that_must_not_leak"
    caplog.set_level(logging.DEBUG)

    with pytest.raises(HubPublishError, match="HTTP 401.*Invalid credentials.*HF_TOKEN") as raised:
        publish_run_folder(
            write_run_folder(tmp_path, "run-1", [2]),
            REPO_ID,
            token=wrong_token,
            endpoint=hub_server.url,
            commit_message="Publish run-1",
        )

    assert wrong_token not in str(raised.value)
    assert raised.value.__cause__ is None and raised.value.__context__ is None
    assert wrong_token not in caplog.text
    assert {request.status for request in hub_server.requests} == {401}
    assert hub_server.requests_to("POST", r"/commit/") == []


def test_the_pre_flight_accepts_the_token_and_refuses_a_wrong_one_or_none(
    hub_server: HubStandIn, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    check_hub_access(REPO_ID, token=hub_server.token, endpoint=hub_server.url)  # no repo yet: fine
    publish_run_folder(
        write_run_folder(tmp_path, "run-1", [2]),
        REPO_ID,
        token=hub_server.token,
        endpoint=hub_server.url,
        commit_message="Publish run-1",
    )
    check_hub_access(REPO_ID, token=hub_server.token, endpoint=hub_server.url)  # the repo, readable
    assert hub_server.requests_to("GET", r"/api/whoami-v2")

    wrong_token = "hf_wrong_token_that_must_not_leak"
    with pytest.raises(HubPublishError, match="HTTP 401") as raised:
        check_hub_access(REPO_ID, token=wrong_token, endpoint=hub_server.url)
    assert wrong_token not in str(raised.value)
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.setattr(huggingface_hub.constants, "HF_TOKEN_PATH", str(tmp_path / "no-login"))  # nor a login
    with pytest.raises(HubPublishError, match="no Hugging Face token"):
        check_hub_access(REPO_ID, token=None, endpoint=hub_server.url)


def test_existing_public_repo_needs_explicit_private_false(hub_server: HubStandIn, tmp_path: Path) -> None:
    HfApi(endpoint=hub_server.url, token=hub_server.token).create_repo(REPO_ID, repo_type="dataset", private=False)
    folder = write_run_folder(tmp_path, "run-1", [2])

    with pytest.raises(HubPublishError, match="is public"):
        publish(hub_server, folder)
    assert len(hub_server.commits(REPO_ID)) == 1

    publish(hub_server, folder, private=False)
    assert len(hub_server.commits(REPO_ID)) == 2


def test_folder_without_shards_is_refused_before_contacting_the_hub(hub_server: HubStandIn, tmp_path: Path) -> None:
    folder = tmp_path / "run-1"
    folder.mkdir()
    (folder / "README.md").write_text(DATASET_CARD)

    with pytest.raises(ValueError, match="no files under data/"):
        publish(hub_server, folder)
    assert hub_server.requests == []


def test_published_shards_download_and_load_as_a_dataset(hub_server: HubStandIn, tmp_path: Path) -> None:
    folder = write_run_folder(tmp_path / "run", "run-1", [3, 2])
    published = publish(hub_server, folder)

    downloaded = [
        hf_hub_download(
            REPO_ID,
            path,
            repo_type="dataset",
            revision=published.commit_oid,
            token=hub_server.token,
            endpoint=hub_server.url,
            cache_dir=tmp_path / "hf-cache",
        )
        for path in published.files_added
        if path.startswith("data/")
    ]

    assert [Path(path).read_bytes() for path in downloaded] == [
        (folder / "data" / f"train-0000{index}-of-00002.parquet").read_bytes() for index in range(2)
    ]
    loaded = datasets.load_dataset("parquet", data_files=downloaded, split="train", cache_dir=str(tmp_path / "ds"))
    assert loaded.num_rows == 5
    assert loaded[0]["trial_id"] == "run-1-trial-0"
    assert len(hub_server.requests_to("HEAD", r"/resolve/")) == 2
