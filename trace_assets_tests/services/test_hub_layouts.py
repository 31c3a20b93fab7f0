"""The Hub's two layouts against the stand-in, read back as a reader would, with `datasets`:

- a repo per sweep (an `hf://datasets/<org>/<name>` root): the root card is the sweep's dataset card,
  passes the Hub's card checks, lists every scope (a blocked one too), and every config it declares
  (per scope and per run) loads;
- a repo per scope, named from TRACE_ASSETS_HUB_REPO_ID: the seeds' names, each repo loading alone.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import datasets
import huggingface_hub.constants
import pytest
from huggingface_hub import DatasetCard, HfApi

from trace_assets.core.scope import RunScope
from trace_assets.publishing.card import CardContext
from trace_assets.publishing.hub import publish_run_folder
from trace_assets.publishing.root_card import INDEX, card_header, index_entries
from trace_assets.publishing.targets import HubSettings, HubTarget
from trace_assets_tests.support.declared_configs import load_every_config, root_figures, scope_figures
from trace_assets_tests.support.hub_server import STAND_IN_TOKEN, HubStandIn
from trace_assets_tests.support.scopes import SWEEP_CARD, build_scope_folders

pytestmark = pytest.mark.filterwarnings("ignore:Use 'content=<...>' to upload raw bytes:DeprecationWarning")

SWEEP = "acme/sweep"
SEED_RUN = "tb2_qwen3_30b_a3b_20260730_053956"


@pytest.fixture
def through_the_stand_in(hub_server: HubStandIn, monkeypatch: pytest.MonkeyPatch) -> HubStandIn:
    """`datasets` and the card checks read the Hub at the endpoint both read at import."""
    monkeypatch.setenv("HF_TOKEN", STAND_IN_TOKEN)
    monkeypatch.setattr(huggingface_hub.constants, "ENDPOINT", hub_server.url)
    monkeypatch.setattr(datasets.config, "HF_ENDPOINT", hub_server.url)
    return hub_server


def _row(card: str, scope: str) -> list[str]:
    [line] = [line for line in card.splitlines() if line.startswith(f"| `{scope}` |")]
    return [cell.strip() for cell in re.split(r"(?<!\\)\|", line.strip("|"))]


def test_a_repo_per_sweep_shows_the_sweeps_card_and_loads_every_config(through_the_stand_in, tmp_path):
    hub = through_the_stand_in
    target = HubTarget(HubSettings(token=STAND_IN_TOKEN, endpoint=hub.url), SWEEP, "main", "", SWEEP_CARD)
    built = build_scope_folders(tmp_path, card=lambda scope: CardContext(SWEEP_CARD, location=target.location(scope)))
    for scope, (folder, _) in built.items():
        target.publish(folder, scope)
    blocked = RunScope("flat")
    report = tmp_path / "secret_scan.json"
    report.write_text(json.dumps({"verdict": "live", "kinds": {"hf_token": {"live": 1}}}))
    target.publish_blocked(report, blocked)  # published first, then blocked: its folder keeps the report only

    files = hub.files(SWEEP)
    assert len(hub.commits(SWEEP)) == 1 + len(built) + 1  # each scope's commit held the root card
    assert sorted(path for path in files if path.startswith("flat/")) == ["flat/secret_scan.json"]
    text = files["README.md"].decode()
    card = DatasetCard(text)
    card.validate(repo_type="dataset")  # the Hub's card checks (the stand-in's schema rules)
    with pytest.raises(ValueError, match="size_categories"):  # which do refuse what the Hub refuses
        DatasetCard(text.replace("- n<1K", "- lots", 1)).validate(repo_type="dataset")
    assert (card.data.license, card.data.pretty_name) == ("apache-2.0", "Terminal-Bench 2 traces")
    assert card.data.language == ["en"] and card.data.task_categories == ["text-generation"]
    for fact in ("Training framework: SkyRL", "Task source: terminal-bench 2 (tasktrove)", "`Qwen/Qwen3-30B-A3B`"):
        assert fact in text
    assert _row(text, "flat")[7:9] == ["blocked: live", "[scan report](flat/secret_scan.json)"]
    published = {scope: folder for scope, (folder, _) in built.items() if scope != blocked}
    coverages = [json.loads(files[f"{scope.key}/coverage.json"]) for scope in published]
    assert _row(text, "stepped")[2:5] == [
        str(sum(c[k] for c in coverages)) for k in ("trial_dirs", "scored", "exported")
    ]
    assert _row(text, "stepped")[8] == f"[card]({list(published)[-1].key}/README.md)"  # a row per run

    figures = {
        scope: scope_figures(files[f"{scope.key}/README.md"].decode(), json.loads(files[f"{scope.key}/coverage.json"]))
        for scope in published
    }

    def through_the_hub(name: str, cache: Path) -> int:
        return datasets.load_dataset(SWEEP, name, split="train", cache_dir=str(cache)).num_rows

    expected = {name: count for name, count in root_figures(figures).items() if not name.endswith("--sessions")}
    loaded = load_every_config(text, expected, through_the_hub, tmp_path / "every")
    assert loaded["stepped"] == sum(built[scope][1] for scope in published) > 0  # the run spans its steps
    assert {"stepped", "stepped--trials"} <= set(loaded) and not any("--step-" in name for name in loaded)
    assert not any(name.startswith("flat") for name in loaded)


def test_a_scope_committed_without_the_root_card_is_listed_once_the_index_is_built_again(
    through_the_stand_in, tmp_path
):
    """A scope committed without the root card (a publish by an older version, or by hand): the
    index does not list it; deleting the index makes the next scope's commit build it again from
    every scope folder at its parent, which lists it."""
    hub = through_the_stand_in
    target = HubTarget(HubSettings(token=STAND_IN_TOKEN, endpoint=hub.url), SWEEP, "main", "", SWEEP_CARD)
    built = build_scope_folders(tmp_path)
    first, second, third = built
    target.publish(built[first][0], first)
    publish_run_folder(
        built[second][0],
        SWEEP,
        token=STAND_IN_TOKEN,
        endpoint=hub.url,
        path_in_repo=second.key,
        commit_message="no root card",
    )
    target.publish(built[third][0], third)
    assert second not in {e.scope for e in index_entries(hub.files(SWEEP)[INDEX]) or []}
    HfApi(endpoint=hub.url, token=STAND_IN_TOKEN).delete_file(INDEX, SWEEP, repo_type="dataset")

    target.publish(built[third][0], third)
    text = hub.files(SWEEP)["README.md"].decode()
    [run] = [c for c in card_header(text)["configs"] if c["config_name"] == "stepped"]
    assert {p.split("/data/")[0] for p in run["data_files"][0]["path"]} == {first.key, second.key}
    entries = {e.scope: e for e in index_entries(hub.files(SWEEP)[INDEX]) or []}
    coverage = json.loads((built[second][0] / "coverage.json").read_text())
    assert entries[second].figures["trial_dirs"] == coverage["trial_dirs"]


def _names(card: str) -> list[str]:
    return [c["config_name"] for c in card_header(card)["configs"]]


def test_a_repo_per_scope_is_named_from_the_template_and_loads_alone(through_the_stand_in, tmp_path):
    """The seeds' naming as one setting: each step of the run its own repo, its card the scope's."""
    hub = through_the_stand_in
    template = "{org}/terminal_bench_2_tasktrove_dq_stack_pytest_step{step}_30b_a3b_{date}"
    settings = HubSettings(token=STAND_IN_TOKEN, endpoint=hub.url, repo_id_template=template, org="acme")
    target = HubTarget(settings, card=SWEEP_CARD)
    built = build_scope_folders(tmp_path, runs=(SEED_RUN, "flat"))
    steps = {scope: built[scope] for scope in built if scope.step}
    for scope, (folder, _) in steps.items():
        target.publish(folder, scope)
    for scope, (folder, rows) in steps.items():
        repo = f"acme/terminal_bench_2_tasktrove_dq_stack_pytest_step{scope.step.removeprefix('step-')}_30b_a3b_20260730_053956"
        assert target.location(scope) == f"hf://datasets/{repo}@main"
        files = hub.files(repo)
        assert files["README.md"] == (folder / "README.md").read_bytes()  # the scope's own card
        loaded = datasets.load_dataset(repo, split="train", cache_dir=str(tmp_path / "c" / scope.step))
        assert loaded.num_rows == rows and {row["run_id"] for row in loaded} == {SEED_RUN}
    with pytest.raises(ValueError, match=r"scope 'flat' has no step folder to fill \{step\}"):
        target.check_writable(RunScope("flat"))  # the pre-flight's: that run fails, saying so
    assert target.location(RunScope("flat")) == f"hf://datasets/{template}"


def test_a_publish_reads_the_index_and_lists_its_own_folder_not_the_other_scopes(through_the_stand_in, tmp_path):
    """Each publish to a repo per sweep writes the root card from the index at its parent: it reads
    the index and the card (two files at most, none when kept by blob id), lists its own folder and the root's top, and reads no other
    scope's file nor lists the whole repo, however many scopes the repo holds; one commit a scope."""
    hub = through_the_stand_in
    built = build_scope_folders(tmp_path)
    target = HubTarget(HubSettings(token=STAND_IN_TOKEN, endpoint=hub.url), SWEEP, "main", "", SWEEP_CARD)
    for scope, (folder, _) in built.items():
        target.publish(folder, scope)
    commits = len(hub.commits(SWEEP))
    for scope, (folder, _) in built.items():  # again: the index lists every scope now
        before = len(hub.requests)
        target.publish(folder, scope)
        requests = hub.requests[before:]
        downloads = [r.path for r in requests if r.method == "GET" and "/resolve/" in r.path]
        assert {path.rsplit("/", 1)[-1] for path in downloads} <= {INDEX, "README.md"}  # or kept by blob id
        listings = [(re.sub(r".*/tree/[^/]+", "", r.path), r.query) for r in requests if "/tree/" in r.path]
        assert listings and all(
            (path == f"/{scope.key}" and "recursive=true" in query) or (not path and "recursive=false" in query)
            for path, query in listings
        ), listings
    assert len(hub.commits(SWEEP)) <= commits + len(built)  # one a scope, none when nothing changed
    entries = index_entries(hub.files(SWEEP)[INDEX])
    assert entries is not None and {e.scope for e in entries} == set(built)
