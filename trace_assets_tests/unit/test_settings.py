"""The declaration of every setting (`trace_assets/settings.py`) is the only one: the docs' table,
the environment loader, the CLI's options and the package's mentions of the variables follow it."""

from __future__ import annotations

import re

import pytest

from trace_assets.cli.parser import build_parser
from trace_assets.defs.resources import HuggingFaceHub, TraceAssetsConfig, config_from_env, hub_from_env
from trace_assets.orchestration.options import export_options
from trace_assets.settings import (
    ConfigError,
    HubRepoSettings,
    PipelineSettings,
    ProcessSettings,
    declared,
    load,
    meta,
    with_table,
)
from trace_assets_tests.support.helpers import PROJECT_DIR

DOCS = PROJECT_DIR / "docs" / "configuration.md"
ROOTS = {"traces_root": "/data/traces", "publish_root": "/data/published"}


def test_the_docs_table_is_the_declarations():
    assert DOCS.read_text() == with_table(DOCS.read_text()), "run `python -m trace_assets.settings`"


def test_each_variable_is_named_once_in_the_package():
    """`grep -rn TRACE_ASSETS_ trace_assets/`: every variable's name only in its declaration (a
    family's wildcard, `TRACE_ASSETS_*` in prose, names none)."""
    package = PROJECT_DIR / "trace_assets"
    places: dict[str, list[str]] = {}
    for path in sorted(package.rglob("*.py")):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            for name in re.findall(r"TRACE_ASSETS_[A-Z0-9_]*[A-Z0-9](?![A-Z0-9_]*\*)", line):
                places.setdefault(name, []).append(f"{path.relative_to(package)}:{number}")
    names = {meta(field).env for _, _, field in declared()}
    assert len(names) == len(list(declared())), "a variable declared twice"
    assert {name: where for name, where in places.items() if len(where) != 1} == {}
    assert {where[0].split(":")[0] for where in places.values()} == {"settings.py"}
    assert set(places) == names


def test_the_resource_is_the_declared_settings():
    """Its fields are the settings', and the two resources it reaches storage and the Hub through."""
    assert list(TraceAssetsConfig.model_fields) == [*PipelineSettings.model_fields, "object_storage", "hub"]


def test_the_hub_resource_is_the_declared_hub_settings():
    """The Hub resource's repo fields are HubRepoSettings' own, read from their variables."""

    def described(fields):
        return {name: (field.default, field.description) for name, field in fields.items()}

    assert described(HuggingFaceHub.model_fields) == {
        **described(HubRepoSettings.model_fields),
        "token": (None, "Hub token (set from the HF_TOKEN environment variable)"),
        "endpoint": (None, "Hub URL; HF_ENDPOINT, else huggingface.co"),
    }
    hub = hub_from_env({"TRACE_ASSETS_HUB_ORG": "acme", "TRACE_ASSETS_HUB_PUBLIC": "1", "HF_ENDPOINT": "http://hub"})
    assert (hub.org, hub.public, hub.settings().private, hub.endpoint, hub.token) == (
        "acme",
        True,
        False,
        "http://hub",
        None,
    )


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        ("TRACE_ASSETS_SENSOR_INTERVAL_SECONDS", "1m", "='1m': must be a whole number above 0"),
        ("TRACE_ASSETS_SENSOR_INTERVAL_SECONDS", "-5", "='-5': must be a whole number above 0"),
        ("TRACE_ASSETS_BATCH_SIZE", "0", "TRACE_ASSETS_BATCH_SIZE='0': must be a whole number above 0"),
        ("TRACE_ASSETS_MIN_EXPORT_RATIO", "1.5", "TRACE_ASSETS_MIN_EXPORT_RATIO='1.5': must be a number from 0 to 1"),
        ("TRACE_ASSETS_SETTLE_SECONDS", "ten", "TRACE_ASSETS_SETTLE_SECONDS='ten': must be a number, 0 or more"),
        ("TRACE_ASSETS_RAW_SCAN", "maybe", "TRACE_ASSETS_RAW_SCAN='maybe': must be 1/true/yes/on or 0/false/no/off"),
        ("TRACE_ASSETS_HUB_PUBLIC", "sure", "TRACE_ASSETS_HUB_PUBLIC='sure': must be 1/true/yes/on or 0/false/no/off"),
        ("TRACE_ASSETS_ON_SECRET", "blokc", "TRACE_ASSETS_ON_SECRET='blokc': must be one of block, redact, allow"),
        ("TRACE_ASSETS_FILTER", "passed", "TRACE_ASSETS_FILTER='passed': must be one of all, success, failure"),
        ("TRACE_ASSETS_SCOPE", "steps", "TRACE_ASSETS_SCOPE='steps': must be one of step, run"),
        ("TRACE_ASSETS_SWEEP", "lr 3e-4", "TRACE_ASSETS_SWEEP='lr 3e-4': String should match pattern"),
        ("TRACE_ASSETS_SECRET_PATTERNS", "k=(", "TRACE_ASSETS_SECRET_PATTERNS='k=(': secret pattern 'k'"),
        ("TRACE_ASSETS_SECRET_ALLOWLIST", "abc", "TRACE_ASSETS_SECRET_ALLOWLIST='abc': allowlist entry 'abc'"),
    ],
)
def test_a_bad_value_is_refused_naming_the_variable_and_what_is_allowed(variable, value, message):
    with pytest.raises(ConfigError) as refused:
        config_from_env({variable: value}, **ROOTS)
        load(HubRepoSettings, {variable: value})
    assert message in str(refused.value)


def test_each_type_has_one_parser_and_empty_is_unset():
    env = {
        "TRACE_ASSETS_SUBAGENTS": "1",  # a true flag word means merged, as before the choice existed
        "TRACE_ASSETS_VERIFIER_METADATA": "off",
        "TRACE_ASSETS_BATCH_BYTES": "1024",
        "TRACE_ASSETS_MIN_EXPORT_RATIO": "0.5",
        "TRACE_ASSETS_ON_PRIVATE": "redact",
        "TRACE_ASSETS_CARD_MODEL": "",
        "TRACE_ASSETS_SCOPE": " run\n",  # a word as typed in a shell or an env file, spaces dropped
    }
    config = config_from_env(env, **ROOTS)
    assert (config.subagents, config.verifier_metadata, config.batch_bytes) == ("merged", False, 1024)
    assert config.scope_unit == "run"
    assert (config.min_export_ratio, config.on_private, config.card_model) == (0.5, "redact", "")
    assert load(ProcessSettings, {"TRACE_ASSETS_SENSOR_INTERVAL_SECONDS": "30"}).sensor_interval_seconds == 30
    assert load(HubRepoSettings, {"TRACE_ASSETS_HUB_PUBLIC": "yes"}).public


@pytest.mark.parametrize("root", ["traces_root", "publish_root"])
def test_a_root_has_no_default(root):
    others = {name: value for name, value in ROOTS.items() if name != root}
    with pytest.raises(
        ConfigError, match=rf"^TRACE_ASSETS_{root.upper()} \(nor --{root.replace('_', '-')}\) is not set"
    ):
        config_from_env({}, **others)


def test_the_declared_export_options_are_harbors_defaults():
    """Harbor's own export options (for callers without settings) are the declared ones."""
    from trace_assets.harbor.options import ExportOptions

    assert export_options(PipelineSettings(**ROOTS)) == ExportOptions()


def test_every_declared_option_is_on_the_commands_that_publish():
    parser = build_parser()
    for command in ("materialize", "backfill"):
        sub = parser._subparsers._group_actions[0].choices[command]  # type: ignore[union-attr]
        options = {option for action in sub._actions for option in action.option_strings}
        flags = {meta(field).flag for model, _, field in declared() if meta(field).flag and model is PipelineSettings}
        assert flags <= options, command
    help_text = re.sub(r"\s+", " ", parser._subparsers._group_actions[0].choices["materialize"].format_help())  # type: ignore[union-attr]
    assert (
        "--card-model ID provenance: the trained model's id, e.g. Qwen/Qwen3-30B-A3B (env TRACE_ASSETS_CARD_MODEL"
        in help_text
    )


def test_cli_options_override_the_environment():
    args = build_parser().parse_args(
        ["materialize", "r", "--traces-root", "/t", "--publish-root", "/p", "--subagents", "--no-verifier-metadata"]
    )
    given = vars(args)
    assert (given["traces_root"], given["subagents"], given["verifier_metadata"], given["sharegpt"]) == (
        "/t",
        "merged",
        False,
        None,
    )
