"""Many scopes in one S3 publish root or one Hub repo: a config per scope, loaded per scope."""

from __future__ import annotations

import threading

import datasets
import pytest

from trace_assets.publishing.root_card import card_header
from trace_assets.publishing.targets import FolderTarget, HubSettings, HubTarget
from trace_assets_tests.support.hub_server import STAND_IN_TOKEN
from trace_assets_tests.support.s3_fixtures import FAKE_ACCESS_KEY, FAKE_SECRET_KEY, REGION, make_s3fs
from trace_assets_tests.support.scopes import build_scope_folders

pytestmark = pytest.mark.filterwarnings("ignore:Use 'content=<...>' to upload raw bytes:DeprecationWarning")


def _configs(built) -> set[str]:
    """Each scope's rows, and its `trials` config (every folder with its reason), as `<scope>--trials`."""
    return {s.config_name for s in built} | {f"{s.config_name}--trials" for s in built}


def test_an_s3_root_of_scopes_loads_per_scope(tmp_path, s3_bucket, s3_endpoint):
    built = build_scope_folders(tmp_path)
    options = {
        "endpoint_url": s3_endpoint,
        "key": FAKE_ACCESS_KEY,
        "secret": FAKE_SECRET_KEY,
        "client_kwargs": {"region_name": REGION},
        "skip_instance_cache": True,
    }
    root = f"s3://{s3_bucket}/published"
    target = FolderTarget(root, options)
    threads = [threading.Thread(target=target.publish, args=(folder, scope)) for scope, (folder, _) in built.items()]
    for thread in threads:  # concurrent conditional PUTs of the root card: every scope's config survives
        thread.start()
    for thread in threads:
        thread.join()
    fs = make_s3fs(s3_endpoint)
    card = card_header(fs.cat_file(f"{s3_bucket}/published/README.md").decode())
    assert {c["config_name"] for c in card["configs"]} == _configs(built)
    fs.get(f"{s3_bucket}/published", str(tmp_path / "copy"), recursive=True)
    for scope, (_, rows) in built.items():
        loaded = datasets.load_dataset(
            str(tmp_path / "copy"), scope.config_name, split="train", cache_dir=str(tmp_path / "c" / scope.config_name)
        )
        assert len(loaded) == rows


def test_a_hub_repo_of_scopes_lists_and_loads_each(tmp_path, hub_server, monkeypatch):
    monkeypatch.setenv("HF_TOKEN", STAND_IN_TOKEN)
    built = build_scope_folders(tmp_path)
    target = HubTarget(HubSettings(token=STAND_IN_TOKEN, endpoint=hub_server.url), "acme/sweep", "main", "")
    for scope, (folder, _) in built.items():
        target.publish(folder, scope)
    files = hub_server.files("acme/sweep")
    configs = card_header(files["README.md"].decode())["configs"]
    assert {c["config_name"] for c in configs} == _configs(built)
    commits = hub_server.commits("acme/sweep")
    assert len(commits) == 1 + len(built)  # the root card went in each scope's own commit
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "ENDPOINT", hub_server.url)  # read at import by both
    monkeypatch.setattr(datasets.config, "HF_ENDPOINT", hub_server.url)
    for scope, (_, rows) in built.items():  # load_dataset(repo, name=scope) through the stand-in
        loaded = datasets.load_dataset(
            "acme/sweep", scope.config_name, split="train", cache_dir=str(tmp_path / "hc" / scope.config_name)
        )
        assert len(loaded) == rows and {row["run_id"] for row in loaded} == {scope.run_id}
