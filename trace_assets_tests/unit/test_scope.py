"""Run ids / partition keys, the roots, and the config are refused with a message saying why."""

from __future__ import annotations

import pytest

from trace_assets.core.accounting import Coverage
from trace_assets.core.roots import overlapping_roots
from trace_assets.core.scope import (
    InvalidScopeKey,
    RunScope,
    nesting_conflicts,
    partitions_named,
    refuse_nesting,
    validate_scope_key,
    validate_scope_keys,
)
from trace_assets.defs.resources import ConfigError, config_from_env
from trace_assets.publishing.shrink_guard import ShrinkRefused, refuse_worse_version


@pytest.mark.parametrize("key", ["rl-sample-run", "run_1.2", "sweep/step-25", "A/b/c"])
def test_good_keys_make_scopes(key):
    assert RunScope.from_key(key).key == key


@pytest.mark.parametrize(
    ("key", "why"),
    [
        ("", "empty"),
        ("..", "'..'"),
        ("../escape", "'..'"),
        ("a/./b", "'.'"),
        ("a//b", "empty"),
        ("a/", "empty"),
        ("/abs", "absolute"),
        ("a\\b", "segment 'a\\\\b'"),
        ("tab\there", "control"),
        (".hidden", "starting with a letter or digit"),
        ("-flag", "starting with a letter or digit"),
        ("has space", "no spaces"),
        ("x" * 300, "at most 200"),
    ],
)
def test_bad_keys_are_refused_with_the_reason(key, why):
    with pytest.raises(InvalidScopeKey, match="run id") as refused:
        RunScope(key)
    assert why in str(refused.value)


def test_every_bad_key_is_named_at_once():
    assert validate_scope_keys(["b", "a", "b"]) == ["b", "a"]
    with pytest.raises(InvalidScopeKey) as refused:
        validate_scope_keys(["good", "bad key", "../up"])
    assert "'bad key'" in str(refused.value) and "'../up'" in str(refused.value) and "good" not in str(refused.value)


def test_a_run_names_its_step_partitions():
    known = {"run-a", "run-ab", "run-b/step-1", "run-b/step-2", "run-bc/step-1"}
    assert partitions_named("run-a", known) == ["run-a"]  # not run-ab
    assert partitions_named("run-b", known) == ["run-b/step-1", "run-b/step-2"]  # not run-bc's
    assert partitions_named("run-b/step-2", known) == ["run-b/step-2"]
    assert partitions_named("run-z", known) == []


def test_a_key_inside_another_is_refused():
    assert nesting_conflicts(["x/y"], ["x"]) == [("x/y", "x")]
    assert nesting_conflicts(["x"], ["x/y", "xy"]) == [("x", "x/y")]
    assert nesting_conflicts(["x", "x/y"], []) == [("x", "x/y"), ("x/y", "x")]
    assert nesting_conflicts(["x-y", "x"], ["x"]) == []
    with pytest.raises(InvalidScopeKey, match="'x/y' nests with run id 'x'"):
        refuse_nesting(["x/y"], ["x"])


def test_roots_must_be_disjoint(tmp_path):
    (tmp_path / "link").symlink_to(tmp_path / "traces", target_is_directory=True)
    (tmp_path / "traces").mkdir()
    assert overlapping_roots({"t": str(tmp_path / "traces"), "p": str(tmp_path / "link")}) == [("t", "p")]
    assert overlapping_roots({"t": str(tmp_path / "traces"), "p": str(tmp_path / "traces/run/..")}) == [("t", "p")]
    assert overlapping_roots({"t": "s3://b/traces", "p": "s3a://b/traces/published/"}) == [("t", "p")]
    assert overlapping_roots({"t": "s3://b/traces", "p": "s3://b/traces-published"}) == []
    assert overlapping_roots({"t": "s3://b/traces", "p": str(tmp_path / "b/traces")}) == []
    assert overlapping_roots({"t": "s3://b/", "p": "s3://other/x"}) == []


@pytest.mark.parametrize(
    ("env", "message"),
    [
        (
            {"TRACE_ASSETS_MAX_ROWS_PER_SHARD": "0"},
            "TRACE_ASSETS_MAX_ROWS_PER_SHARD='0': must be a whole number above 0",
        ),
        ({"TRACE_ASSETS_BATCH_SIZE": "ten"}, "TRACE_ASSETS_BATCH_SIZE='ten': must be a whole number"),
        ({"TRACE_ASSETS_MIN_EXPORT_RATIO": "1.5"}, "TRACE_ASSETS_MIN_EXPORT_RATIO='1.5': must be a number from 0 to 1"),
        ({"TRACE_ASSETS_SUBAGENTS": "maybe"}, "TRACE_ASSETS_SUBAGENTS='maybe': must be one of none, merged, separate"),
        ({"TRACE_ASSETS_ON_SECRET": "blokc"}, "TRACE_ASSETS_ON_SECRET='blokc': must be one of block, redact, allow"),
        (  # a staging URL is fine, but not inside the traces root
            {"TRACE_ASSETS_TRACES_ROOT": "s3://b/traces", "TRACE_ASSETS_STAGING_ROOT": "s3://b/traces/staging"},
            "overlaps staging_root='s3://b/traces/staging'",
        ),
        ({"TRACE_ASSETS_PUBLISH_ROOT": "{traces}/published"}, "publish_root"),
        ({"TRACE_ASSETS_PUBLISH_ROOT": "{traces}"}, "is the same folder as publish_root"),
    ],
)
def test_config_errors_name_the_option_the_value_and_what_is_allowed(tmp_path, env, message):
    traces = str(tmp_path / "traces")
    base = {"TRACE_ASSETS_TRACES_ROOT": traces, "TRACE_ASSETS_PUBLISH_ROOT": str(tmp_path / "out")}
    base["DAGSTER_HOME"] = str(tmp_path / "home")
    with pytest.raises(ConfigError) as refused:
        config_from_env({**base, **{k: v.format(traces=traces) for k, v in env.items()}})
    assert message in str(refused.value)


def test_shrink_guard_refuses_empty_and_shrunk_versions():
    good = {"trial_dirs": 1000, "rows": 900}
    refuse_worse_version("r", Coverage("r", trial_dirs=950, rows=850), good, 0.1, "there", "pass --allow-shrink")
    refuse_worse_version("r", Coverage("r", trial_dirs=5, rows=5), None, 0.1, "there", "pass --allow-shrink")
    with pytest.raises(ShrinkRefused, match="0 rows .*published version at there: 1000 trial folders, 900 rows"):
        refuse_worse_version("r", Coverage("r", trial_dirs=0, rows=0), good, 0.1, "there", "pass --allow-shrink")
    with pytest.raises(ShrinkRefused, match="12 trial folders, 10 rows, but .* 1000 trial folders, 900 rows"):
        refuse_worse_version("r", Coverage("r", trial_dirs=12, rows=10), good, 0.1, "there", "pass --allow-shrink")
    with pytest.raises(ShrinkRefused, match="rows down 22%"):
        refuse_worse_version("r", Coverage("r", trial_dirs=1000, rows=700), good, 0.1, "there", "pass --allow-shrink")


def test_no_run_is_named_like_a_file_of_the_publish_root():
    from trace_assets.core.scope import PUBLISH_ROOT_FILES
    from trace_assets.publishing.dataset_folder import CARD_FILE
    from trace_assets.publishing.root_card import INDEX, ROOT_PLOT
    from trace_assets.sweep.view import SWEEP_FILE, SWEEP_PLOT

    assert {CARD_FILE, INDEX, ROOT_PLOT, SWEEP_FILE, SWEEP_PLOT} <= PUBLISH_ROOT_FILES
    for name in PUBLISH_ROOT_FILES:
        with pytest.raises(InvalidScopeKey, match="a file the publish root holds"):
            validate_scope_key(name)
        with pytest.raises(InvalidScopeKey, match="a file the publish root holds"):
            validate_scope_key(f"{name}/step-1")
