"""The partitions definition, and the one place a partition key is turned into a scope."""

from __future__ import annotations

from collections.abc import Iterable

import dagster as dg

from trace_assets.core.scope import RunScope, refuse_nesting, validate_scope_key

TRACE_RUNS = "trace_runs"
trace_runs = dg.DynamicPartitionsDefinition(name=TRACE_RUNS)


# (run id, key) of the runs whose key this process found nesting with none: a run's later steps
# and checks (eight a run) need not read every partition again (docs/benchmarks.md).
_NESTING_CHECKED: set[tuple[str, str]] = set()


def scope_of(context: dg.AssetExecutionContext | dg.AssetCheckExecutionContext) -> RunScope:
    """The scope a materialization or check is about; a key added past the checks (the UI's
    "add partition") is refused here, by its run's first step, before any file is written."""
    scope = RunScope.from_key(context.partition_key)
    checked = (context.run.run_id, scope.key)
    if checked not in _NESTING_CHECKED:
        refuse_nesting([scope.key], context.instance.get_dynamic_partitions(TRACE_RUNS))
        _NESTING_CHECKED.add(checked)
    return scope


def register_scopes(instance: dg.DagsterInstance, keys: Iterable[str]) -> list[str]:
    """Add the keys not yet registered, all validated first (shape, and no nesting with any
    registered key): nothing is registered unless every key is good. Returns the added keys."""
    keys = [validate_scope_key(key) for key in dict.fromkeys(keys)]
    known = instance.get_dynamic_partitions(TRACE_RUNS)
    refuse_nesting(keys, known)
    missing = [key for key in keys if key not in set(known)]
    if missing:
        instance.add_dynamic_partitions(TRACE_RUNS, missing)
    return missing
