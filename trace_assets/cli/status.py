"""`trace-assets status`: the same table as the `sweep_coverage` asset, read from the instance: every
scope tried, its state and why (no staging needed; of one traces root's scopes when one is set)."""

from __future__ import annotations

import argparse
import gc
import os
from typing import TYPE_CHECKING

from trace_assets.cli.instance import get_instance
from trace_assets.settings import PipelineSettings, variable_text

if TYPE_CHECKING:
    from trace_assets.store.trace_store import TraceStore


def run(args: argparse.Namespace) -> int:
    # One read of the instance, then the process ends: no collection of reference cycles while it
    # reads (importing Dagster and opening the instance make some 200,000 objects, which each full
    # collection walked again), and what is alive at the end is frozen, which the interpreter's
    # shutdown collections then leave alone (they took longer than the read; docs/benchmarks.md).
    gc.disable()
    try:
        from trace_assets.defs.sweep import status_text

        traces_root = args.traces_root or variable_text(PipelineSettings, "traces_root", os.environ)
        text = status_text(get_instance(), traces_root, _store(traces_root) if traces_root else None)
    finally:
        gc.freeze()
        gc.enable()
    print(text, end="", flush=True)
    return 0


def _store(traces_root: str) -> TraceStore:
    """The traces root's store, to tell which scopes' traces are gone (a listing of it, one a run),
    with the object storage a CLI command reads through, without loading the pipeline."""
    from trace_assets.defs.s3_config import ObjectStorage
    from trace_assets.store.s3_options import storage_options
    from trace_assets.store.trace_store import TraceStore

    return TraceStore(traces_root, storage_options(ObjectStorage(), traces_root))
