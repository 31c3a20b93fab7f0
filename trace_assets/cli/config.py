"""The configuration a command runs with: the environment's (`TRACE_ASSETS_*`), then the options
the command takes; an option the command does not take, or one left unset, keeps the environment's."""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING

from trace_assets.harbor.options import export_overrides

if TYPE_CHECKING:
    from trace_assets.defs.resources import TraceAssetsConfig

# option dest -> TraceAssetsConfig field, for the options beside Harbor's export flags
OPTION_FIELDS = {
    "traces_root": "traces_root",
    "publish_root": "publish_root",
    "scope": "scope_unit",
    "on_secret": "on_secret",
    "on_unverified": "on_unverified",
    "on_private": "on_private",
    "raw_scan": "raw_scan",
    "allow_shrink": "allow_shrink",
    "card_framework": "card_framework",
    "card_task_source": "card_task_source",
    "card_model": "card_model",
    "card_license": "card_license",
    "card_pretty_name": "card_pretty_name",
}


def config_from_args(args: argparse.Namespace) -> TraceAssetsConfig:
    """Every setting is read and checked here, also those the command does not use: a bad one is
    refused at start, whichever command runs (as `dagster dev` refuses it)."""
    from trace_assets.defs.resources import config_from_env

    given = vars(args)
    overrides = {field: given.get(dest) for dest, field in OPTION_FIELDS.items()}
    if "episodes" in given:  # a command with Harbor's export flags
        overrides.update(export_overrides(args))
    if given.get("scrub_literal"):  # added to the environment's: an operator value is never dropped
        listed = os.environ.get("TRACE_ASSETS_SCRUB_LITERALS", "")
        overrides["scrub_literals"] = ",".join(value for value in [listed, *given["scrub_literal"]] if value)
    return config_from_env(os.environ, **overrides)
