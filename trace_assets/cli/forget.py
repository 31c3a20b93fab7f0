"""`trace-assets forget`: remove the partitions and staging folders of runs gone from the traces
root; their published datasets stay. A run still under the traces root is refused (the sensor would
list it again)."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING

from trace_assets.cli.config import config_from_args
from trace_assets.cli.console import say
from trace_assets.cli.instance import get_instance
from trace_assets.cli.scopes import run_exists
from trace_assets.core.scope import RunScope, partitions_named, validate_scope_keys

if TYPE_CHECKING:
    from trace_assets.defs.resources import TraceAssetsConfig


def run(args: argparse.Namespace) -> int:
    trace_config = config_from_args(args)
    return forget_runs(validate_scope_keys(args.run_ids), trace_config)


def forget_runs(run_ids: list[str], trace_config: TraceAssetsConfig) -> int:
    from trace_assets.defs.partitions import TRACE_RUNS

    instance = get_instance()
    known = set(instance.get_dynamic_partitions(TRACE_RUNS))
    # a run: its step partitions; a key no partition names: its staging folder alone
    run_ids = [scope for key in run_ids for scope in (partitions_named(key, known) or [key])]
    failures = 0
    for run_id in run_ids:
        scope = RunScope.from_key(run_id)
        if run_exists(trace_config, scope):
            failures += 1
            reason = (
                f"run {run_id!r} still exists under {trace_config.traces_root}; forget only removes runs that are gone"
            )
            say(reason)
            print(json.dumps({"run_id": run_id, "status": "kept", "reason": reason}), flush=True)
            continue
        staging = trace_config.parts().staging(scope)
        with staging.locked(say, holder=f"trace-assets forget {run_id}"):
            staging.remove()
            if run_id in known:
                instance.delete_dynamic_partition(TRACE_RUNS, run_id)
        staging.lock_file.unlink(missing_ok=True)
        say(f"forgot {run_id}" + ("" if run_id in known else " (it was not a partition)"))
        print(json.dumps({"run_id": run_id, "status": "forgotten"}), flush=True)
    return 1 if failures else 0
