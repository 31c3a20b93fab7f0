"""Rewards no float statistic takes (NaN, infinities, integers beyond float range, 1e308s, negatives):
the rows keep Harbor's `result`, the card, its plots and the asset metadata count them apart and
stay finite."""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from pathlib import Path

from huggingface_hub import DatasetCard

from trace_assets.core.scope import RunScope
from trace_assets.defs.metadata import reward_metadata
from trace_assets.publishing.card import CardContext
from trace_assets.publishing.card_facts import CardFacts, Distribution, gather_facts, histogram
from trace_assets.publishing.dataset_folder import build_run_folder
from trace_assets.publishing.plots import bar_chart_svg
from trace_assets.steps.staging import RunStaging
from trace_assets.store.trace_store import TraceStore
from trace_assets_tests.support.bad_input import GOOD, raw_result
from trace_assets_tests.support.helpers import run_steps

RUN = "reward-run"
HUGE_DIGITS = "9" * 400  # kept as its digits: no float holds it


def _publish(tmp_path: Path, rewards: dict[str, str]) -> tuple[list[dict], CardFacts, Path]:
    """A run of one trial per reward (raw JSON text), through the steps to a folder with plots."""
    for name, reward in rewards.items():
        trial = tmp_path / "traces" / RUN / "trace_jobs" / name
        (trial / "agent").mkdir(parents=True)
        (trial / "result.json").write_bytes(raw_result(name, reward))
        (trial / "agent" / "trajectory.json").write_bytes(GOOD)
    rows, coverage, _ = run_steps(TraceStore(str(tmp_path / "traces")), RUN, tmp_path / "staging")
    staging = RunStaging(tmp_path / "staging", RunScope(RUN))
    facts = gather_facts(staging, staging.require_rows())
    out = tmp_path / "published"
    card = CardContext(facts=facts, plots=True)
    build_run_folder(out, staging.require_rows(), staging.statuses, coverage, {"verdict": "clean"}, 100, card=card)
    return rows, facts, out


def _plots_parse(out: Path) -> None:
    for name in ("rewards.svg", "turns.svg"):
        text = (out / "plots" / name).read_text()
        ET.fromstring(text)
        assert "nan" not in text and "inf" not in text, name
        assert 'height="-' not in text, name


def test_non_finite_rewards_are_counted_apart_and_the_rows_keep_harbors_result(tmp_path):
    rewards = {
        "nan__t1": "NaN",
        "minus-inf__t2": "-Infinity",
        "inf__t3": "Infinity",
        "huge__t4": HUGE_DIGITS,
        "word__t5": '"pass"',
        "one__t6": "1.0",
        "zero__t7": "0",
        "half__t8": "0.5",
    }
    rows, facts, out = _publish(tmp_path, rewards)

    results = {row["trial_name"]: row["result"] for row in rows}
    assert results == {
        "nan__t1": "nan",
        "minus-inf__t2": "-inf",
        "inf__t3": "inf",
        "huge__t4": HUGE_DIGITS,
        "word__t5": "pass",
        "one__t6": "1.0",
        "zero__t7": "0.0",
        "half__t8": "0.5",
    }
    assert sorted(facts.rewards) == [0.0, 0.5, 1.0]
    assert facts.rewards_not_finite == {"nan": 1, "-inf": 1, "inf": 1, "beyond float range": 1, "not a number": 1}

    card = DatasetCard.load(out / "README.md", ignore_metadata_errors=False)
    assert "Reward over the 3 exported trials with one: mean 0.500, median 0.5, min 0, max 1" in card.text
    assert (
        "Exported trials left out of these figures: 5 with a reward that is not a finite number "
        "(`beyond float range` (1), `inf` (1), `-inf` (1), `nan` (1), `not a number` (1)); "
        "their `result` holds the value as Harbor writes it"
    ) in card.text
    _plots_parse(out)
    metadata = {k: v.value for k, v in reward_metadata(facts).items()}
    assert metadata == {"mean_reward": 0.5, "rewards_not_finite": 5}


def test_only_non_finite_rewards_give_no_mean(tmp_path):
    _, facts, out = _publish(tmp_path, {"nan__t1": "NaN", "inf__t2": "Infinity"})
    assert facts.rewards == [] and facts.reward_stats.count == 0
    assert {k: v.value for k, v in reward_metadata(facts).items()} == {"rewards_not_finite": 2}
    assert "2 with a reward that is not a finite number" in (out / "README.md").read_text()
    _plots_parse(out)


def test_huge_and_negative_rewards_give_finite_figures(tmp_path):
    rewards = {"top__t1": "1.7e308", "top__t2": "1.7976931348623157e308", "bottom__t3": "-1.7e308", "neg__t4": "-5"}
    _, facts, out = _publish(tmp_path, rewards)
    stats = facts.reward_stats
    assert stats.count == 4 and stats.positive == 2
    assert all(math.isfinite(v) for v in (stats.mean, stats.median, stats.minimum, stats.maximum))
    assert stats.median == 1.7e308 / 2 - 5 / 2 and stats.minimum == -1.7e308
    card = (out / "README.md").read_text()
    assert "Reward over the 4 exported trials with one: mean 4.49423e+307, median 8.5e+307, min -1.7e+308" in card
    _plots_parse(out)
    assert math.isfinite(reward_metadata(facts)["mean_reward"].value)


def test_statistics_and_histogram_of_extreme_values():
    assert Distribution.of([1e308, 1e308, 1e308]).mean == 1e308  # fmean's sum overflows
    assert Distribution.of([1.7e308, 1.7e308]).median == 1.7e308
    assert Distribution.of([5e-324, 5e-324]).median == 5e-324
    bins = histogram([-1.7e308, 0.0, 1.7e308])  # the range itself is past float range
    assert len(bins) == 10 and sum(n for _, _, n in bins) == 3 and bins[0][0] == -1.7e308
    assert all(math.isfinite(low) for low, _, _ in bins)
    assert histogram([5e-324, 1e-323]) == [(5e-324, 1e-323, 2)]  # too close for ten bins


def test_a_bar_chart_of_negative_values_draws_no_negative_bar():
    svg = bar_chart_svg("mean reward", [("a", -0.5), ("b", 0.25), ("c", -0.0)])
    ET.fromstring(svg)
    assert 'height="-' not in svg and ">-0.5</text>" in svg
