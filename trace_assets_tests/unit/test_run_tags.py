"""The sweep tag's value: configured, or the traces root's last segment, always a valid label."""

from __future__ import annotations

import re

import pytest

from trace_assets.core.run_tags import SWEEP_LABEL, failure_line, sweep_label
from trace_assets.defs.resources import ConfigError, config_from_env


@pytest.mark.parametrize(
    ("root", "label"),
    [
        ("s3://bucket/sweeps/lr-3e4/", "lr-3e4"),
        ("s3://bucket", "bucket"),
        ("/data/My Sweep (2)!", "My-Sweep-2"),
        ("file:///data/sweep_7", "sweep_7"),
        ("/", "traces"),
        ("/data/.._", "traces"),
        ("s3://b/" + "x" * 100, "x" * 63),
        ("/data/" + "é" * 10 + "run", "run"),
    ],
)
def test_the_default_is_the_roots_last_segment_as_a_label(root, label):
    assert sweep_label(root) == label
    assert re.fullmatch(SWEEP_LABEL, label)


def test_a_configured_sweep_wins_and_is_checked(tmp_path):
    roots = {
        "traces_root": str(tmp_path / "t"),
        "publish_root": str(tmp_path / "p"),
        "staging_root": str(tmp_path / "s"),
    }
    assert config_from_env({"TRACE_ASSETS_SWEEP": "lr-3e4.run_2"}, **roots).sweep_name() == "lr-3e4.run_2"
    assert config_from_env({}, **roots).sweep_name() == "t"
    with pytest.raises(ConfigError, match="TRACE_ASSETS_SWEEP='lr 3e-4'"):
        config_from_env({"TRACE_ASSETS_SWEEP": "lr 3e-4"}, **roots)


@pytest.mark.parametrize(
    ("message", "line"),
    [
        ("dagster._core.definitions.events.Failure: blocked by check x: y\nStack trace", "blocked by check x: y"),
        ("ValueError: disk full", "disk full"),
        ("refusing to publish run 'r': 3 rows < 5", "refusing to publish run 'r': 3 rows < 5"),
        ("  \n", "failed"),
        (None, "failed"),
    ],
)
def test_a_failure_is_told_in_its_first_line_without_the_exception_class(message, line):
    assert failure_line(message) == line
