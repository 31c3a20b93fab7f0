"""Every config a published card declares, loaded with `datasets.load_dataset` as a reader would,
against the figures the cards and coverage.json state (issue 20: "every declared config loads").

A card declares configs in its YAML `configs`; a scope's card figures its row configs in
`dataset_info`, `trials` is one row per trial folder (coverage.json's `trial_dirs`), and the session
files are one row per file (coverage.json's `sessions`) wherever a card declares them. A root card's
configs are its scopes', named `<scope config>` and `<scope config>--<name>`, and its runs', spanning
a run's steps, named `<run config>` and `<run config>--<name>`.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from trace_assets.core.scope import CONFIG_SEPARATOR, RunScope
from trace_assets.publishing.root_card import card_header

CARD = "README.md"
SESSIONS = "sessions"

Loader = Callable[[str, Path], int]  # config name, cache folder -> rows loaded


def declared(card: str) -> list[str]:
    """The config names a card's YAML header declares, in order."""
    return [config["config_name"] for config in card_header(card).get("configs", [])]


def scope_figures(card: str, coverage: dict[str, Any]) -> dict[str, int]:
    """What a scope's card and coverage.json say each of its configs holds."""
    info = card_header(card)["dataset_info"]
    infos = info if isinstance(info, list) else [{"config_name": "default", **info}]
    figures = {entry["config_name"]: entry["splits"][0]["num_examples"] for entry in infos}
    return {**figures, "trials": coverage["trial_dirs"], SESSIONS: coverage["sessions"]}


def root_figures(figures_by_scope: dict[RunScope, dict[str, int]]) -> dict[str, int]:
    """The scopes' figures under the names the root card gives their configs, and a run's steps'
    summed under its run's (the configs spanning its steps)."""

    def named(base: str, name: str) -> str:
        return base if name == "default" else f"{base}{CONFIG_SEPARATOR}{name}"

    figures = {
        named(scope.config_name, name): count
        for scope, scope_figures in figures_by_scope.items()
        for name, count in scope_figures.items()
    }
    for scope, scope_figures in figures_by_scope.items():
        if scope.step is not None:
            for name, count in scope_figures.items():
                run = named(RunScope(scope.run_id).config_name, name)
                figures[run] = figures.get(run, 0) + count
    return figures


def load_every_config(card: str, figures: dict[str, int], load: Loader, cache: Path) -> dict[str, int]:
    """Load each config the card declares; every one must load with the rows its figure says."""
    loaded = {name: load(name, cache / name) for name in declared(card)}
    assert loaded == {name: figures[name] for name in loaded}
    return loaded


def folder_loader(folder: Path) -> Loader:
    import datasets

    def load(name: str, cache: Path) -> int:
        return datasets.load_dataset(str(folder), name, split="train", cache_dir=str(cache)).num_rows

    return load


def check_scope_folder(folder: Path, cache: Path) -> dict[str, dict[str, int]]:
    """Every card in a published scope folder (its own, and its sessions' when it has them), each
    config loaded; returns rows per config per card (relative path)."""
    card = (folder / CARD).read_text()
    figures = scope_figures(card, json.loads((folder / "coverage.json").read_text()))
    loaded = {CARD: load_every_config(card, figures, folder_loader(folder), cache)}
    sessions = folder / SESSIONS
    if (sessions / CARD).is_file():
        sessions_card = (sessions / CARD).read_text()
        loader = folder_loader(sessions)
        loaded[f"{SESSIONS}/{CARD}"] = load_every_config(
            sessions_card, {"default": figures[SESSIONS]}, loader, cache / SESSIONS
        )
    return loaded


def check_root_folder(root: Path, scopes: Iterable[RunScope], cache: Path) -> dict[str, dict[str, int]]:
    """The root card's configs, loaded from the root, then every scope folder's cards."""
    scopes = list(scopes)
    figures = {
        scope: scope_figures(
            (root / scope.key / CARD).read_text(), json.loads((root / scope.key / "coverage.json").read_text())
        )
        for scope in scopes
    }
    loaded = {CARD: load_every_config((root / CARD).read_text(), root_figures(figures), folder_loader(root), cache)}
    for scope in scopes:
        for card, configs in check_scope_folder(root / scope.key, cache / scope.key).items():
            loaded[f"{scope.key}/{card}"] = configs
    return loaded


def card_sessions_rows(card: str, cache: Path, **placeholders: Any) -> int:
    """Run the `load_dataset(...)` call the scope card's Sessions section prints (its literal
    arguments, with a cache of the test's own, and `placeholders` for the ones it leaves to the
    reader: an object store's `storage_options`); the rows it loads."""
    import datasets

    [line] = re.findall(r"^sessions = (load_dataset\(.*\))(?:  # .*)?$", card, flags=re.MULTILINE)
    call = ast.parse(line).body[0].value  # type: ignore[attr-defined]
    args = [ast.literal_eval(arg) for arg in call.args]
    kwargs = {keyword.arg: ast.literal_eval(keyword.value) for keyword in call.keywords}
    assert set(placeholders) == {name for name, value in kwargs.items() if value == {...}}
    return datasets.load_dataset(*args, **{**kwargs, **placeholders}, cache_dir=str(cache)).num_rows
