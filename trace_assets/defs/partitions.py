"""The partitions definition, and the one place a partition key becomes a `RunScope`."""

from __future__ import annotations

import dagster as dg

from trace_assets.scope import RunScope

TRACE_RUNS = "trace_runs"
trace_runs = dg.DynamicPartitionsDefinition(name=TRACE_RUNS)


def scope_of(context: dg.AssetExecutionContext | dg.AssetCheckExecutionContext) -> RunScope:
    """The scope a materialization or check is about."""
    return RunScope(context.partition_key)
