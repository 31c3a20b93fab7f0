"""`trace-assets status`: the same table as the `sweep_coverage` asset, read from the instance: every
scope tried, its state and why (no staging needed; of one traces root's scopes when one is set)."""

from __future__ import annotations

import argparse
import os

from trace_assets.cli.instance import get_instance
from trace_assets.settings import PipelineSettings, variable_text


def run(args: argparse.Namespace) -> int:
    from trace_assets.defs.sweep import status_text

    traces_root = args.traces_root or variable_text(PipelineSettings, "traces_root", os.environ)
    print(status_text(get_instance(), traces_root), end="", flush=True)
    return 0
