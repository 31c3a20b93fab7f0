"""Each of Harbor's `traces export` options, given as our flags, makes the rows Harbor 0.25 and 0.26 make.

The golden files are Harbor's own output on the same trees (`support/make_harbor_goldens.py`): the
bundled sample run, the golden terminus-2 trials, and a job folder Harbor 0.26's models wrote (a
JobResult with stats above its trials, fx, fx-dev and opencode-v2 trials among them).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from trace_assets.cli.parser import build_parser
from trace_assets.core.accounting import Reason
from trace_assets.harbor.options import ExportOptions
from trace_assets.harbor.rows import MAIN_TRACE_SOURCE, TRACE_SOURCE_COLUMN
from trace_assets.orchestration.options import export_options
from trace_assets.settings import ConfigError, PipelineSettings, load
from trace_assets.store.trace_store import TraceStore
from trace_assets_tests.support.golden_trials import make_golden_trials, make_job_trials
from trace_assets_tests.support.helpers import SAMPLE_RUN, SAMPLE_TRACES, comparable, run_steps
from trace_assets_tests.support.make_harbor_goldens import COMBOS, TREES, read_golden, row_order


def options_from_flags(flags: list[str]) -> ExportOptions:
    """The options `materialize`'s Harbor flags give (the environment's when a flag is not given)."""
    given = vars(build_parser().parse_args(["materialize", "run", "--traces-root", "t", "--publish-root", "p", *flags]))
    settings = PipelineSettings(
        **{name: value for name, value in given.items() if name in PipelineSettings.model_fields and value is not None}
    )
    return export_options(settings)


def by_dataset(rows: list[dict[str, Any]], options: ExportOptions) -> dict[str, list[dict[str, Any]]]:
    """Our rows as Harbor returns them: one dataset, or with `separate` one per trace source without the column."""
    if options.subagents != "separate":
        return {"main": sorted(rows, key=row_order)}
    datasets: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        source = row[TRACE_SOURCE_COLUMN]
        datasets.setdefault(source, []).append({k: v for k, v in row.items() if k != TRACE_SOURCE_COLUMN})
    return {name: sorted(datasets[name], key=row_order) for name in sorted(datasets)}


def _tree(tree: str, tmp_path: Path) -> tuple[TraceStore, str]:
    if tree == "sample":
        return TraceStore(str(SAMPLE_TRACES)), SAMPLE_RUN
    make_trials = make_golden_trials if tree == "golden" else make_job_trials
    make_trials(tmp_path / "traces" / tree / "trace_jobs")
    return TraceStore(str(tmp_path / "traces")), tree


def without_main_trace_source(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows of an export with merged subagents but no subagent file, as Harbor returns them: without
    the `trace_source` column, which we keep (every row `main`) so a sweep's scopes share one schema."""
    assert {row[TRACE_SOURCE_COLUMN] for row in rows} == {MAIN_TRACE_SOURCE}
    return [{k: v for k, v in row.items() if k != TRACE_SOURCE_COLUMN} for row in rows]


@pytest.mark.parametrize("combo", list(COMBOS))
@pytest.mark.parametrize("tree", TREES)
def test_rows_equal_harbor_export_with_the_same_options(tmp_path, tree, combo):
    options = options_from_flags(COMBOS[combo][0])
    store, run_id = _tree(tree, tmp_path)
    rows, coverage, _ = run_steps(store, run_id, tmp_path / "staging", options=options)
    ours = by_dataset(rows, options)
    theirs = read_golden(tree, combo)

    assert list(ours) == sorted(theirs, key=lambda name: (name != MAIN_TRACE_SOURCE, name))
    if options.subagents == "merged" and TRACE_SOURCE_COLUMN not in theirs["main"][0]:
        ours["main"] = without_main_trace_source(ours["main"])
    for name, expected in theirs.items():
        assert [(r["trial_name"], r["episode"]) for r in ours[name]] == [
            (r["trial_name"], r["episode"]) for r in expected
        ]
        for mine, harbors in zip(comparable(ours[name]), comparable(expected)):
            assert list(mine) == list(harbors)  # Harbor's columns, in its order
            assert mine == harbors, (mine["trial_name"], mine["episode"])
    assert coverage.accounted


def test_merged_subagents_keep_trace_source_where_harbor_drops_it(tmp_path):
    """A deliberate difference: with no subagent file in the whole export Harbor returns no
    `trace_source` column; ours is there, `main` on every row, as on every other scope of a sweep."""
    options = options_from_flags(COMBOS["merged"][0])
    store, run_id = _tree("job", tmp_path)
    rows, _, _ = run_steps(store, run_id, tmp_path / "staging", options=options)
    harbor = read_golden("job", "merged")["main"]

    assert TRACE_SOURCE_COLUMN not in harbor[0]
    assert [row[TRACE_SOURCE_COLUMN] for row in rows] == [MAIN_TRACE_SOURCE] * len(harbor)
    assert comparable(without_main_trace_source(sorted(rows, key=row_order))) == comparable(harbor)


def test_filtered_trials_are_accounted_for(tmp_path):
    _, success, _ = run_steps(
        TraceStore(str(SAMPLE_TRACES)), SAMPLE_RUN, tmp_path / "s", options=ExportOptions(success_filter="success")
    )
    _, failure, _ = run_steps(
        TraceStore(str(SAMPLE_TRACES)), SAMPLE_RUN, tmp_path / "f", options=ExportOptions(success_filter="failure")
    )
    _, everything, _ = run_steps(TraceStore(str(SAMPLE_TRACES)), SAMPLE_RUN, tmp_path / "a")
    assert success.exported + failure.exported == everything.exported
    # The filter comes first, as in Harbor: a filtered trial is filtered_out whatever else is wrong with it.
    readable = everything.scored - everything.excluded[Reason.INVALID_RESULT_JSON]
    assert success.excluded[Reason.FILTERED_OUT] + failure.excluded[Reason.FILTERED_OUT] == readable
    assert success.accounted and failure.accounted


def test_the_defaults_are_this_projects_published_shape():
    assert options_from_flags([]) == ExportOptions()
    assert options_from_flags(["--subagents"]) == ExportOptions(subagents="merged")  # the flag as it was
    assert ExportOptions().harbor_flags() == [
        "--episodes last",
        "--instruction-metadata",
        "--verifier-metadata",
        "--subagents none",
    ]
    assert ExportOptions().cache_salt() == []  # rows staged before the options existed stay cached


def test_unknown_choices_are_refused_with_the_allowed_values():
    with pytest.raises(ValueError, match="episodes must be one of last, all, not 'first'"):
        ExportOptions(episodes="first")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="TRACE_ASSETS_FILTER='passed': must be one of all, success, failure"):
        load(PipelineSettings, {"TRACE_ASSETS_FILTER": "passed"})
    with pytest.raises(ConfigError, match="TRACE_ASSETS_SHAREGPT='maybe': must be 1/true/yes/on or"):
        load(PipelineSettings, {"TRACE_ASSETS_SHAREGPT": "maybe"})
    with pytest.raises(SystemExit):
        options_from_flags(["--subagents", "split"])
    environment = {"TRACE_ASSETS_SUBAGENTS": "1", "TRACE_ASSETS_VERIFIER_METADATA": "off"}
    assert export_options(load(PipelineSettings, environment)) == ExportOptions(
        subagents="merged", verifier_metadata=False
    )


def test_separate_subagents_publish_a_config_per_kind_equal_to_harbors_datasets(tmp_path):
    """`--subagents separate`: `default` is Harbor's `main` dataset, each kind a config of its own."""
    from huggingface_hub import DatasetCard

    from trace_assets.core.scope import RunScope
    from trace_assets.publishing.card import TRIALS_CONFIG
    from trace_assets.publishing.dataset_folder import build_run_folder
    from trace_assets.secret_scan.scanner import ScanOptions
    from trace_assets.steps.scan import scan_run
    from trace_assets.steps.staging import RunStaging
    from trace_assets_tests.support.helpers import load_published

    options = options_from_flags(COMBOS["separate"][0])
    _, coverage, _ = run_steps(TraceStore(str(SAMPLE_TRACES)), SAMPLE_RUN, tmp_path / "staging", options=options)
    staging = RunStaging(tmp_path / "staging", RunScope(SAMPLE_RUN))
    report = scan_run(staging.require_rows(), SAMPLE_RUN, ScanOptions())
    out = tmp_path / "published"
    build_run_folder(out, staging.require_rows(), staging.statuses, coverage, report, 2000, None, options)

    card = DatasetCard.load(out / "README.md")
    configs = [config["config_name"] for config in card.data["configs"]]
    expected = read_golden("sample", "separate")
    assert configs == ["default", *sorted(name for name in expected if name != MAIN_TRACE_SOURCE), TRIALS_CONFIG]
    assert "`--subagents separate`" in card.text
    for config in configs[:-1]:
        rows = list(load_published(out, tmp_path / "cache", name=config))
        harbor = expected[MAIN_TRACE_SOURCE if config == "default" else config]
        assert comparable(sorted(rows, key=row_order)) == comparable(harbor), config
