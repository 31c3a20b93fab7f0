"""Many scopes in one publish root: the root card is the sweep's dataset card, written from the root's
index of the scopes (each entry from the files its scope folder holds), with a config per scope and per
run, loaded per scope and per run."""

from __future__ import annotations

import json
import random
import re
import shutil
import threading

import pytest
import yaml
from huggingface_hub import DatasetCard, DatasetCardData, RepoCard

from trace_assets.core.accounting import Coverage
from trace_assets.core.scope import RunScope
from trace_assets.publishing import root_card as root_card_module
from trace_assets.publishing.dataset_folder import build_run_folder
from trace_assets.publishing.root_card import (
    INDEX,
    ROOT_PLOT,
    ConfigNameClash,
    ScopeEntry,
    ScopeFiles,
    card_header,
    index_entries,
    index_text,
    root_card,
    root_plot,
    scope_keys,
    updated_root,
    usual_configs,
)
from trace_assets.publishing.targets import FolderTarget, replace_folder
from trace_assets.publishing.versions import block_entry
from trace_assets.steps.staging import RunStaging
from trace_assets_tests.support.helpers import load_published
from trace_assets_tests.support.scopes import SWEEP_CARD, build_scope_folders


def _names(card: str) -> list[str]:
    return [c["config_name"] for c in card_header(card)["configs"]]


def _card(files: list[ScopeFiles], *args, **kwargs) -> str:
    """The root card of scope folders holding `files`, through their index entries."""
    return root_card([ScopeEntry.of(f) for f in files], *args, **kwargs)


def _table_row(card: str, scope: str) -> list[str]:
    [line] = [line for line in card.splitlines() if line.startswith(f"| `{scope}` |")]
    return [cell.strip() for cell in re.split(r"(?<!\\)\|", line.strip("|"))]  # escaped pipes stay


def test_a_folder_of_scopes_loads_per_run_and_each_step_from_its_folder(tmp_path):
    built = build_scope_folders(tmp_path)
    target = FolderTarget(str(tmp_path / "published"), card=SWEEP_CARD)
    threads = [threading.Thread(target=target.publish, args=(folder, scope)) for scope, (folder, _) in built.items()]
    for thread in threads:  # concurrent publishes into one root lose no scope's config
        thread.start()
    for thread in threads:
        thread.join()
    card = (tmp_path / "published" / "README.md").read_text()
    names = _names(card)
    assert names == ["flat", "flat--trials", "stepped", "stepped--trials"]  # a config per run, none per step
    for scope, (_, rows) in built.items():  # a step alone: its own folder, as its card says
        loaded = load_published(tmp_path / "published" / scope.key, tmp_path / "cache" / scope.config_name)
        assert len(loaded) == rows and {row["run_id"] for row in loaded} == {scope.run_id}
    steps = {scope: rows for scope, (_, rows) in built.items() if scope.run_id == "stepped"}
    whole_run = load_published(tmp_path / "published", tmp_path / "cache" / "stepped", "stepped")
    assert len(whole_run) == sum(steps.values()) and len(steps) == 2  # the run's config spans its steps
    trials = load_published(tmp_path / "published", tmp_path / "cache" / "stepped--trials", "stepped--trials")
    assert set(trials["step"]) == {"step-1", "step-2"}
    [spec] = next(c for c in card_header(card)["configs"] if c["config_name"] == "stepped--trials")["data_files"]
    assert spec["path"] == "stepped/step-*/trials.parquet"

    for run, scopes in (("stepped", [s for s in built if s.step]), ("flat", [RunScope("flat")])):
        coverages = [json.loads((tmp_path / "published" / s.key / "coverage.json").read_text()) for s in scopes]
        row = _table_row(card, run)  # a row per run, its steps' figures summed
        assert row[2:5] == [str(sum(c[key] for c in coverages)) for key in ("trial_dirs", "scored", "exported")]
        assert row[7] == "clean" and row[8] == f"[card]({scopes[-1].key}/README.md)"
    assert row[1] == "-" and _table_row(card, "stepped")[1] == "2"
    assert "| **total** |" in card and "3 scopes" in card

    # republishing one step with other rows points the run's config at its new version only
    scope = RunScope.from_key("stepped/step-1")
    folder = built[scope][0]

    def step_paths(text: str) -> list[str]:
        [spec] = next(c for c in card_header(text)["configs"] if c["config_name"] == "stepped")["data_files"]
        return [path for path in spec["path"] if path.startswith(f"{scope.key}/")]

    before = step_paths(card)
    staging = RunStaging(tmp_path / "staging", scope)
    coverage = Coverage.from_dict(json.loads(staging.coverage.read_text()))
    build_run_folder(folder, staging.require_rows(), staging.statuses, coverage, {"verdict": "clean"}, 2, step="step-1")
    target.publish(folder, scope)
    after = step_paths((tmp_path / "published" / "README.md").read_text())
    assert len(after) == 1 and after != before and (tmp_path / "published" / after[0].rsplit("/", 1)[0]).is_dir()


def test_the_root_card_passes_the_hubs_card_checks(tmp_path):
    """What `huggingface_hub` checks of a card without the network: the header parses into
    DatasetCardData with every field the Hub reads, and the card round-trips."""
    built = build_scope_folders(tmp_path)
    target = FolderTarget(str(tmp_path / "published"), card=SWEEP_CARD)
    for scope, (folder, _) in built.items():
        target.publish(folder, scope)
    text = (tmp_path / "published" / "README.md").read_text()
    card = DatasetCard(text)
    assert isinstance(card.data, DatasetCardData)
    assert (card.data.license, card.data.pretty_name) == ("apache-2.0", "Terminal-Bench 2 traces")
    assert card.data.language == ["en"] and card.data.task_categories == ["text-generation"]
    assert card.data.size_categories == ["n<1K"]
    assert DatasetCard(str(card)).data.to_dict() == card.data.to_dict()
    assert "- Training framework: SkyRL" in text and "- Trained model: `Qwen/Qwen3-30B-A3B`" in text
    assert "- Task source: terminal-bench 2 (tasktrove)" in text


def test_a_publish_killed_before_the_root_card_leaves_it_whole_until_that_scope_publishes(tmp_path):
    """A publish killed after its folder went in place and before the index and root card were
    written: the card keeps what it said (the old version's shards stay until the scope's next
    publish), a card left unreadable is written again from the index, and the scope's next publish
    puts its row in."""
    built = build_scope_folders(tmp_path)
    root = tmp_path / "published"
    target = FolderTarget(str(root), card=SWEEP_CARD)
    first, second, third = built
    target.publish(built[first][0], first)
    coverage = json.loads((built[second][0] / "coverage.json").read_text())
    replace_folder(built[second][0], target.location(second))  # no root card update: the kill
    (root / "README.md").write_text("---\nconfigs: [\n---\n")  # and a card left unreadable, say

    target.publish(built[third][0], third)
    entries = {e.scope: e for e in index_entries((root / INDEX).read_text()) or []}
    assert {first, third} <= set(entries) and second not in entries
    assert set(_names((root / "README.md").read_text())) == {"stepped", "stepped--trials", "flat", "flat--trials"}
    target.publish(built[second][0], second)
    entries = {e.scope: e for e in index_entries((root / INDEX).read_text()) or []}
    assert entries[second].figures["trial_dirs"] == coverage["trial_dirs"]


def test_publishing_a_scope_reads_no_other_scopes_files(tmp_path, monkeypatch):
    """The root card comes from the index: once it is there, a publish reads the index and the card,
    not the other scopes' folders, however many there are; the first builds it from the folders."""
    built = build_scope_folders(tmp_path)
    root = tmp_path / "published"
    target = FolderTarget(str(root), card=SWEEP_CARD)
    first, second, third = built
    target.publish(built[first][0], first)
    target.publish(built[second][0], second)
    (root / INDEX).unlink()  # a root published before the index: the next publish builds it
    read, listed = [], []
    real_read, real_folders = ScopeFiles.read.__func__, root_card_module.scope_folders
    monkeypatch.setattr(ScopeFiles, "read", classmethod(lambda cls, s, r: read.append(s) or real_read(cls, s, r)))
    monkeypatch.setattr(root_card_module, "scope_folders", lambda *a: listed.append(a) or real_folders(*a))
    target.publish(built[third][0], third)
    assert sorted(s.key for s in read) == sorted([first.key, second.key, third.key]) and len(listed) == 1
    for scope in (first, third, second):
        read.clear()
        target.publish(built[scope][0], scope)
        assert read == [scope] and len(listed) == 1  # its own new files only, no listing since the index
    assert {e.scope for e in index_entries((root / INDEX).read_text())} == set(built)


def test_a_blocked_scope_is_a_row_with_its_verdict_and_no_config(tmp_path):
    built = build_scope_folders(tmp_path)
    root = tmp_path / "published"
    target = FolderTarget(str(root), card=SWEEP_CARD)
    scopes = list(built)
    for scope in scopes[:3]:
        target.publish(built[scope][0], scope)
    blocked = scopes[2]
    report = tmp_path / "secret_scan.json"
    report.write_text(json.dumps({"verdict": "live", "kinds": {"hf_token": 1}}))
    withdrawn = json.loads((root / blocked.key / "versions.json").read_text())["versions"]
    history = [*withdrawn, block_entry("withdrawn", "it holds it", ["hf_token"], "now")]
    target.publish_blocked(report, blocked, history)  # the withdrawn version's history stays beside the report

    card = (root / "README.md").read_text()
    assert blocked.config_name not in _names(card)
    files = ScopeFiles.of_folder(blocked, root / blocked.key)
    entry = ScopeEntry.of(files)  # as a blocked folder of its report alone: nothing of the withdrawn version
    assert files.blocked and entry.config_names == [] and (entry.version, entry.published_at) == ("", "")
    row = _table_row(card, blocked.key)
    assert row[7] == "blocked: live" and row[8] == f"[scan report]({blocked.key}/secret_scan.json)"
    assert "1 blocked by the secret scan" in card


def _scope(key: str, data: str = "data/v/train-*", **figures: int) -> ScopeFiles:
    card = f"---\nconfigs:\n- config_name: default\n  data_files:\n  - split: train\n    path: {data}\n---\n"
    return ScopeFiles(RunScope.from_key(key), card, {"rows": 1, **figures}, None, {"verdict": "clean"})


def test_a_root_of_blocked_scopes_alone_has_its_card():
    """The first scope of a root blocked by the scan: a row saying so, a total of none published."""
    card = _card([ScopeFiles(RunScope("b"), None, None, None, {"verdict": "live"})])
    assert _table_row(card, "b")[7] == "blocked: live" and "| **total** | - | 0 | 0 | 0 | - | - | 0 scopes |" in card


def test_config_names_that_clash_are_refused():
    with pytest.raises(ConfigNameClash, match="a--b--step-1"):
        _card([_scope("a--b/step-1"), _scope("a/b--step-1")], this="a/b--step-1")
    with pytest.raises(ConfigNameClash, match="a--b--step-1"):
        _card([_scope("a--b/step-1"), _scope("a/b--step-1")], this="a--b/step-1")
    # two other scopes that clash: the first keeps the name, the publish goes on
    assert _names(_card([_scope("a--b/step-1"), _scope("a/b--step-1"), _scope("c")], this="c")) == ["a--b", "c"]


def test_session_configs_an_earlier_version_declared_leave_the_root_card():
    """JSON Lines beside the Parquet configs made every config of the root unloadable."""
    sessions = "- config_name: sessions\n  data_files:\n  - split: train\n    path: sessions/v/*/*.jsonl\n---\n"
    old = _scope("other")
    old = ScopeFiles(old.scope, str(old.card).removesuffix("---\n") + sessions, old.coverage, None, old.scan)
    assert _names(_card([old, _scope("run")])) == ["other", "run"]


def test_an_owners_keys_and_tags_are_kept_and_the_settings_written():
    """An owner added a homepage and a tag of their own to the shared card."""
    existing = "---\nlicense: mit\nhomepage: https://example.org\ntags:\n- team-x\n- harbor\n---\n# ours\n"
    merged = card_header(_card([_scope("a"), _scope("b")], SWEEP_CARD, existing))
    assert _names(_card([_scope("a"), _scope("b")], SWEEP_CARD, existing)) == ["a", "b"]
    assert merged["license"] == "apache-2.0" and merged["homepage"] == "https://example.org"
    assert merged["tags"] == ["harbor", "agent-traces", "reinforcement-learning", "team-x"]


@pytest.mark.parametrize("framing", ["crlf", "bom"])
def test_an_existing_card_an_editor_rewrote_keeps_the_owners_keys(framing):
    existing = "---\nhomepage: https://example.org\n---\n# ours\n"
    existing = existing.replace("\n", "\r\n") if framing == "crlf" else "\ufeff" + existing
    assert card_header(_card([_scope("a")], SWEEP_CARD, existing))["homepage"] == "https://example.org"


def test_the_same_folders_give_the_same_card():
    scopes = [_scope("a"), _scope("r/step-1"), _scope("r/step-2")]
    card = _card(scopes, SWEEP_CARD)
    assert _card(list(reversed(scopes)), SWEEP_CARD, card) == card
    assert card.startswith("---\nlicense: apache-2.0\npretty_name: Terminal-Bench 2 traces\n")
    run = next(c for c in card_header(card)["configs"] if c["config_name"] == "r")
    assert run["data_files"] == [{"split": "train", "path": ["r/step-1/data/v/train-*", "r/step-2/data/v/train-*"]}]


def test_figures_and_mean_rewards_come_from_the_scopes_files():
    def versions(mean: float | None, rewards: int) -> dict:
        return {
            "versions": [
                {"version": "abc123", "published_at": "2026-07-30 05:39 UTC", "mean_reward": mean, "rewards": rewards}
            ]
        }

    a = ScopeFiles(
        RunScope("a"),
        _scope("a").card,
        {"trial_dirs": 10, "scored": 8, "exported": 6, "rows": 6},
        versions(0.5, 6),
        {"verdict": "redacted"},
    )
    b = ScopeFiles(
        RunScope("b"),
        _scope("b").card,
        {"trial_dirs": 4, "scored": 4, "exported": 2, "rows": 2},
        versions(1.0, 2),
        {"verdict": "clean"},
    )
    card = _card([a, b])
    assert _table_row(card, "a") == [
        "`a`",
        "-",
        "10",
        "8",
        "6",
        "75.0%",
        "0.500",
        "redacted",
        "[card](a/README.md)",
    ]
    [total] = [line for line in card.splitlines() if line.startswith("| **total** |")]
    assert "| 14 | 12 | 8 | 66.7% | 0.625 |" in total  # (0.5 * 6 + 1.0 * 2) / 8


def test_hostile_values_in_a_scopes_files_give_dashes_not_a_failure():
    odd = ScopeFiles(
        RunScope("odd"),
        _scope("odd").card,
        {"trial_dirs": "many", "scored": True},
        {"versions": ["x"]},
        {"verdict": "a | b\nc"},
    )
    card = _card([odd])
    assert _table_row(card, "odd")[1:8] == ["-", "0", "0", "0", "-", "-", "a \\| b c"]


_HEADERS = [
    "---\nlicense: mit\ntags:\n- a\n- b\nhomepage: null\nnested: {x: [1, 2, null]}\n---\n# body\n",
    "---\r\nlicense: mit\r\n---\r\nbody",  # CRLF
    "---\rlicense: mit\r---\r",  # CR
    "  \n---\nlicense: mit\n---   \nbody",  # blank lines before, spaces after the closing line
    "---\nlicense: mit\n---",  # the header is the whole card
    "---\n---\nbody",  # an empty header
    "---\n# only a comment\n---\n",
    "# no header\nlicense: mit\n",
    "text before\n---\nlicense: mit\n---\n",
    "",
]


@pytest.mark.parametrize("text", _HEADERS)
def test_a_cards_header_is_read_as_huggingface_hub_reads_it(text):
    """`card_header` parses the header itself (importing `huggingface_hub.RepoCard` took 0.9 s of
    every publish): the same dict as `RepoCard(text).data.to_dict()` on every framing."""
    assert card_header(text) == RepoCard(text).data.to_dict()


@pytest.mark.parametrize(
    "header",
    ["on: push", "yes: 1", "1: one", "- a list", "just text", "a: [unclosed", "? [a]\n: b", "a: 1\n----\nb: 2"],
)
def test_a_header_huggingface_hub_refuses_is_refused(header):
    text = f"---\n{header}\n---\n"
    with pytest.raises((ValueError, TypeError, yaml.YAMLError)):
        RepoCard(text).data.to_dict()
    with pytest.raises((ValueError, yaml.YAMLError)):
        card_header(text)


@pytest.mark.parametrize(
    "configs",
    [
        "configs: 3",
        "configs: text",
        "configs:\n- 3\n- config_name: 5\n  data_files: x",
        "configs:\n- config_name: default\n  data_files: []",
        "configs:\n- config_name: default\n  data_files:\n  - split: train",  # no path
        "configs:\n- config_name: default\n  data_files:\n  - split: train\n    path: {a: 1}",
        "configs:\n- config_name: default\n  data_files:\n  - split: train\n    path: []",
        "on: push\nconfigs:\n- config_name: default\n  data_files: data/v/train-*",  # a key RepoCard refuses
    ],
)
def test_a_scope_card_edited_by_hand_leaves_its_configs_out_not_the_publish(configs):
    """Every scope folder's card is read for the root card: a scope whose header is odd has its row
    and no config, and the other scopes' publish goes on."""
    odd = ScopeFiles(RunScope("odd"), f"---\n{configs}\n---\n", {"rows": 1}, None, {"verdict": "clean"})
    card = _card([odd, _scope("good")], SWEEP_CARD)
    assert _names(card) == ["good"]
    assert _table_row(card, "odd")[0] == "`odd`"


@pytest.mark.parametrize("existing", ["---\non: push\nhomepage: x\n---\n", "---\n- a\n---\n", "---\na: [\n---\n"])
def test_a_root_card_edited_by_hand_is_written_again_from_the_scopes(existing):
    card = _card([_scope("a")], SWEEP_CARD, existing)
    assert _names(card) == ["a"] and "homepage" not in card_header(card)


def test_a_removed_scope_folder_leaves_the_card_once_the_index_is_built_again(tmp_path):
    """An operator removed a scope's folder: the index still lists it until it is deleted, and the
    next publish builds it again from the folders there, without the removed one."""
    built = build_scope_folders(tmp_path)
    root = tmp_path / "published"
    target = FolderTarget(str(root))
    first, second, third = built
    for scope in (first, second):
        target.publish(built[scope][0], scope)
    shutil.rmtree(root / first.key)
    (root / INDEX).unlink()
    target.publish(built[third][0], third)
    card = (root / "README.md").read_text()
    [run] = [c for c in card_header(card)["configs"] if c["config_name"] == "stepped"]
    assert [p.split("/data/")[0] for p in run["data_files"][0]["path"]] == [second.key]  # the removed step's gone
    assert {e.scope for e in index_entries((root / INDEX).read_text()) or []} == {second, third}


def test_scope_folders_in_a_repos_file_list_are_those_holding_a_scan_report():
    """On the Hub the scopes are read off the repo's file list at the commit's parent, below the
    root's path; a path that is no scope key (a data file's, another root's) is passed over."""
    paths = [
        "README.md",
        "sub/README.md",
        "sub/run-a/step-1/secret_scan.json",
        "sub/run-a/step-1/data/v/train-00000-of-00001.parquet",
        "sub/run-a/step-2/secret_scan.json",
        "sub/flat/secret_scan.json",
        "sub/.hidden/secret_scan.json",
        "sub/bad name/secret_scan.json",
        "sub/secret_scan.json",
        "other/run-b/secret_scan.json",
        "sub/run-a/step-1/sessions/v/ab/secret_scan.json.jsonl",
    ]
    assert [scope.key for scope in scope_keys(paths, "sub")] == ["flat", "run-a/step-1", "run-a/step-2"]
    assert [scope.key for scope in scope_keys(paths, "")] == ["other/run-b", "sub"]  # never a scope's inside


def _usual(key: str, version: str, **last) -> ScopeFiles:
    """A scope folder as a publish leaves it: its card's usual configs for `version`."""
    card = (
        "---\nconfigs:\n- config_name: default\n  data_files:\n  - split: train\n"
        f"    path: data/{version}/train-*\n- config_name: trials\n  data_files:\n  - split: train\n"
        "    path: trials.parquet\n---\n"
    )
    versions = {"versions": [{"version": version, **last}]}
    return ScopeFiles(RunScope.from_key(key), card, {"rows": 2, "scored": 3}, versions, {"verdict": "clean"})


def test_an_index_entry_leaves_out_the_usual_configs_and_defaults_and_reads_back_the_same():
    usual = ScopeEntry.of(_usual("r/step-1", "abc", mean_reward=0.25, rewards=2))
    odd = ScopeEntry.of(_scope("r/step-2", "data/other/train-*"))  # its card names another folder
    blocked = ScopeEntry.of(ScopeFiles(RunScope("b"), None, None, None, {"verdict": "live"}))
    text = index_text([usual, odd, blocked])
    runs = json.loads(text)["runs"]
    assert [run["run"] for run in runs] == ["b", "r"] and runs[1]["summary"]["scopes"] == 2
    assert runs[1]["scopes"][0] == {
        "scope": "r/step-1",
        "figures": [0, 3, 0, 2],
        "verdict": "clean",
        "version": "abc",
        "mean_reward": 0.25,
        "rewards": 2,
    }
    read = index_entries(text)
    assert read == [blocked, usual, odd] and read[1].named_configs == usual_configs(usual.scope, "abc")
    assert index_text(read) == text  # each line written back as it was read


def test_a_publish_reads_its_own_runs_entries_and_writes_the_card_of_every_entry(monkeypatch):
    """The index keeps a summary per run: a publish sums up again its own run and those whose config
    names could meet its own (`a`, `a-`, `a--b` and `a/b`; not `b-1` and `b-10`), and writes the card
    and plot that every entry read again makes."""
    clusters = [{"a", "a-", "a--b", "a/b"}, {"b"}, {"b-1"}, {"b-10"}]
    read: list[set[str]] = []
    summaries = root_card_module._summaries
    monkeypatch.setattr(
        root_card_module,
        "_summaries",
        lambda files, this: read.append({e.scope.run_id for e in files}) or summaries(files, this),
    )
    index = card = None
    runs = sorted(set().union(*clusters))
    for n in range(70):
        run = runs[n % len(runs)]
        key = run if n % 6 == 0 else f"{run}/step-{n // len(runs) + 1}"
        files = (
            _usual(key, f"v{n % 3}", mean_reward=n / 7 - 3, rewards=n % 3) if n % 5 else _scope(key, "data/x/train-*")
        )
        read.clear()
        try:
            index, card, plot = updated_root(index, card, files, SWEEP_CARD, list)
        except ConfigNameClash:  # a--b (whole) and a/b (whole)
            continue
        assert all(runs <= next(c for c in clusters if files.scope.run_id in c) for runs in read), (key, read)
        entries = index_entries(index)
        assert card == root_card(entries, SWEEP_CARD) and plot == root_plot(entries)


def test_a_cards_header_is_where_the_hubs_pattern_finds_it():
    """`yaml_header` finds what `huggingface_hub`'s `REGEX_YAML_BLOCK` does: line endings of every
    kind, a closing line with trailing blanks or dashes, an opening `\\r\\n` whose `\\n` closes."""
    from huggingface_hub.repocard import REGEX_YAML_BLOCK

    pieces = ["-", "---", "\n", "\r", "\r\n", " ", "\t", "a", ": ", "x\n---\n"]
    texts = ["---\r\n---", "\r\r\t---\r\n---\na", "---\na: 1\n--- \t\nrest", "---\na\n----\n---", "no header"]
    rng = random.Random(47)
    texts += ["".join(rng.choice(pieces) for _ in range(rng.randint(0, 12))) for _ in range(20_000)]
    for text in texts:
        match = REGEX_YAML_BLOCK.search(text)
        assert root_card_module.yaml_header(text) == (match.group(2) if match else None), repr(text)


def test_the_header_of_thousands_of_steps_is_yaml_dumps(tmp_path):
    """The run configs' path lists are written line by line, as yaml.dump writes them; an owner's
    keys are read from the card without its configs, as from the whole header."""
    entries = [ScopeEntry.of(_usual(f"run-{r}/step-{s}", f"v{r}{s}")) for r in range(3) for s in range(1, 40)]
    entries.append(ScopeEntry.of(_scope("flat", "data/1.5/train-*")))
    existing = "---\nhomepage: https://example.org\nconfigs:\n- a: 1\n  b: [2]\ntags:\n- team-x\nnotes: 'x: y'\n---\n"
    card = root_card(entries, SWEEP_CARD, existing)
    header = card_header(card)
    assert card.startswith("---\n" + yaml.dump(header, sort_keys=False, allow_unicode=True) + "---\n")
    assert header["homepage"] == "https://example.org" and header["notes"] == "x: y" and "team-x" in header["tags"]
    assert root_card_module.owner_header(card) == {k: v for k, v in header.items() if k != "configs"}
    for odd in ("---\nconfigs: [\n---\n", "---\n- a\n---\n", "---\non: push\nconfigs: []\n---\n"):
        assert root_card_module.owner_header(odd) == {}, odd
    # configs left unreadable by hand are written again; the owner's other keys are kept
    assert root_card_module.owner_header("---\nhomepage: x\nconfigs:\n  - a\n  b: 1\n---\n") == {"homepage": "x"}


def test_the_root_card_shows_each_runs_reward_and_export_ratio_over_its_steps(tmp_path):
    """Written with the card from the index: a line per run over its steps (a dot for a run without
    steps), the card pointing at it; a blocked scope is not drawn."""
    import xml.etree.ElementTree as ET

    built = build_scope_folders(tmp_path)
    root = tmp_path / "published"
    target = FolderTarget(str(root), card=SWEEP_CARD)
    for scope, (folder, _) in built.items():
        target.publish(folder, scope)
    assert f"]({ROOT_PLOT})" in (root / "README.md").read_text()
    svg = ET.fromstring((root / ROOT_PLOT).read_text())
    names = [t.text for t in svg.iter("{http://www.w3.org/2000/svg}text")]
    assert names.count("stepped") == names.count("flat") == 2  # each chart's legend
    assert list(svg.iter("{http://www.w3.org/2000/svg}circle"))  # flat: one point (a reward, a ratio if known)
    assert (root / ROOT_PLOT).read_text() == root_card_module.root_plot(index_entries((root / INDEX).read_text()) or [])
