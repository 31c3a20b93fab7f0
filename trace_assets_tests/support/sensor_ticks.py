"""One tick of the new-runs sensor on a real instance, as the daemon would run it: its resources,
and the partitions it asks for added before the next tick."""

from __future__ import annotations

import dagster as dg


def sensor_tick(defs: dg.Definitions, instance: dg.DagsterInstance, cursor: str | None) -> dg.SensorResult:
    sensor = defs.resolve_sensor_def("new_trace_runs_sensor")
    resources = {name: defs.resources[name] for name in ("trace_config", "object_storage", "hub")}  # type: ignore[index]
    # a context manager: trace_config's object_storage and hub are set up from their own keys
    with dg.build_sensor_context(instance=instance, cursor=cursor, resources=resources) as context:
        result = sensor(context)
    for request in result.dynamic_partitions_requests or []:
        instance.add_dynamic_partitions(request.partitions_def_name, list(request.partition_keys))
    return result


def evaluated_tick(defs: dg.Definitions, instance: dg.DagsterInstance, cursor: str | None) -> dg.SensorExecutionData:
    """The tick as the daemon evaluates it (its skip message, run requests and cursor): run requests
    checked against the partitions the same tick adds (`instance_ref`), which are added after it."""
    sensor = defs.resolve_sensor_def("new_trace_runs_sensor")
    with dg.build_sensor_context(
        instance=instance,
        instance_ref=instance.get_ref(),
        cursor=cursor,
        definitions=defs,
        resources=defs.resources,
    ) as context:  # as the daemon does: trace_config's object_storage and hub are set up from their keys
        result = sensor.evaluate_tick(context)
    for request in result.dynamic_partitions_requests or []:
        instance.add_dynamic_partitions(request.partitions_def_name, list(request.partition_keys))
    return result
