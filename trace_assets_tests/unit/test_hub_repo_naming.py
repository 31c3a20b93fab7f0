"""One repo per scope, named from TRACE_ASSETS_HUB_REPO_ID: the placeholders, each value made a
valid repo name part, long names cut with a digest, and templates refused at start-up."""

from __future__ import annotations

import pytest

from trace_assets.defs.resources import ConfigError, HuggingFaceHub, config_from_env
from trace_assets.publishing.hub import (
    PLACEHOLDERS,
    RepoIdTemplateError,
    check_repo_id_template,
    render_repo_id,
    validate_repo_id,
)
from trace_assets.settings import variables

CARD = {
    "model": "Qwen/Qwen3-30B-A3B",
    "framework": "SkyRL",
    "task_source": "terminal-bench 2 / tasktrove",
    "license": "apache-2.0",
    "pretty_name": "TB2 traces: DQ stack",
}
SEED_RUN = "skyrl_tb2_qwen3_30b_a3b_20260730_053956"


def test_the_seeds_naming_is_one_setting():
    """The four published datasets this project reproduces are each one repo per run step, named so."""
    template = "{org}/terminal_bench_2_tasktrove_dq_stack_pytest_step{step}_30b_a3b_{date}"
    check_repo_id_template(template, "acme", CARD, steps=True, variables=variables())
    assert (
        render_repo_id(template, f"{SEED_RUN}/step-25", org="acme", fields=CARD)
        == "acme/terminal_bench_2_tasktrove_dq_stack_pytest_step25_30b_a3b_20260730_053956"
    )


@pytest.mark.parametrize(
    ("template", "scope", "expected"),
    [
        ("{org}/{run_id}", "rl-sample-run", "acme/rl-sample-run"),
        ("{org}/{run_id}", "run/step-3", "acme/run-step-3"),
        ("{org}/{run}-s{step}", "run/step-3", "acme/run-s3"),
        ("{org}/{model}-{run}", "run", "acme/Qwen3-30B-A3B-run"),
        ("{org}/{framework}_{task_source}_{run}", "run", "acme/SkyRL_terminal-bench-2-tasktrove_run"),
        ("{org}/{pretty_name}.{license}.{run}", "run", "acme/TB2-traces-DQ-stack.apache-2.0.run"),
        ("{org}/{date}", "eval-2026-07-30T05-39-56", "acme/20260730_053956"),
        ("{org}/{date}", "eval-20260730-053956-b", "acme/20260730_053956"),
        ("{org}/{date}", "nightly_20260730", "acme/20260730"),
        ("{org}/t-{run}", "run..42--", "acme/t-run.42"),
        ("{org}/{run}", "a.b/c", "acme/a.b-c"),  # a nested run id's '/' is '-'
    ],
)
def test_each_placeholder_fills_a_valid_repo_name(template, scope, expected):
    assert render_repo_id(template, scope, org="acme", fields=CARD) == expected


def test_a_long_name_is_cut_to_96_characters_with_a_digest_so_two_scopes_never_collide():
    template = "{org}/" + "x" * 80 + "-{run_id}"
    first = render_repo_id(template, "a-very-long-run-name/step-1", org="acme")
    second = render_repo_id(template, "a-very-long-run-name/step-2", org="acme")
    assert first != second
    for repo_id in (first, second):
        name = repo_id.split("/")[1]
        assert len(name) == 96 and validate_repo_id(repo_id) == repo_id
    assert render_repo_id(template, "a-very-long-run-name/step-1", org="acme") == first  # stable


def test_a_cut_name_never_ends_in_a_separator_before_its_digest():
    name = render_repo_id("{org}/" + "y" * 86 + ".{run}", "run-with-a-long-name", org="acme").split("/")[1]
    assert name.startswith("y" * 86 + "-") and ".-" not in name and len(name) == 86 + 1 + 8  # the cut at the '.'


@pytest.mark.parametrize(
    ("template", "org", "fields", "steps", "error"),
    [
        ("{org}/{runn}-{step}", "acme", CARD, True, r"unknown placeholder \{runn\}"),
        ("{org}/{run_id!r}", "acme", CARD, True, r"unknown placeholder \{run_id!r\}"),
        ("{org}/{run_id:>40}", "acme", CARD, True, r"unknown placeholder \{run_id:>40\}"),
        ("{org}/{0}", "acme", CARD, True, r"unknown placeholder \{0\}"),
        ("{org}/{run_id", "acme", CARD, True, "is not a template"),
        ("{org}/{model}-{run_id}", "acme", {}, True, r"uses \{model\}, but TRACE_ASSETS_CARD_MODEL is empty"),
        ("{org}/{run_id}", "", CARD, True, r"uses \{org\}, but TRACE_ASSETS_HUB_ORG is empty"),
        ("{org}/{run}", "acme", CARD, True, r"names no step"),
        ("{org}/traces-{step}", "acme", CARD, True, r"names no run"),
        ("{org}/{run}-{step}", "acme", CARD, False, r"uses \{step\}, but scopes are whole runs"),
        ("{run_id}", "acme", CARD, True, "namespace/name"),
        ("{org}/{run_id}.git", "acme", CARD, True, r"\.git"),
        ("{org}/a/{run_id}", "acme", CARD, True, "Invalid Hub repo id"),
        ("bad org/{run_id}", "acme", CARD, True, "Invalid Hub repo id"),
    ],
)
def test_a_template_no_scope_could_be_published_under_is_refused(template, org, fields, steps, error):
    with pytest.raises(ValueError, match=error):
        check_repo_id_template(template, org, fields, steps, variables())


@pytest.mark.parametrize(
    ("template", "scope", "error"),
    [
        ("{org}/{run}-{step}", "flat-run", r"scope 'flat-run' has no step folder to fill \{step\}"),
        ("{org}/{date}-{run_id}", "undated", r"has no date stamp"),
        ("{org}/{run}-{pretty_name}", "run", r"\{pretty_name\}: '/// ' has no characters usable"),
    ],
)
def test_a_scope_the_template_cannot_name_is_refused_with_why(template, scope, error):
    with pytest.raises(RepoIdTemplateError, match=error):
        render_repo_id(template, scope, org="acme", fields={**CARD, "pretty_name": "/// "})


def test_every_placeholder_is_documented():
    from trace_assets_tests.support.helpers import PROJECT_DIR

    row = next(
        line
        for line in (PROJECT_DIR / "docs" / "configuration.md").read_text().splitlines()
        if line.startswith("| `TRACE_ASSETS_HUB_REPO_ID`")
    )
    assert [name for name in PLACEHOLDERS if f"`{{{name}}}`" not in row] == []


def test_the_settings_refuse_it_at_start_naming_the_variable():
    """What `dagster dev`, `dg check defs` and the CLI build first: the definitions' Hub target."""

    def publishes_to_hub(template: str, env: dict[str, str] | None = None) -> bool:
        hub = HuggingFaceHub(repo_id_template=template, org="acme")
        return config_from_env(env or {}, traces_root="/t", publish_root="/p", hub=hub).parts().publishes_to_hub()

    with pytest.raises(
        ConfigError, match=r"^TRACE_ASSETS_HUB_REPO_ID='\{org\}/\{nope\}': unknown placeholder \{nope\}; known"
    ):
        publishes_to_hub("{org}/{nope}")
    with pytest.raises(ConfigError, match=r"TRACE_ASSETS_CARD_MODEL is empty"):
        publishes_to_hub("{org}/{model}-{run_id}")
    assert publishes_to_hub("{org}/{model}-{run_id}", {"TRACE_ASSETS_CARD_MODEL": "Qwen/Qwen3-8B"})
    assert publishes_to_hub("{org}/{run}", {"TRACE_ASSETS_SCOPE": "run"})
