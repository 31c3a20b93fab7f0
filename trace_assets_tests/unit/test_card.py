"""The dataset card: the Hub's card parser and `datasets` read it, its configuration shows, and its
version history survives publishes of a scope through a real folder target."""

from __future__ import annotations

import json
import re
from importlib import resources
from string import Template

import dagster as dg
import pytest
from huggingface_hub import DatasetCard, DatasetCardData

from trace_assets.core.accounting import Coverage, Reason
from trace_assets.core.scope import RunScope
from trace_assets.defs.metadata import scan_metadata
from trace_assets.harbor.options import ExportOptions
from trace_assets.publishing.card import (
    CARD_TEMPLATE,
    TEMPLATES_DIR,
    CardContext,
    CardSettings,
    considerations_prose,
    coverage_prose,
    exclusion_sentence,
    fill_template,
)
from trace_assets.publishing.card_facts import gather_facts, histogram, integer_histogram, size_category, size_text
from trace_assets.publishing.dataset_folder import VERSIONS_FILE, build_run_folder
from trace_assets.publishing.plots import bar_chart_svg, integer_label, range_label
from trace_assets.publishing.targets import FolderTarget, published_json
from trace_assets.publishing.versions import earlier_versions
from trace_assets.secret_scan.scanner import ScanOptions
from trace_assets.steps.scan import scan_run
from trace_assets.steps.staging import RunStaging
from trace_assets.store.trace_store import TraceStore
from trace_assets_tests.support.helpers import DATA, SAMPLE_RUN, SAMPLE_TRACES, load_published, run_steps

GOLDEN = DATA / "published_sample"


def test_the_hub_parses_the_cards_and_datasets_loads_every_config(tmp_path):
    card = DatasetCard.load(GOLDEN / "README.md", ignore_metadata_errors=False)
    assert isinstance(card.data, DatasetCardData)
    data = card.data.to_dict()
    assert data["license"] == "unknown"
    assert data["pretty_name"] == f"{SAMPLE_RUN} traces of Qwen3-Coder-30B-A3B-Instruct"  # the one served model
    assert data["size_categories"] == ["n<1K"]
    assert [c["config_name"] for c in data["configs"]] == ["default", "trials"]  # Parquet, all of them
    for section in ("## Provenance", "## Fields", "## Usage", "## Rewards and turns", "## Version history"):
        assert section in card.text
    assert "`result` | string | the trial's reward as text, or" in card.text
    assert "(plots/rewards.svg)" in card.text and (GOLDEN / "plots" / "rewards.svg").read_text().startswith("<svg")

    rows = load_published(GOLDEN, tmp_path / "rows")
    trials = load_published(GOLDEN, tmp_path / "trials", "trials")
    assert rows.num_rows == 28
    assert trials.num_rows == 36 and set(trials["status"]) == {"exported", "excluded"}
    # the session files: a dataset of their own, one row per file, as the Hub's trace viewer reads them
    sessions_card = DatasetCard.load(GOLDEN / "sessions" / "README.md", ignore_metadata_errors=False).data.to_dict()
    assert [c["config_name"] for c in sessions_card["configs"]] == ["default"]
    sessions = load_published(GOLDEN / "sessions", tmp_path / "sessions")
    assert sessions.num_rows == 34 and {row["session_id"] for row in sessions} >= {row["trial_name"] for row in rows}


@pytest.mark.parametrize(
    ("rows", "category"), [(0, "n<1K"), (999, "n<1K"), (1000, "1K<n<10K"), (2_500_000, "1M<n<10M")]
)
def test_size_categories(rows, category):
    assert size_category(rows) == category


def _publish(tmp_path, target, options, published_at, settings=None):
    store = TraceStore(str(SAMPLE_TRACES))
    scope = RunScope(SAMPLE_RUN)
    staging_root = tmp_path / f"staging-{published_at}"
    _, coverage, _ = run_steps(store, SAMPLE_RUN, staging_root, options=options)
    staging = RunStaging(staging_root, scope)
    report = scan_run(staging.require_rows(), SAMPLE_RUN, ScanOptions())
    earlier = earlier_versions(published_json(target, scope, VERSIONS_FILE), target.published_coverage(scope))
    card = CardContext(settings or CardSettings(), gather_facts(staging, staging.require_rows()), earlier, published_at)
    build = tmp_path / f"build-{published_at}"
    build_run_folder(build, staging.require_rows(), staging.statuses, coverage, report, 2000, None, options, None, card)
    target.publish(build, scope)
    return tmp_path / "published" / SAMPLE_RUN


def test_version_history_is_kept_across_publishes_and_says_why(tmp_path):
    target = FolderTarget(str(tmp_path / "published"))
    settings = CardSettings(
        license="mit",
        framework="SkyRL",
        task_source="pymethods2test",
        model="Qwen/Qwen3-30B-A3B",
        intro="Made for tests.",
    )
    folder = _publish(tmp_path, target, ExportOptions(), "2025-01-01 00:00 UTC", settings)
    first = (folder / "README.md").read_text()
    assert "license: mit" in first and "Made for tests." in first
    assert f"\n# {SAMPLE_RUN} traces of Qwen/Qwen3-30B-A3B\n" in first  # the trained model, not the served one
    assert (
        "- **Framework**: SkyRL; **Trained model**: `Qwen/Qwen3-30B-A3B`\n- **Task source**: pymethods2test\n" in first
    )

    _publish(tmp_path, target, ExportOptions(), "2025-01-02 00:00 UTC", settings)
    assert (folder / "README.md").read_text() == first  # same shards, same options: the history is unchanged

    _publish(tmp_path, target, ExportOptions(success_filter="success"), "2025-01-03 00:00 UTC", settings)
    versions = json.loads((folder / VERSIONS_FILE).read_text())["versions"]
    assert [v["published_at"] for v in versions] == ["2025-01-01 00:00 UTC", "2025-01-03 00:00 UTC"]
    assert [v["rows"] for v in versions] == [28, 14]
    assert versions[0]["why"] == "first published version"
    assert versions[1]["why"].startswith("export options changed")
    card = (folder / "README.md").read_text()
    history = card[card.index("## Version history") :]
    assert history.index("2025-01-03") < history.index("2025-01-01")  # newest first
    assert "export options changed" in history


def test_a_version_published_before_histories_counts_as_one_undated_entry():
    earlier = earlier_versions(None, {"trial_dirs": 255, "scored": 250, "exported": 240, "rows": 240})
    assert earlier == [
        {"version": None, "published_at": None, "trial_dirs": 255, "scored": 250, "exported": 240, "rows": 240}
    ]


def test_numbers_and_plurals_agree():
    one = Coverage("r", trial_dirs=1, scored=1, exported=1, rows=1, subagent_rows=1)
    text = coverage_prose(one)
    assert "held **1** trial folder. **1** was scored (had a `result.json`). **1** trial was exported" in text
    assert "as 1 row (1 of them a subagent conversation)." in text
    two = coverage_prose(Coverage("r", trial_dirs=3, scored=2, unscored=1, exported=2, rows=2))
    assert "**2** were scored (had a `result.json`) and 1 was not. **2** trials were exported" in two
    singular = {reason: exclusion_sentence(reason, 1) for reason in Reason}  # every reason, for one folder
    assert (
        singular[Reason.NO_TRAJECTORY]
        == "`no_trajectory`: **1** trial folder was scored but has no agent/trajectory.json."
    )
    assert singular[Reason.NO_RESULT_JSON].endswith("never got a result.json (the trial was not scored).")
    assert "trial folder is, or holds a file or folder, that" in singular[Reason.UNREADABLE]
    assert (
        "trial folder holds images" in singular[Reason.MULTIMODAL]
        and "trial folder has a name" in singular[Reason.UNDECODABLE_NAME]
    )
    assert (
        "trial folder was left out by the success filter (`--filter`; a reward above 0 is a success)"
        in singular[Reason.FILTERED_OUT]
    )
    assert not any(re.search(r"\b(were|are|have|hold)\b", s.split("(")[0]) for s in singular.values())
    assert (
        exclusion_sentence(Reason.NO_AGENT_TURNS, 2)
        == "`no_agent_turns`: **2** trial folders were dropped because the agent never took a turn."
    )
    assert [size_text(n) for n in (1, 999, 745_045, 6_700_000, 2_500_000_000)] == [
        "1 byte",
        "999 bytes",
        "745.0 kB",
        "6.7 MB",
        "2.5 GB",
    ]


def test_considerations_say_what_redaction_replaced_and_kept():
    report = {
        "verdict": "redacted",
        "verdict_as_read": "live",
        "redacted": {"hf_token": 1, "jwt": 0, "openai_api_key": 2},
        "privacy": {
            "categories": {"email": {"matches": 5, "placeholders": 1}, "home_path": {"matches": 2, "placeholders": 0}},
            "redacted": {"email": 0, "operator": 1},
        },
    }
    coverage = Coverage("r", trial_dirs=2, scored=2, exported=1, excluded={"filtered_out": 1}, rows=1)
    text = considerations_prose(coverage, CardContext(), report, ExportOptions(success_filter="success"))
    assert "- **Not every trial is here**: 1 of the 2 trial folders gave no row" in text
    assert "(`--filter success` exported only the trials whose reward is above 0)." in text
    assert (
        "**Redaction**: 3 credential-shaped strings replaced by `[REDACTED:<kind>]` (`hf_token` 1, `openai_api_key` 2)"
        in text
    )
    assert "; 1 private value replaced by numbered tokens such as `[EMAIL-1]` (`operator` 1)" in text
    assert (
        "; 6 private values found and kept as read, as the policy in force (`on_private`) says (`email` 4, `home_path` 2)"
        in text
    )
    assert (
        "- **Secret scan**: the verdict is `redacted` (`live` as read); published with the 3 acted-on matches redacted."
        in text
    )
    everything = Coverage("r", trial_dirs=1, scored=1, exported=1, rows=1)
    text = considerations_prose(everything, CardContext(), {"verdict": "clean"}, ExportOptions())
    assert "**Not every trial is here**: the one trial folder gave a row." in text and "nothing was replaced" in text


def test_histogram_bins_are_labelled_by_their_ranges():
    bins = histogram([0.0, 0.5, 1.0, 1.0])
    labels = [range_label(low, high, bins[0][1] - bins[0][0]) for low, high, _ in bins]
    assert labels[0] == "0.0–0.1" and labels[-1] == "0.9–1.0" and bins[-1][2] == 2  # the 1.0 bin is not "0.9"
    assert range_label(1.0, 1.0, 0.0) == "1" and range_label(-0.0, 0.25, 0.25) == "0.00–0.25"
    assert range_label(-1.7e308, -1.36e308, 3.4e307) == "-1.7e+308–-1.36e+308"
    assert integer_histogram([1, 25, 13, 2, 3])[0] == (1, 3, 3) and integer_histogram([1, 25])[-1] == (25, 25, 1)
    assert [integer_label(a, b) for a, b, _ in integer_histogram([4, 5, 6])] == ["4", "5", "6"]
    svg = bar_chart_svg("r", [("0.000–0.075", 1)] + [("1", 2)] * 9)  # a label wider than its slot is set smaller
    assert 'font-size="5.8">0.000–0.075</text>' in svg and 'middle">1</text>' in svg


def test_the_card_template_leaves_out_what_fills_to_nothing():
    template = (resources.files("trace_assets.publishing") / TEMPLATES_DIR / CARD_TEMPLATE).read_text()
    values = dict.fromkeys(Template(template).get_identifiers(), "")
    values |= {"header": "license: mit\n", "title": "T", "summary": "$x ${y}\n\n## Not a heading", "scan": "s"}
    text = fill_template(CARD_TEMPLATE, **values)
    assert text == "---\nlicense: mit\n---\n\n# T\n\n$x ${y}\n\n## Not a heading\n\n## Secret scan\n\ns\n"


def test_the_scan_metadata_tables_the_kinds_found_and_says_how_many_were_searched():
    """The sample's report: 55 kinds searched, 6 found; the UI's table lists the 6, most matches first."""
    report = json.loads((GOLDEN / "secret_scan.json").read_text())
    metadata = scan_metadata(report, GOLDEN / "secret_scan.json")
    table = metadata["kinds"]
    assert isinstance(table, dg.TableMetadataValue)
    kinds = [(record.data["kind"], record.data["matches"]) for record in table.records]
    assert kinds == [
        ("private_key", 6),
        ("jwt", 2),
        ("openai_api_key", 2),
        ("aws_access_key_id", 1),
        ("github_token", 1),
        ("hf_token", 1),
    ]
    searched = str(metadata["searched"].value)
    assert searched.startswith("55 kinds (") and searched.endswith(" patterns); 6 with a match"), searched
