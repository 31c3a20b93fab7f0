"""What the CLI says on stderr: its own lines, and the steps' log lines, each named by its step
(`-v` for Dagster's full log and stack traces)."""

from __future__ import annotations

import logging
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import dagster as dg

PREFIX = "[trace-assets]"
# What Dagster logs (at info, not as an event) of a check that records no result: raw_tree_secrets
# while the raw-tree scan is off, whose own line says it skipped and why.
NO_RESULT = "did not yield or return expected outputs"


def say(message: str) -> None:
    print(f"{PREFIX} {message}", file=sys.stderr, flush=True)


def one_line_console(verbose: bool) -> dg.LoggerDefinition:
    """Each line of the steps' own messages, named by its step; Dagster's events and stack traces only with -v."""
    import dagster as dg

    console = dg.LoggerDefinition(_one_line_logger, config_schema={"verbose": dg.Field(bool, default_value=False)})
    return console if verbose else _quiet(console)


def _one_line_logger(init_context: dg.InitLoggerContext) -> logging.Logger:
    verbose = init_context.logger_config["verbose"]
    logger = logging.Logger("trace_assets.cli", level=logging.DEBUG if verbose else logging.INFO)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_OneLine(verbose))
    logger.addHandler(handler)
    return logger


class _OneLine(logging.Formatter):
    def __init__(self, verbose: bool):
        super().__init__("%(asctime)s - %(levelname)s - %(message)s")
        self.verbose = verbose

    def format(self, record: logging.LogRecord) -> str:
        if self.verbose:
            return super().format(record)
        meta = getattr(record, "dagster_meta", {}) or {}
        where = meta.get("step_key") or "run"
        # a step's quick lines come as one message (`HeldLines`): each is a line here, as it was logged
        lines = str(meta.get("orig_message", record.getMessage())).splitlines() or [""]
        return "\n".join(f"{PREFIX} {where}: {line}" for line in lines)


class _StepMessagesOnly(logging.Filter):
    """Without -v: the steps' own log lines, not Dagster's events (the CLI says how a run ended)
    nor its note on a skipped check's missing result."""

    def filter(self, record: logging.LogRecord) -> bool:
        meta = getattr(record, "dagster_meta", {}) or {}
        return meta.get("dagster_event") is None and NO_RESULT not in str(meta.get("orig_message", ""))


def _quiet(logger_def: dg.LoggerDefinition) -> dg.LoggerDefinition:
    import dagster as dg

    def make(init_context: dg.InitLoggerContext) -> logging.Logger:
        logger = logger_def.logger_fn(init_context)
        for handler in logger.handlers:
            handler.addFilter(_StepMessagesOnly())
        return logger

    return dg.LoggerDefinition(make, config_schema=logger_def.config_schema)
