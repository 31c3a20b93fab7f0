"""Many scopes in one publish root: a root card with a config per scope, loaded per scope."""

from __future__ import annotations

import json
import threading

import pytest

from trace_assets.accounting import Coverage
from trace_assets.publishing.dataset_folder import build_run_folder
from trace_assets.publishing.root_card import ConfigNameClash, card_header, merged_root_card
from trace_assets.publishing.targets import FolderTarget
from trace_assets.scope import RunScope
from trace_assets.steps.staging import RunStaging
from trace_assets_tests.support.helpers import load_published
from trace_assets_tests.support.scopes import build_scope_folders


def test_a_folder_of_scopes_loads_per_scope(tmp_path):
    built = build_scope_folders(tmp_path)
    target = FolderTarget(str(tmp_path / "published"))
    threads = [threading.Thread(target=target.publish, args=(folder, scope)) for scope, (folder, _) in built.items()]
    for thread in threads:  # concurrent publishes into one root lose no scope's config
        thread.start()
    for thread in threads:
        thread.join()
    card = (tmp_path / "published" / "README.md").read_text()
    names = [c["config_name"] for c in card_header(card)["configs"]]
    assert {"stepped--step-1", "stepped--step-2", "flat"} <= set(names)
    for scope, (_, rows) in built.items():
        loaded = load_published(tmp_path / "published", tmp_path / "cache" / scope.config_name, scope.config_name)
        assert len(loaded) == rows
        assert {row["run_id"] for row in loaded} == {scope.run_id}

    # republishing one scope with other rows points the root card at its new version only
    scope = RunScope.from_key("stepped/step-1")
    folder = built[scope][0]
    version_before = card_header(card)["configs"][names.index("stepped--step-1")]["data_files"][0]["path"]
    staging = RunStaging(tmp_path / "staging", scope)
    coverage = Coverage.from_dict(json.loads(staging.coverage.read_text()))
    build_run_folder(folder, staging.require_rows(), staging.statuses, coverage, {"verdict": "clean"}, 2, step="step-1")
    target.publish(folder, scope)
    after = card_header((tmp_path / "published" / "README.md").read_text())["configs"]
    path = next(c for c in after if c["config_name"] == "stepped--step-1")["data_files"][0]["path"]
    assert path != version_before and (tmp_path / "published" / path.rsplit("/", 1)[0]).is_dir()
    assert len(after) == len(names)


def test_config_names_that_clash_are_refused():
    card = "---\nconfigs:\n- config_name: default\n  data_files:\n  - split: train\n    path: data/v/train-*\n---\n"
    root = merged_root_card(None, RunScope.from_key("a--b/step-1"), card)
    with pytest.raises(ConfigNameClash, match="a--b--step-1"):
        merged_root_card(root, RunScope.from_key("a/b--step-1"), card)


def test_session_configs_an_earlier_version_declared_leave_the_root_card():
    """JSON Lines beside the Parquet configs made every config of the root unloadable: the next merge
    drops them, whichever scope they name, and keeps the rest."""
    card = "---\nconfigs:\n- config_name: default\n  data_files:\n  - split: train\n    path: data/v/train-*\n---\n"
    old = (
        "---\nconfigs:\n"
        "- config_name: other\n  data_files:\n  - split: train\n    path: other/data/v/train-*\n"
        "- config_name: other--sessions\n  data_files:\n  - split: train\n    path: other/sessions/v/*/*.jsonl\n"
        "---\n"
    )
    merged = merged_root_card(old, RunScope.from_key("run"), card)
    assert [c["config_name"] for c in card_header(merged)["configs"]] == ["other", "run"]


SCOPE_CARD = "---\nconfigs:\n- config_name: default\n  data_files:\n  - split: train\n    path: data/v2/train-*\n---\n"


def _two_scopes() -> str:
    """A root card naming scopes `a` and `b`, as publishing both left it."""
    return merged_root_card(
        merged_root_card(None, RunScope.from_key("a"), SCOPE_CARD), RunScope.from_key("b"), SCOPE_CARD
    )


def _merged_names(existing: str) -> list[str]:
    merged = merged_root_card(existing, RunScope.from_key("c"), SCOPE_CARD)
    return [c["config_name"] for c in card_header(merged)["configs"]]


def test_a_root_card_with_crlf_line_endings_keeps_every_scopes_configs():
    """An editor (or a Windows checkout) rewrote the card with CRLF line endings."""
    assert _merged_names(_two_scopes().replace("\n", "\r\n")) == ["a", "b", "c"]


def test_a_root_card_with_a_byte_order_mark_keeps_every_scopes_configs():
    assert _merged_names("\ufeff" + _two_scopes()) == ["a", "b", "c"]


def test_a_root_card_with_extra_metadata_keeps_every_scopes_configs_and_the_metadata():
    """An owner added a license, a pretty name and a tag of their own to the shared card."""
    ours = "tags:\n- harbor\n- agent-traces\n- reinforcement-learning\n"
    card = _two_scopes().replace(ours, "tags:\n- team-x\n- harbor\n").replace("---\n", "---\nlicense: mit\n", 1)
    card = card.replace("configs:\n", "pretty_name: Our sweep\nconfigs:\n", 1)
    merged = card_header(merged_root_card(card, RunScope.from_key("c"), SCOPE_CARD))
    assert [c["config_name"] for c in merged["configs"]] == ["a", "b", "c"]
    assert list(merged) == ["license", "pretty_name", "configs", "tags"]  # the owner's order kept
    assert (merged["license"], merged["pretty_name"]) == ("mit", "Our sweep")
    assert merged["tags"] == ["harbor", "agent-traces", "reinforcement-learning", "team-x"]


def test_a_root_card_of_our_own_is_written_as_before():
    """Merging into a card this project wrote gives the same header bytes: our keys, our order."""
    card = _two_scopes()
    assert card.startswith("---\nconfigs:\n- config_name: a\n")
    assert "\ntags:\n- harbor\n- agent-traces\n- reinforcement-learning\n---\n" in card
    assert merged_root_card(card, RunScope.from_key("b"), SCOPE_CARD) == card
