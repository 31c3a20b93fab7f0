"""The code location `dagster dev` and the CLI load: assets, checks, jobs, sensors, resources."""

from __future__ import annotations

import os

import dagster as dg

from trace_assets.defs.assets import published_shards_asset
from trace_assets.defs.checks import (
    coverage_accounts_for_every_folder,
    export_ratio_above_threshold,
    no_live_secrets,
    raw_tree_secrets,
)
from trace_assets.defs.jobs import EXPORT_ASSETS, RUN_EXECUTOR, export_trace_run
from trace_assets.defs.partitions import trace_runs
from trace_assets.defs.recheck import recheck_scopes
from trace_assets.defs.resources import TraceAssetsConfig, config_from_env, resources_of
from trace_assets.defs.sensors import new_trace_runs_sensor
from trace_assets.defs.sweep_coverage import refresh_sweep_coverage, sweep_coverage, sweep_coverage_after_export
from trace_assets.settings import ConfigError, ProcessSettings, load

CHECKS = [coverage_accounts_for_every_folder, export_ratio_above_threshold, no_live_secrets]
__all__ = ["build_definitions", "defs", "export_trace_run", "trace_runs"]


def build_definitions(
    trace_config: TraceAssetsConfig,
    loggers: dict[str, dg.LoggerDefinition] | None = None,
    process: ProcessSettings | None = None,
) -> dg.Definitions:
    """The code location; `loggers` lets the CLI print one line per message instead of Dagster's.
    Publishing takes the `hub_commits` pool only when the configured target is the Hub.

    `raw_tree_secrets` is defined only when the raw-tree scan is on (`trace_config.raw_scan`, read
    when the code location loads, or the CLI's flag): a check in a run's plan that records nothing
    is "Execution failed" once the run fails, whatever the reason (dagster#28461), so when off it is
    in no run's plan rather than "Skipped" in the runs that publish and failed in the others."""
    publish = published_shards_asset(trace_config.parts().publishes_to_hub())
    return dg.Definitions(
        assets=[*EXPORT_ASSETS, publish, sweep_coverage],
        asset_checks=[*CHECKS, raw_tree_secrets] if trace_config.raw_scan else CHECKS,
        jobs=[export_trace_run, refresh_sweep_coverage, recheck_scopes],
        sensors=[
            new_trace_runs_sensor((process or ProcessSettings()).sensor_interval_seconds),
            sweep_coverage_after_export,
        ],
        resources=resources_of(trace_config),
        loggers=loggers,
        executor=RUN_EXECUTOR,
    )


@dg.definitions
def defs() -> dg.Definitions:
    """The code location, from the environment. A refused setting is its load error, which `dagster dev`
    logs and the UI shows on the code location: `ConfigError:` and the line naming the variable, the
    value and what is allowed (`settings.py`). Not SystemExit: that ended the code server, so the UI
    never came up and the reason was lost above "gRPC server exited" tracebacks. An unset root is no
    load error: it is read when a run or a sensor tick starts (see `config_from_env`)."""
    try:
        return build_definitions(config_from_env(require=()), process=load(ProcessSettings, os.environ))
    except ConfigError as error:
        # raised again here, so that the stack Dagster shows under the reason is this line, not the loader's
        raise ConfigError(str(error)) from None
