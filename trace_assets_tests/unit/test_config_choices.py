"""A mistyped or impossible setting is refused by the configuration itself, naming what is allowed
(the run config and the CLI refuse it too: dagster/test_config_choices.py)."""

from __future__ import annotations

import pydantic
import pytest

from trace_assets.defs.resources import ConfigError, TraceAssetsConfig, config_from_env

TYPO = "blokc"


def test_resource_refuses_an_unknown_on_secret(tmp_path):
    with pytest.raises(pydantic.ValidationError, match="'block', 'redact' or 'allow'"):
        TraceAssetsConfig(traces_root="t", publish_root="p", staging_root=str(tmp_path), on_secret=TYPO)


def test_environment_refuses_an_unknown_on_secret():
    with pytest.raises(ConfigError, match=f"TRACE_ASSETS_ON_SECRET='{TYPO}': must be one of block, redact, allow"):
        config_from_env({"TRACE_ASSETS_ON_SECRET": TYPO}, ())


def test_the_queue_is_refused_for_a_local_root(tmp_path):
    with pytest.raises(ConfigError, match="s3:// traces root"):
        config_from_env({"TRACE_ASSETS_EVENT_QUEUE_URL": "http://127.0.0.1:1/1/q"}, traces_root=str(tmp_path / "t"))
