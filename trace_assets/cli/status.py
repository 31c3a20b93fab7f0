"""`trace-assets status`: the same table as the `sweep_coverage` asset, read from the instance: every
scope tried, its state and why (no staging, no traces root needed)."""

from __future__ import annotations

import argparse

from trace_assets.cli.instance import get_instance


def run(args: argparse.Namespace) -> int:
    from trace_assets.defs.sweep import status_text

    print(status_text(get_instance()), end="", flush=True)
    return 0
