"""`trace-assets`, the console script: one module a command, `parser.py` for the command line.

Dagster and the resources take seconds to import, so the modules import them only inside the
functions that run: `--help` and argument errors answer at once (`unit/test_layers.py` keeps that
path light). Every command runs on the UI's instance (`DAGSTER_HOME`, see `instance.py`).
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from collections.abc import Callable

from trace_assets.cli import backfill, forget, materialize, recheck, runs, status
from trace_assets.cli.parser import Command, build_parser
from trace_assets.runtime.machine_faults import INSTANCE, fault_line
from trace_assets.settings import dagster_home

COMMANDS: dict[Command, Callable[[argparse.Namespace], int]] = {
    Command.RUNS: runs.run,
    Command.MATERIALIZE: materialize.run,
    Command.BACKFILL: backfill.run,
    Command.STATUS: status.run,
    Command.FORGET: forget.run,
    Command.RECHECK: recheck.run,
}


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return COMMANDS[Command(args.command)](args)
    except Exception as error:  # one line for the operator; -v for the trace
        if args.verbose:
            traceback.print_exc()
        # a fault of the machine (the instance's database full or locked) in words, not SQL
        fault = fault_line(error, {INSTANCE: dagster_home(os.environ)}, "")
        print(f"trace-assets: {fault or error}", file=sys.stderr)
        return 2
