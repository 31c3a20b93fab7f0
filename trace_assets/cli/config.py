"""The configuration a command runs with: the declared environment variables (`settings.py`),
then the options the command takes; an option the command does not take, or one left unset,
keeps the environment's."""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING, Any

from trace_assets.settings import PipelineSettings, variable_text

if TYPE_CHECKING:
    from trace_assets.defs.resources import TraceAssetsConfig

ROOTS = ("traces_root", "publish_root")


def config_from_args(args: argparse.Namespace) -> TraceAssetsConfig:
    """Every setting is read and checked here, also those the command does not use: a bad one is
    refused at start, whichever command runs (as the code location refuses it). The roots the
    command takes an option for must be set."""
    from trace_assets.defs.resources import config_from_env

    given = vars(args)
    options: dict[str, Any] = {name: given[name] for name in PipelineSettings.model_fields if name in given}
    if options.get("scrub_literals"):  # added to the environment's: an operator value is never dropped
        listed = variable_text(PipelineSettings, "scrub_literals", os.environ)
        options["scrub_literals"] = ",".join(value for value in [listed, *options["scrub_literals"]] if value)
    require = tuple(root for root in ROOTS if root in given)
    return config_from_env(os.environ, require, **options)
