"""`trace-assets status`: the same table as the `sweep_coverage` asset, read from the instance's
latest publishes (no staging, no traces root needed)."""

from __future__ import annotations

import argparse

from trace_assets.cli.instance import get_instance


def run(args: argparse.Namespace) -> int:
    from trace_assets.defs.sweep import published_records
    from trace_assets.sweep import text_table

    print(text_table(published_records(get_instance())), end="", flush=True)
    return 0
