"""Many scopes in one S3 publish root or one Hub repo: a config per scope, loaded per scope, and
every config every published card declares (each scope's session files' too) loads."""

from __future__ import annotations

import json
import threading

import datasets
import pytest

from trace_assets.core.scope import RunScope
from trace_assets.publishing.card import CardContext
from trace_assets.publishing.root_card import card_header
from trace_assets.publishing.targets import FolderTarget, HubSettings, HubTarget
from trace_assets_tests.support.declared_configs import (
    card_sessions_rows,
    check_root_folder,
    check_scope_folder,
    load_every_config,
    root_figures,
    scope_figures,
)
from trace_assets_tests.support.hub_server import STAND_IN_TOKEN
from trace_assets_tests.support.s3_fixtures import FAKE_ACCESS_KEY, FAKE_SECRET_KEY, REGION, make_s3fs
from trace_assets_tests.support.scopes import build_scope_folders

pytestmark = pytest.mark.filterwarnings("ignore:Use 'content=<...>' to upload raw bytes:DeprecationWarning")


def _configs(built) -> set[str]:
    """Each run's rows (its steps together), and its `trials` config (every folder with its reason),
    as `<run>--trials`."""
    names = {RunScope(s.run_id).config_name for s in built}
    return names | {f"{name}--trials" for name in names}


def test_an_s3_root_of_scopes_loads_per_scope(tmp_path, s3_bucket, s3_endpoint):
    options = {
        "endpoint_url": s3_endpoint,
        "key": FAKE_ACCESS_KEY,
        "secret": FAKE_SECRET_KEY,
        "client_kwargs": {"region_name": REGION},
        "skip_instance_cache": True,
    }
    root = f"s3://{s3_bucket}/published"
    target = FolderTarget(root, options)
    built = build_scope_folders(
        tmp_path, sessions=True, card=lambda scope: CardContext(location=target.location(scope))
    )
    threads = [threading.Thread(target=target.publish, args=(folder, scope)) for scope, (folder, _) in built.items()]
    for thread in threads:  # concurrent conditional PUTs of the root card: every scope's config survives
        thread.start()
    for thread in threads:
        thread.join()
    fs = make_s3fs(s3_endpoint)
    card = card_header(fs.cat_file(f"{s3_bucket}/published/README.md").decode())
    assert {c["config_name"] for c in card["configs"]} == _configs(built)
    fs.get(f"{s3_bucket}/published", str(tmp_path / "copy"), recursive=True)
    loaded = check_root_folder(tmp_path / "copy", built, tmp_path / "c")  # every card, every config
    for scope in built:
        run = RunScope(scope.run_id).config_name
        assert loaded["README.md"][run] == sum(r for s, (_, r) in built.items() if s.run_id == scope.run_id)
        coverage = json.loads((tmp_path / "copy" / scope.key / "coverage.json").read_text())
        assert loaded[f"{scope.key}/sessions/README.md"] == {"default": coverage["sessions"]}
        # the call the scope's card prints, straight from the bucket
        card = (tmp_path / "copy" / scope.key / "README.md").read_text()
        rows_read = card_sessions_rows(card, tmp_path / "s3c" / scope.config_name, storage_options=options)
        assert rows_read == coverage["sessions"]


def test_a_hub_repo_of_scopes_lists_and_loads_each(tmp_path, hub_server, monkeypatch):
    monkeypatch.setenv("HF_TOKEN", STAND_IN_TOKEN)
    target = HubTarget(HubSettings(token=STAND_IN_TOKEN, endpoint=hub_server.url), "acme/sweep", "main", "")
    built = build_scope_folders(
        tmp_path, sessions=True, card=lambda scope: CardContext(location=target.location(scope))
    )
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
    for run in {s.run_id for s in built}:  # load_dataset(repo, name=run) through the stand-in
        loaded = datasets.load_dataset("acme/sweep", run, split="train", cache_dir=str(tmp_path / "hc" / run))
        assert len(loaded) == sum(rows for s, (_, rows) in built.items() if s.run_id == run)
        assert {row["run_id"] for row in loaded} == {run}

    def through_the_hub(name, cache):
        return datasets.load_dataset("acme/sweep", name, split="train", cache_dir=str(cache)).num_rows

    coverages = {scope: json.loads(files[f"{scope.key}/coverage.json"]) for scope in built}
    figures = {scope: scope_figures(files[f"{scope.key}/README.md"].decode(), coverages[scope]) for scope in built}
    load_every_config(files["README.md"].decode(), root_figures(figures), through_the_hub, tmp_path / "every")
    repo = tmp_path / "repo"  # the repo's files at main, as a reader downloading a scope's folder gets them
    for path, data in files.items():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_bytes(data)
    for scope in built:
        sessions = coverages[scope]["sessions"]
        assert check_scope_folder(repo / scope.key, tmp_path / "sc" / scope.key)["sessions/README.md"] == {
            "default": sessions
        }
        card = files[f"{scope.key}/README.md"].decode()  # the call it prints: hf://datasets/acme/sweep@main/...
        assert card_sessions_rows(card, tmp_path / "hs" / scope.config_name) == sessions > 0
